// Command cairn is the erasure-coded object store: see `cairn help`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"cairn/internal/cli"
	"cairn/internal/cmdline"
)

func main() {
	if path := os.Getenv("CAIRN_CPUPROFILE"); path != "" { // for profiling: CAIRN_CPUPROFILE=FILE cairn ...
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cairn:", err)
		pprof.StopCPUProfile()
		os.Exit(cmdline.ExitCode(err))
	}
}
