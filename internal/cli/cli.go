package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// ErrUsage marks errors in how a command was called (exit status 2).
var ErrUsage = errors.New("usage")

// errHelp is returned after help was printed on request (exit status 0).
var errHelp = errors.New("help printed")

// ExitCode maps an error from Run to a process exit status.
func ExitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.Is(err, ErrUsage):
		return 2
	}
	return 1
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"server", "run a whole cluster in one process (metadata, node, director)", runServer},
		{"meta", "run a metadata (etcd) member", runMeta},
		{"node", "run a storage node", runNode},
		{"gateway", "serve the S3 API for a cluster", runGateway},
		{"mb", "make a bucket", runMb},
		{"put", "store a file as an object", runPut},
		{"get", "read an object into a file", runGet},
		{"ls", "list buckets or objects", runLs},
		{"rm", "delete an object", runRm},
		{"stat", "show an object's manifest", runStat},
		{"admin", "cluster status and operations", runAdmin},
		{"bench", "measure cairn: codec throughput, put/get against a cluster", runBench},
		{"version", "print the version", func(_ context.Context, _ []string, stdout, _ io.Writer) error {
			fmt.Fprintln(stdout, "cairn", Version)
			return nil
		}},
	}
}

// Version is the program version, set at build time with
// -ldflags "-X cairn/internal/cli.Version=...".
var Version = "dev"

// Run runs the cairn command line with args (without the program name).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := dispatch(ctx, "cairn", "cairn is an S3-compatible, erasure-coded object store.", commands(), args, stdout, stderr)
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}

func dispatch(ctx context.Context, prog, about string, cmds []command, args []string, stdout, stderr io.Writer) error {
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "%s\n\nUsage: %s COMMAND [flags]\n\nCommands:\n", about, prog)
		for _, c := range cmds {
			fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
		}
		fmt.Fprintf(w, "\nRun '%s COMMAND --help' for a command's flags.\n", prog)
	}
	if len(args) == 0 {
		usage(stderr)
		return fmt.Errorf("%w: %s needs a command", ErrUsage, prog)
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			return dispatch(ctx, prog, about, cmds, append(args[1:2], "--help"), stdout, stderr)
		}
		usage(stdout)
		return errHelp
	}
	for _, c := range cmds {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	usage(stderr)
	return fmt.Errorf("%w: unknown command %q for %s", ErrUsage, args[0], prog)
}

// parseFlags parses args with fs, printing help to stdout on -h. Flags may
// come before, between or after positional arguments ("--" ends flags).
// Positional arguments are not allowed unless allowArgs.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer, allowArgs bool) error {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return errHelp
		}
		if err != nil {
			fs.SetOutput(stderr)
			fs.Usage()
			return fmt.Errorf("%w: %v", ErrUsage, err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			pos = append(pos, rest...) // everything after "--" is positional
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if !allowArgs && len(pos) > 0 {
		return fmt.Errorf("%w: unexpected argument %q (see --help)", ErrUsage, strings.Join(pos, " "))
	}
	// Make fs.Args() return every positional argument.
	_ = fs.Parse(append([]string{"--"}, pos...))
	return nil
}
