package benchcli

import (
	"context"
	"errors"
	"io"

	"cairn/internal/cmdline"
)

func commands() []cmdline.Command {
	return []cmdline.Command{
		{Name: "push", Summary: "the PUSH paper's repair experiment: PULL/PUSH-Rep/Sur on shaped links", Run: runPush},
		{Name: "grid", Summary: "the Grid RS storage paper's experiment: coding vs transfer, striping vs replication on wide-area links", Run: runGrid},
		{Name: "robustore", Summary: "the RobuSTore paper's experiment: speculative access on 64 heterogeneous disks", Run: runRobustore},
		{Name: "gp", Summary: "the Geometric Partitioning paper's experiment, as a time model: recovery vs degraded reads", Run: runGP},
		{Name: "raidp", Summary: "the RAIDP paper's experiment: writes vs rep-2/rep-3, dual-failure critical exit vs RS, matching vs naive re-mirroring", Run: runRaidp},
	}
}

const about = `cairn-bench runs the papers' experiments on real processes and plots them.
It is also reachable as 'cairn bench push|robustore|grid|gp|raidp' when it sits next to
the cairn binary or on PATH (go build -o cairn-bench ./cmd/cairn-bench), or
directly: go run ./cmd/cairn-bench push --quick.

Every other command (node, meta, server, ...) is cairn's: the experiments
start their storage nodes as 'cairn-bench node ...'.`

// Handles reports whether args name one of cairn-bench's own commands (or
// ask for its help); cmd/cairn-bench passes any other to cairn's.
func Handles(args []string) bool {
	if len(args) == 0 {
		return true
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		return len(args) == 1 || Handles(args[1:2])
	}
	for _, c := range commands() {
		if c.Name == args[0] {
			return true
		}
	}
	return false
}

// Run runs a cairn-bench command with args (without the program name).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := cmdline.Dispatch(ctx, "cairn-bench", about, commands(), args, stdout, stderr)
	if errors.Is(err, cmdline.ErrHelp) {
		return nil
	}
	return err
}
