package cmdline

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

var (
	// ErrUsage marks errors in how a command was called (exit status 2).
	ErrUsage = errors.New("usage")
	// ErrHelp is returned after help was printed on request (exit status 0).
	ErrHelp = errors.New("help printed")
)

// ExitCode maps an error from a command to a process exit status.
func ExitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, ErrHelp):
		return 0
	case errors.Is(err, ErrUsage):
		return 2
	}
	return 1
}

// Command is one subcommand: Run gets the arguments after its name.
type Command struct {
	Name    string
	Summary string
	Run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// Dispatch runs the command of cmds named by args[0], or prints the usage
// of prog (about, then the commands' summaries): to stdout for "help" or
// --help (returning ErrHelp), to stderr with a usage error for a missing or
// unknown command. "help CMD" runs CMD --help.
func Dispatch(ctx context.Context, prog, about string, cmds []Command, args []string, stdout, stderr io.Writer) error {
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "%s\n\nUsage: %s COMMAND [flags]\n\nCommands:\n", about, prog)
		for _, c := range cmds {
			fmt.Fprintf(w, "  %-10s %s\n", c.Name, c.Summary)
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
			return Dispatch(ctx, prog, about, cmds, append(args[1:2], "--help"), stdout, stderr)
		}
		usage(stdout)
		return ErrHelp
	}
	for _, c := range cmds {
		if c.Name == args[0] {
			return c.Run(ctx, args[1:], stdout, stderr)
		}
	}
	usage(stderr)
	return fmt.Errorf("%w: unknown command %q for %s", ErrUsage, args[0], prog)
}

// ParseFlags parses args with fs, printing help to stdout on -h (and
// returning ErrHelp). Flags may come before, between or after positional
// arguments ("--" ends flags). Positional arguments are not allowed unless
// allowArgs; fs.Args() returns them all afterwards.
func ParseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer, allowArgs bool) error {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return ErrHelp
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

// Usage sets fs's help to "Usage: LINE", a blank line, text, and the flags.
func Usage(fs *flag.FlagSet, line, text string) {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\n%s\n\nFlags:\n", line, text)
		fs.PrintDefaults()
	}
}
