package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// watchOf returns the watch flags of args.
func watchOf(t *testing.T, args ...string) *watchFlags {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f := addWatchFlags(fs, "cairn admin test status")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestWatchFlagsValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{nil, ""},
		{[]string{"--watch", "--interval", "1s", "--count", "3"}, ""},
		{[]string{"--watch", "--interval", "0s"}, "--interval must be positive"},
		{[]string{"--watch", "--count", "-1"}, "--count must not be negative"},
		{[]string{"--count", "2"}, "--count needs --watch"},
	} {
		err := watchOf(t, tc.args...).validate()
		if tc.err == "" && err != nil || tc.err != "" && (!errors.Is(err, ErrUsage) || !strings.Contains(fmt.Sprint(err), tc.err)) {
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.err)
		}
	}
}

// frames is a show function: each call writes "frame N at T" (T the
// seconds since start), and the calls in fail return an error instead.
func frames(start time.Time, fail ...int) func(context.Context, io.Writer) error {
	n := 0
	return func(_ context.Context, w io.Writer) error {
		n++
		for _, f := range fail {
			if f == n {
				return fmt.Errorf("metadata unreachable at frame %d", n)
			}
		}
		fmt.Fprintf(w, "frame %d at %v\n", n, time.Since(start))
		return nil
	}
}

// --watch shows a frame every --interval, --count times: appended under
// time lines off a terminal, each replacing the last on one; a failed
// frame after the first says why and the watch goes on.
func TestWatchFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		f := watchOf(t, "--watch", "--interval", "5s", "--count", "3")
		if err := f.run(context.Background(), &out, false, frames(time.Now(), 2)); err != nil {
			t.Fatal(err)
		}
		start := time.Now().Add(-10 * time.Second).UTC().Format(time.RFC3339)
		want := "--- " + start + "\nframe 1 at 0s\n" +
			"--- " + time.Now().Add(-5*time.Second).UTC().Format(time.RFC3339) + "\ncairn admin test status: metadata unreachable at frame 2 (trying again in 5s)\n" +
			"--- " + time.Now().UTC().Format(time.RFC3339) + "\nframe 3 at 10s\n"
		if out.String() != want {
			t.Errorf("frames:\n%s\nwant:\n%s", &out, want)
		}

		out.Reset()
		if err := f.loop(context.Background(), &out, true, false, frames(time.Now())); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(out.String(), clearScreen+"every 5s: cairn admin test status "); got != 3 || !strings.HasSuffix(out.String(), "frame 3 at 10s\n") {
			t.Errorf("on a terminal, %d redrawn frames:\n%q", got, out.String())
		}

		// JSON: a stream of documents, an error as one too.
		out.Reset()
		n := 0
		err := f.run(context.Background(), &out, true, func(_ context.Context, w io.Writer) error {
			if n++; n == 2 {
				return errors.New("down")
			}
			return printJSON(w, map[string]int{"n": n})
		})
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(&out)
		var docs []map[string]any
		for dec.More() {
			var d map[string]any
			if err := dec.Decode(&d); err != nil {
				t.Fatal(err)
			}
			docs = append(docs, d)
		}
		if len(docs) != 3 || docs[0]["n"] != 1.0 || docs[1]["error"] != "down" || docs[2]["n"] != 3.0 {
			t.Errorf("JSON frames: %v", docs)
		}
	})
}

// The first frame's error ends the watch; so does the context (cleanly),
// and without --watch show runs once, with no header.
func TestWatchEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		f := watchOf(t, "--watch", "--interval", "1s")
		if err := f.run(context.Background(), &out, false, frames(time.Now(), 1)); err == nil || !strings.Contains(err.Error(), "frame 1") {
			t.Errorf("a failed first frame: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
		defer cancel()
		out.Reset()
		if err := f.run(ctx, &out, false, frames(time.Now())); err != nil {
			t.Errorf("an interrupted watch: %v", err)
		}
		if got := strings.Count(out.String(), "--- "); got != 4 {
			t.Errorf("%d frames in 3.5 s, one a second from the start:\n%s", got, &out)
		}
		out.Reset()
		if err := watchOf(t).run(context.Background(), &out, false, frames(time.Now())); err != nil || out.String() != "frame 1 at 0s\n" {
			t.Errorf("without --watch: %v %q", err, out.String())
		}
	})
}

// admin repair status and admin scrub status take --watch.
func TestStatusWatch(t *testing.T) {
	s := startServer(t)
	for _, cmd := range [][]string{{"admin", "repair", "status"}, {"admin", "scrub", "status"}} {
		// Once first: what it shows (the director's progress record, once
		// written) is still there when the watch runs; the time it was
		// written ("as of") may move on, so the line is compared without it.
		once := s.CLI(t, cmd...)
		first, _, _ := strings.Cut(strings.SplitN(once, "\n", 2)[0], " (as of")
		out := s.CLI(t, append(cmd, "--watch", "--interval", "10ms", "--count", "3")...)
		if got := strings.Count(out, "\n--- ") + strings.Count(out[:min(4, len(out))], "--- "); got != 3 {
			t.Errorf("cairn %s --watch --count 3 showed %d frames:\n%s", strings.Join(cmd, " "), got, out)
		}
		if strings.Contains(once, "--- ") || !strings.Contains(out, first) {
			t.Errorf("cairn %s: once\n%s\nwatched\n%s", strings.Join(cmd, " "), once, out)
		}
	}
}
