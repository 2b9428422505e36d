// Package cli holds cairn's subcommands: argument parsing, help texts and
// wiring. Run is the whole program minus process setup, so tests drive
// commands end to end without a subprocess.
//
// A command is a cmdline.Command: a name, a one-line summary, and a
// function from (ctx, args, stdout, stderr) to an error. Nested groups
// ("bench codec") are commands whose function dispatches again. Usage
// errors wrap ErrUsage and exit with status 2; other failures exit with 1
// (cmdline.ExitCode).
package cli
