package slowdisk

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/internal/golden"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestScript runs testdata/tracker.txt: batches of requests at virtual
// times, and the verdicts they lead to.
func TestScript(t *testing.T) {
	var tr *Tracker
	golden.Script(t, "tracker.txt", func(t *testing.T, c *golden.Cmd) string {
		at := func() time.Time {
			v, ok := c.Arg("at")
			if !ok {
				t.Fatalf("%s: no at=", c.Pos)
			}
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("%s: at=%q: %v", c.Pos, v, err)
			}
			return epoch.Add(d)
		}
		switch c.Name {
		case "new":
			var cfg Config
			if v, ok := c.Arg("min-samples"); ok {
				fmt.Sscan(v, &cfg.MinSamples)
			}
			var err error
			if tr, err = New(cfg); err != nil {
				return "error: " + err.Error()
			}
			return ""
		case "batch":
			var b []Sample
			for _, l := range c.Input {
				f := strings.Fields(l)
				d, err := time.ParseDuration(f[1])
				if err != nil {
					t.Fatalf("%s: %q: %v", c.Pos, l, err)
				}
				b = append(b, Sample{Disk: cairn.DiskID(f[0]), Took: d, Cancelled: len(f) > 2 && f[2] == "cancelled"})
			}
			now := at()
			marked := tr.ObserveBatch(now, b)
			return fmt.Sprintf("marked %v\n%s", marked, show(tr, now))
		case "avoid":
			v, _ := c.Arg("disk")
			return fmt.Sprint(tr.Avoid(at(), cairn.DiskID(v)))
		case "status":
			return show(tr, at())
		}
		t.Fatalf("%s: unknown command %q", c.Pos, c.Name)
		return ""
	})
}

func show(tr *Tracker, now time.Time) string {
	var b strings.Builder
	for _, s := range tr.Snapshot(now) {
		fmt.Fprintf(&b, "%s %s score=%.2f n=%d since=%v", s.Disk, s.State, s.Score, s.Samples, s.Since.Sub(epoch))
		if s.State == Slow {
			fmt.Fprintf(&b, " until=%v", s.Until.Sub(epoch))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Disks that all take about as long as each other are never avoided,
// however noisy their times, and a disk that is always 10× slower is
// marked once it has MinSamples ratios and avoided until its hold ends.
func TestNoiseIsNotSlowness(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tr, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	now := epoch
	for i := range 10000 {
		now = now.Add(10 * time.Millisecond)
		var b []Sample
		for d := range 6 {
			// ±50% noise around 10 ms.
			took := time.Duration((0.5 + rng.Float64()) * float64(10*time.Millisecond))
			b = append(b, Sample{Disk: cairn.DiskID(fmt.Sprint("d", d)), Took: took})
		}
		if m := tr.ObserveBatch(now, b); len(m) > 0 {
			t.Fatalf("batch %d: marked %v with noise alone", i, m)
		}
	}
	for i := range 3 {
		now = now.Add(10 * time.Millisecond)
		b := []Sample{{Disk: "fast1", Took: 10 * time.Millisecond}, {Disk: "fast2", Took: 11 * time.Millisecond}, {Disk: "slow", Took: 100 * time.Millisecond}}
		m := tr.ObserveBatch(now, b)
		if want := i == 2; (len(m) == 1) != want {
			t.Fatalf("batch %d: marked %v, want a mark: %v", i, m, want)
		}
	}
	if !tr.Avoid(now.Add(4*time.Second), "slow") || tr.Avoid(now.Add(5*time.Second), "slow") {
		t.Fatal("the first hold is not 5 s")
	}
}

func TestConfigRefused(t *testing.T) {
	for _, c := range []Config{
		{Alpha: 1.5}, {Alpha: -1}, {MarkAt: 1.2}, {ClearAt: 0.5}, {MinSamples: -1}, {Hold: -time.Second}, {Hold: time.Minute, MaxHold: time.Second},
	} {
		if _, err := New(c); !errors.Is(err, cairn.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", c, err)
		}
	}
}
