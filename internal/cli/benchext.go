package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"cairn/internal/cmdline"
)

// benchProgram runs the papers' experiments with their plots
// (cmd/cairn-bench): cairn does not link them or the plotting library.
const benchProgram = "cairn-bench"

const benchAbout = `Measure cairn on this machine. codec, put and get run here; push,
robustore, grid, gp and raidp, the papers' experiments with their plots, are the
separate program cairn-bench, which 'cairn bench NAME' runs with the same
arguments when it sits next to the cairn binary or on PATH:

  go build -o cairn-bench ./cmd/cairn-bench   # next to cairn
  go run ./cmd/cairn-bench push --quick       # or without building it`

// runBenchExternal returns the command `cairn bench name`, which runs
// `cairn-bench name args...` (findBench) and passes its output on.
func runBenchExternal(name string) func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		bin, err := findBench()
		if err != nil {
			why := fmt.Sprintf("cairn bench %s runs %s, which is neither next to this cairn binary nor on PATH. Build it with\n"+
				"  go build -o cairn-bench ./cmd/cairn-bench\n"+
				"(next to cairn, or anywhere on PATH), or run the experiment without building it:\n"+
				"  go run ./cmd/cairn-bench %s --quick", name, benchProgram, name)
			if slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" }) {
				fmt.Fprintln(stdout, why)
				return cmdline.ErrHelp
			}
			return errors.New(why)
		}
		cmd := exec.CommandContext(ctx, bin, append([]string{name}, args...)...)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		// On cancellation cairn-bench gets an interrupt, stops its node
		// processes and exits; it is killed if that takes too long.
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = 30 * time.Second
		err = cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == cmdline.ExitCode(ErrUsage) {
			return fmt.Errorf("%w: %s %s: %v", ErrUsage, bin, name, err)
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", bin, name, err)
		}
		return nil
	}
}

// findBench returns the path of cairn-bench next to this program's
// executable, or else on PATH.
func findBench() (string, error) {
	if self, err := os.Executable(); err == nil {
		if p, err := exec.LookPath(filepath.Join(filepath.Dir(self), benchProgram)); err == nil {
			return p, nil
		}
	}
	return exec.LookPath(benchProgram)
}
