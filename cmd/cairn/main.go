// Command cairn is the erasure-coded object store: see `cairn help`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"cairn/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cairn:", err)
		os.Exit(cli.ExitCode(err))
	}
}
