package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"cairn/internal/cmdline"
)

// ErrUsage marks errors in how a command was called (exit status 2): it is
// cmdline.ErrUsage.
var ErrUsage = cmdline.ErrUsage

func commands() []cmdline.Command {
	return []cmdline.Command{
		{Name: "server", Summary: "run a whole cluster in one process (metadata, node, director)", Run: runServer},
		{Name: "init", Summary: "lay out a new multi-host cluster: its secret, configs, and the commands that start it", Run: runInit},
		{Name: "meta", Summary: "run a metadata (etcd) member", Run: runMeta},
		{Name: "node", Summary: "run a storage node", Run: runNode},
		{Name: "gateway", Summary: "serve the S3 API for a cluster", Run: runGateway},
		{Name: "mb", Summary: "make a bucket", Run: runMb},
		{Name: "put", Summary: "store a file as an object", Run: runPut},
		{Name: "get", Summary: "read an object into a file", Run: runGet},
		{Name: "ls", Summary: "list buckets or objects", Run: runLs},
		{Name: "rm", Summary: "delete an object", Run: runRm},
		{Name: "stat", Summary: "show an object's manifest", Run: runStat},
		{Name: "admin", Summary: "cluster status and operations", Run: runAdmin},
		{Name: "bench", Summary: "measure cairn: codec throughput, put/get against a cluster", Run: runBench},
		{Name: "version", Summary: "print the version", Run: func(_ context.Context, _ []string, stdout, _ io.Writer) error {
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
	err := cmdline.Dispatch(ctx, "cairn", "cairn is an S3-compatible, erasure-coded object store.", commands(), args, stdout, stderr)
	if errors.Is(err, cmdline.ErrHelp) {
		return nil
	}
	return err
}
