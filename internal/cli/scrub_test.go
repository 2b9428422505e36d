package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/internal/cmdline"
)

func TestScrubUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		mention string
	}{
		{[]string{"admin", "scrub"}, "needs a command"},
		{[]string{"admin", "scrub", "resume"}, "unknown command"},
		{[]string{"admin", "scrub", "status", "extra"}, "argument"},
		{[]string{"admin", "scrub", "start", "now"}, "argument"},
		{[]string{"admin", "scrub", "pause", "--all"}, "flag provided but not defined"},
		{[]string{"node", "--id", "n1", "--meta", "http://127.0.0.1:1", "--disk", t.TempDir(), "--secret-file", "/nonexistent", "--scrub-rate", "fast"}, "--scrub-rate"},
		{[]string{"server", "--data", t.TempDir(), "--scrub-rate", "0"}, "--scrub-rate"},
		{[]string{"server", "--data", t.TempDir(), "--scrub-share", "0"}, "--scrub-share"},
		{[]string{"server", "--data", t.TempDir(), "--scrub-share", "1.5"}, "--scrub-share"},
		{[]string{"server", "--data", t.TempDir(), "--scrub-interval", "-1h"}, "--scrub-interval"},
	} {
		_, _, err := run(t, tc.args...)
		if !errors.Is(err, ErrUsage) || cmdline.ExitCode(err) != 2 {
			t.Errorf("%v: got %v, want a usage error", tc.args, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%v: error %q does not mention %q", tc.args, err, tc.mention)
		}
	}
	for _, args := range [][]string{{"admin", "scrub", "--help"}, {"admin", "scrub", "status", "--help"},
		{"admin", "scrub", "start", "--help"}, {"admin", "scrub", "pause", "--help"}} {
		out, _, err := run(t, args...)
		if err != nil || !strings.Contains(out, "Usage") {
			t.Errorf("%v: %v\n%s", args, err, out)
		}
	}
}

func TestPrintScrubStatus(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st := ScrubStatus{
		Disks: []ScrubDisk{
			{ScrubProgress: cairn.ScrubProgress{Disk: "n1/d1", Updated: now, PassStarted: now.Add(-time.Minute), PassShards: 50,
				PassBytes: 50 << 20, PassDamage: 1, LastPass: now.Add(-time.Hour), LastShards: 99, LastDamage: 2, Found: 3}, Shards: 100},
			{ScrubProgress: cairn.ScrubProgress{Disk: "n1/d2", Updated: now, Paused: true, Unreported: 4, Found: 1004}},
			{ScrubProgress: cairn.ScrubProgress{Disk: "n2/d1"}},
		},
		Pending: 1, Queued: 3, Healed: 2,
		Damage: []cairn.Damage{{Disk: "n1/d1", Shard: cairn.ShardName("0123456789abcdef0123456789abcdef", 2),
			Kind: cairn.DamageCorrupt, Source: cairn.DamageScrub, Detail: "block 3: CRC", Task: "t1"}},
	}
	var b bytes.Buffer
	printScrubStatus(&b, st, now)
	out := b.String()
	for _, want := range []string{"scrub: running", "n1/d1", "scrubbing", "50 shards", "(~50%)", "1 damaged",
		"(1h0m0s ago)", "paused", "4 not recorded", "never reported", "1 pending, 3 queued for repair and 2 healed",
		"repair queued): block 3: CRC"} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not say %q:\n%s", want, out)
		}
	}
}

func TestSummarizeScrub(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	disks := []cairn.Disk{{ID: "n1/d1"}, {ID: "n1/d2"}, {ID: "n2/d1"}}
	by := map[cairn.DiskID]cairn.ScrubProgress{
		"n1/d1": {LastPass: now.Add(-2 * time.Hour), PassStarted: now.Add(-time.Minute)},
		"n1/d2": {LastPass: now.Add(-time.Hour)},
		"n2/d1": {LastPass: now.Add(-3 * time.Hour)},
	}
	got := summarizeScrub(cairn.ScrubControl{}, disks, by, 3, false, now)
	if want := "running; 1 of 3 disks in a pass, the oldest full pass ended 3h0m0s ago; 3 damaged shards pending repair (cairn admin scrub status)"; got != want {
		t.Errorf("summary\n%s\nwant\n%s", got, want)
	}
	delete(by, "n2/d1")
	got = summarizeScrub(cairn.ScrubControl{Paused: true}, disks, by, 1000, true, now)
	if want := "paused; 1 of 3 disks in a pass, 1 never fully scrubbed; 1000+ damaged shards pending repair (cairn admin scrub status)"; got != want {
		t.Errorf("summary\n%s\nwant\n%s", got, want)
	}
}

func TestGCUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		mention string
	}{
		{[]string{"admin", "gc"}, "needs a command"},
		{[]string{"admin", "gc", "collect"}, "unknown command"},
		{[]string{"admin", "gc", "status", "extra"}, "argument"},
		{[]string{"admin", "gc", "status", "--grace", "1h"}, "flag provided but not defined"},
		{[]string{"server", "--data", t.TempDir(), "--gc-grace", "-1h"}, "--gc-grace"},
		{[]string{"server", "--data", t.TempDir(), "--gc-grace", "soon"}, "gc-grace"},
		{[]string{"admin", "rebuild-meta", "everything"}, "argument"},
		{[]string{"admin", "rebuild-meta", "--bucket", "b"}, "flag provided but not defined"},
	} {
		_, _, err := run(t, tc.args...)
		if !errors.Is(err, ErrUsage) || cmdline.ExitCode(err) != 2 {
			t.Errorf("%v: got %v, want a usage error", tc.args, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%v: error %q does not mention %q", tc.args, err, tc.mention)
		}
	}
}

func TestPrintGCStatus(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	disks := []cairn.Disk{{ID: "n1/d1"}, {ID: "n1/d2"}, {ID: "n2/d1"}}
	ps := []cairn.ScrubProgress{
		{Disk: "n1/d1", Updated: now, PassStarted: now.Add(-time.Minute), PassOrphans: 2, LastPass: now.Add(-time.Hour), LastOrphans: 5, Collected: 4},
		{Disk: "n1/d2", Updated: now, LastPass: now.Add(-2 * time.Hour), LastOrphans: 1, Collected: 7},
	}
	st := gcStatus(cairn.ScrubControl{}, disks, ps)
	if st.Orphans != 6 || st.Collected != 11 || len(st.Disks) != 3 {
		t.Fatalf("status %+v", st)
	}
	var b bytes.Buffer
	printGCStatus(&b, st, now)
	out := b.String()
	for _, want := range []string{"orphan collection: running", "2 orphans so far", "(1h0m0s ago)", "never reported",
		"orphans: 6 found by the last full passes, 11 removed"} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not say %q:\n%s", want, out)
		}
	}
}
