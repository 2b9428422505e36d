// Package cli holds cairn's subcommands: argument parsing, help texts and
// wiring. Run is the whole program minus process setup, so tests drive
// commands end to end without a subprocess.
//
// A command is a cmdline.Command: a name, a one-line summary, and a
// function from (ctx, args, stdout, stderr) to an error. Nested groups
// ("bench codec") are commands whose function dispatches again. Usage
// errors wrap ErrUsage and exit with status 2; other failures exit with 1
// (cmdline.ExitCode).
//
// Configs: a client config (ClientConfig, client.conf) holds the metadata
// endpoints and the cluster secret. A role config (cairn init writes one
// per process) is a JSON object of a command's flags by name, applied to
// the flags the command line did not set (applyRoleConfig); a node's and a
// gateway's also hold the client config's "meta" and "secret"
// (docs/running-a-cluster.md). Every process that reaches the metadata
// compares its secret with the check value stored there (checkSecret,
// ErrWrongSecret).
package cli
