package client

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/meta/mem"
	"cairn/raidp"
)

// TestRAIDPZeroClaims: a zeroer's claim on a superchunk is refused while a
// recovery diverts it, and a recovery that diverts a claimed superchunk
// waits until the claim is released or expires (virtual time).
func TestRAIDPZeroClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := mem.New()
		c := New(store, nil, Config{})
		z := &zeroer{c: c, rm: store, g: raidp.Group{Name: "g"}}
		tok, until, err := z.claim(ctx, RAIDPDeadRange{Superchunk: 3}, false)
		if err != nil {
			t.Fatal(err)
		}
		if want := time.Now().Add(raidpClaimTTL); !until.Equal(want) {
			t.Errorf("claim until %v, want %v", until, want)
		}
		start := time.Now()
		if err := c.awaitZeroing(ctx, store, "g", []int{1, 2}); err != nil || time.Since(start) != 0 {
			t.Errorf("a recovery of unclaimed superchunks waited %v: %v", time.Since(start), err)
		}
		// Released after 5 s: the recovery goes on then.
		go func() {
			time.Sleep(5 * time.Second)
			z.release(tok)
		}()
		if err := c.awaitZeroing(ctx, store, "g", []int{3}); err != nil {
			t.Fatal(err)
		}
		if w := time.Since(start); w < 5*time.Second || w > 6*time.Second {
			t.Errorf("the recovery waited %v for a claim released after 5s", w)
		}
		// A claim never released (its zeroer died) holds until it expires.
		if _, _, err := z.claim(ctx, RAIDPDeadRange{Superchunk: 3}, false); err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		if err := c.awaitZeroing(ctx, store, "g", []int{3}); err != nil {
			t.Fatal(err)
		}
		if w := time.Since(start); w < raidpClaimTTL || w > raidpClaimTTL+time.Second {
			t.Errorf("the recovery waited %v for an abandoned claim, want its TTL %v", w, raidpClaimTTL)
		}
		// Diverted: no claim.
		if err := c.setDivert(ctx, store, "g", 0, []int{3}, true); err != nil {
			t.Fatal(err)
		}
		if _, _, err := z.claim(ctx, RAIDPDeadRange{Superchunk: 3}, false); !errors.Is(err, errNotNow) {
			t.Errorf("a claim on a diverted superchunk: %v, want errNotNow", err)
		}
		// Expired claims are dropped by the next claim.
		if _, _, err := z.claim(ctx, RAIDPDeadRange{Superchunk: 4}, false); err != nil {
			t.Fatal(err)
		}
		b, _ := store.RAIDP(ctx, "alloc/g")
		var a RAIDPAlloc
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		if len(a.Zeroing) != 1 {
			t.Errorf("claims left: %+v, want only superchunk 4's", a.Zeroing)
		}
	})
}

// slowZeroDisks zeroes in a fixed (virtual) time per call, within its
// context.
type slowZeroDisks struct {
	RAIDPDisks
	per   time.Duration
	calls atomic.Int64
}

func (d *slowZeroDisks) ZeroRAIDP(ctx context.Context, disk cairn.DiskID, slot int, off, n int64) error {
	select {
	case <-time.After(d.per):
		d.calls.Add(1)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestRAIDPZeroClaimRenewed: a zeroing longer than the claim's TTL keeps
// its claim (renewed before its chunks), so a recovery waits for the
// zeroing's end rather than the TTL; a recovery that diverts the
// superchunk meanwhile stops the zeroing at its next renewal (errNotNow,
// the range stays queued) and waits only that long.
func TestRAIDPZeroClaimRenewed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := mem.New()
		c := New(store, nil, Config{})
		g := raidp.Group{Name: "g", Generation: 1, Size: 64 << 20,
			Disks:  []raidp.GroupDisk{{ID: "a"}, {ID: "b"}},
			Layout: raidp.Layout{Superchunks: []raidp.Superchunk{{ID: 0, Replicas: [2]raidp.Place{{Disk: 0}, {Disk: 1}}}}}}
		rd := &slowZeroDisks{per: 8 * time.Second}
		z := &zeroer{c: c, rm: store, rd: rd, g: g, writable: map[cairn.DiskID]bool{"a": true, "b": true}}
		const chunks = 10 // 80 s of zeroing, past the TTL
		r := RAIDPDeadRange{Superchunk: 0, Length: chunks * raidpZeroChunk}
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- z.zero(ctx, r) }()
		time.Sleep(time.Second)
		if err := c.awaitZeroing(ctx, store, "g", []int{0}); err != nil {
			t.Fatal(err)
		}
		w := time.Since(start)
		if err := <-done; err != nil {
			t.Fatalf("a zeroing of %d chunks: %v", chunks, err)
		}
		if want := chunks * rd.per; w < want || w > want+time.Second || rd.calls.Load() != 2*chunks {
			t.Errorf("the recovery waited %v (%d zero calls) for a zeroing of %v, want its end", w, rd.calls.Load(), want)
		}

		// Diverted after 30 s: the zeroing stops at its next renewal.
		rd.calls.Store(0)
		start = time.Now()
		go func() { done <- z.zero(ctx, r) }()
		time.Sleep(30 * time.Second)
		if err := c.setDivert(ctx, store, "g", 0, []int{0}, true); err != nil {
			t.Fatal(err)
		}
		if err := c.awaitZeroing(ctx, store, "g", []int{0}); err != nil {
			t.Fatal(err)
		}
		w = time.Since(start)
		if err := <-done; !errors.Is(err, errNotNow) {
			t.Errorf("a zeroing whose superchunk was diverted: %v, want errNotNow", err)
		}
		if n := rd.calls.Load(); n >= 2*chunks || w >= chunks*rd.per || w > 30*time.Second+raidpClaimTTL {
			t.Errorf("the diverting recovery waited %v, the zeroing made %d of %d calls", w, n, 2*chunks)
		}
	})
}
