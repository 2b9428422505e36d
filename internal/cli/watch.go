package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"cairn/internal/progress"
)

// watchFlags are --watch, --interval and --count of a status command.
type watchFlags struct {
	cmd      string // "cairn admin repair status": the header of a frame
	watch    *bool
	interval *time.Duration
	count    *int
}

// addWatchFlags registers --watch, --interval and --count on fs for the
// command cmd.
func addWatchFlags(fs *flag.FlagSet, cmd string) *watchFlags {
	return &watchFlags{
		cmd:      cmd,
		watch:    fs.Bool("watch", false, "show the status again every --interval until interrupted (Ctrl-C): redrawn in place on a terminal, appended (each under a time line) elsewhere"),
		interval: fs.Duration("interval", 2*time.Second, "with --watch, how often to refresh"),
		count:    fs.Int("count", 0, "with --watch, stop after this many refreshes (default: until interrupted)"),
	}
}

// validate refuses an interval or count that cannot be met.
func (f *watchFlags) validate() error {
	switch {
	case *f.interval <= 0:
		return fmt.Errorf("%w: --interval must be positive", ErrUsage)
	case *f.count < 0:
		return fmt.Errorf("%w: --count must not be negative", ErrUsage)
	case !*f.watch && *f.count > 0:
		return fmt.Errorf("%w: --count needs --watch", ErrUsage)
	}
	return nil
}

// clearScreen moves a terminal's cursor home and erases the screen.
const clearScreen = "\033[H\033[2J"

// run writes what show writes to w: once, or with --watch every
// interval until ctx ends (a clean stop: nil) or --count frames are
// shown. show writes each frame to a buffer, so a frame goes out whole.
// On a terminal a frame replaces the last under a header line; elsewhere
// frames are appended, each under a line with its time, except JSON
// (asJSON), whose documents follow one another as a stream. An error of
// the first frame ends the watch; a later one is shown in its frame (with
// JSON as {"error": ...}), and the watch goes on (a metadata member may
// come back).
func (f *watchFlags) run(ctx context.Context, w io.Writer, asJSON bool, show func(context.Context, io.Writer) error) error {
	if !*f.watch {
		return show(ctx, w)
	}
	return f.loop(ctx, w, progress.IsTerminal(w), asJSON, show)
}

// loop is run's --watch, on a terminal (term) or not.
func (f *watchFlags) loop(ctx context.Context, w io.Writer, term, asJSON bool, show func(context.Context, io.Writer) error) error {
	tick := time.NewTicker(*f.interval)
	defer tick.Stop()
	var frame bytes.Buffer
	for n := 1; ; n++ {
		frame.Reset()
		now := time.Now()
		switch {
		case asJSON:
		case term:
			fmt.Fprintf(&frame, "%severy %v: %s%s%s\n\n", clearScreen, *f.interval, f.cmd,
				strings.Repeat(" ", max(1, 60-len(f.cmd))), now.Format(time.DateTime))
		default:
			fmt.Fprintf(&frame, "--- %s\n", now.Format(time.RFC3339))
		}
		if err := show(ctx, &frame); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if n == 1 {
				return err
			}
			if asJSON {
				frame.Reset()
				if err := printJSON(&frame, map[string]string{"error": err.Error()}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(&frame, "%s: %v (trying again in %v)\n", f.cmd, err, *f.interval)
			}
		}
		if _, err := w.Write(frame.Bytes()); err != nil {
			return err
		}
		if n == *f.count {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
