// Command cairn-bench runs the papers' experiments (see `cairn-bench help`)
// and, for the node processes they start, every command of cairn.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"cairn/internal/benchcli"
	"cairn/internal/cli"
	"cairn/internal/cmdline"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	run := cli.Run
	if benchcli.Handles(os.Args[1:]) {
		run = benchcli.Run
	}
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cairn-bench:", err)
		os.Exit(cmdline.ExitCode(err))
	}
}
