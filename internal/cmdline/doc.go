// Package cmdline is what cairn's command-line programs (cmd/cairn through
// internal/cli, cmd/cairn-bench through internal/benchcli) share: a
// Command is a name, a one-line summary and a function from (ctx, args,
// stdout, stderr) to an error; Dispatch picks one by the first argument;
// ParseFlags lets flags come before, between or after positional
// arguments.
//
// Errors: a usage error (a bad flag or argument) wraps ErrUsage and exits
// with status 2; help printed on request returns ErrHelp and exits with 0;
// anything else exits with 1 (ExitCode).
//
// Usage:
//
//	err := cmdline.Dispatch(ctx, "cairn bench", "Measure cairn.", []cmdline.Command{
//		{"codec", "codec throughput", runCodec},
//	}, args, stdout, stderr)
//	os.Exit(cmdline.ExitCode(err))
package cmdline
