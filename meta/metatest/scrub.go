package metatest

import (
	"fmt"
	"testing"
	"time"

	"cairn"
	"cairn/meta"
)

// testScrub: damage records are keyed by disk and shard, listed in key
// order page by page, and deleted once; scrub progress is one record per
// disk; the control record reads as zero until set.
func testScrub(t *testing.T, s meta.Store) {
	ctx := t.Context()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ver := "0123456789abcdef0123456789abcdef"
	mk := func(disk string, i int) cairn.Damage {
		return cairn.Damage{Disk: cairn.DiskID(disk), Shard: cairn.ShardName(ver, i), Kind: cairn.DamageCorrupt,
			Source: cairn.DamageScrub, Detail: fmt.Sprintf("block %d", i), Found: t0}
	}
	ds, more, err := s.Damages(ctx, "", 10)
	noErr(t, "Damages empty", err)
	if len(ds) != 0 || more {
		t.Fatalf("Damages of a new store: %v, more %v", ds, more)
	}
	// "n1/d1" and "n1/d10": the key order is the DamageKey's.
	var want []string
	for _, disk := range []string{"n1/d10", "n1/d1", "n2/d1"} {
		for i := range 3 {
			noErr(t, "PutDamage", s.PutDamage(ctx, mk(disk, i)))
		}
	}
	again := mk("n1/d1", 0)
	again.Task, again.Source = "task-1", cairn.DamageRead
	noErr(t, "PutDamage again", s.PutDamage(ctx, again))
	for _, disk := range []string{"n1/d1", "n1/d10", "n2/d1"} {
		for i := range 3 {
			want = append(want, cairn.DamageKey(cairn.DiskID(disk), cairn.ShardName(ver, i)))
		}
	}
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("Damages does not end")
		}
		ds, more, err := s.Damages(ctx, after, 4)
		noErr(t, "Damages", err)
		if len(ds) > 4 {
			t.Fatalf("Damages returned %d records, limit 4", len(ds))
		}
		for _, d := range ds {
			after = cairn.DamageKey(d.Disk, d.Shard)
			got = append(got, after)
			if d.Disk == "n1/d1" && d.Shard == again.Shard && (d.Task != "task-1" || d.Source != cairn.DamageRead || !d.Found.Equal(t0)) {
				t.Fatalf("replaced record read back as %+v", d)
			}
		}
		if !more {
			break
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Damages listed %v, want %v", got, want)
	}
	noErr(t, "DeleteDamage", s.DeleteDamage(ctx, "n1/d1", again.Shard))
	wantErr(t, "DeleteDamage twice", s.DeleteDamage(ctx, "n1/d1", again.Shard), cairn.ErrNotFound)
	ds, _, _ = s.Damages(ctx, "", 100)
	if len(ds) != len(want)-1 {
		t.Fatalf("after delete: %d records, want %d", len(ds), len(want)-1)
	}
	_, _, err = s.Damages(ctx, "", 0)
	wantErr(t, "Damages limit 0", err, cairn.ErrInvalid)
	bad := mk("n1/d1", 0)
	bad.Shard = "../etc"
	wantErr(t, "PutDamage bad name", s.PutDamage(ctx, bad), cairn.ErrInvalid)
	bad = mk("", 0)
	wantErr(t, "PutDamage no disk", s.PutDamage(ctx, bad), cairn.ErrInvalid)
	bad = mk("n1/d1", 0)
	bad.Kind = "odd"
	wantErr(t, "PutDamage bad kind", s.PutDamage(ctx, bad), cairn.ErrInvalid)

	ps, err := s.ScrubProgress(ctx)
	noErr(t, "ScrubProgress empty", err)
	if len(ps) != 0 {
		t.Fatalf("ScrubProgress of a new store: %v", ps)
	}
	for _, d := range []cairn.DiskID{"n2/d1", "n1/d1"} {
		noErr(t, "PutScrubProgress", s.PutScrubProgress(ctx, cairn.ScrubProgress{Disk: d, Cursor: "x", LastPass: t0}))
	}
	noErr(t, "PutScrubProgress replace", s.PutScrubProgress(ctx, cairn.ScrubProgress{Disk: "n2/d1", Found: 7}))
	ps, err = s.ScrubProgress(ctx)
	noErr(t, "ScrubProgress", err)
	if len(ps) != 2 || ps[0].Disk != "n1/d1" || ps[1].Disk != "n2/d1" || ps[1].Found != 7 || ps[1].Cursor != "" || !ps[0].LastPass.Equal(t0) {
		t.Fatalf("ScrubProgress = %+v", ps)
	}
	wantErr(t, "PutScrubProgress no disk", s.PutScrubProgress(ctx, cairn.ScrubProgress{}), cairn.ErrInvalid)

	c, err := s.ScrubControl(ctx)
	noErr(t, "ScrubControl unset", err)
	if c != (cairn.ScrubControl{}) {
		t.Fatalf("ScrubControl unset = %+v", c)
	}
	noErr(t, "PutScrubControl", s.PutScrubControl(ctx, cairn.ScrubControl{Paused: true, Start: 3, Updated: t0}))
	c, err = s.ScrubControl(ctx)
	noErr(t, "ScrubControl", err)
	if !c.Paused || c.Start != 3 || !c.Updated.Equal(t0) {
		t.Fatalf("ScrubControl = %+v", c)
	}
}
