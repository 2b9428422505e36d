package client

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

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
