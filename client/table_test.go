package client

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/placement"
)

// A PUT uses a PG table at most tableMaxAge old: once the director has
// swapped in a recomputed table (here: every PG's disks in reverse
// order), the PUTs after the cached one ages out follow it.
func TestTableFollowsRecomputation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 4096, SmallObject: -1})
		data := randBytes(1, 64<<10)
		// put stores key and returns where its shards went and where the
		// table tab puts them.
		put := func(key string, tab cairn.PGTable) (got, want []cairn.DiskID) {
			t.Helper()
			if _, err := e.c.Put(ctx, "bkt", key, bytes.NewReader(data), PutOptions{Size: int64(len(data))}); err != nil {
				t.Fatal(err)
			}
			m, err := e.meta.Manifest(ctx, "bkt", key)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range m.Shards {
				got = append(got, s.Disk)
			}
			return got, tab.PGs[placement.PGFor("bkt", key, m.Version, len(tab.PGs))].Disks
		}
		put("k", cairn.PGTable{PGs: []cairn.PG{{}}}) // makes the table
		old, err := e.meta.PGTable(ctx, 6)
		if err != nil {
			t.Fatal(err)
		}
		next := old
		next.Epoch = 1
		next.PGs = nil
		for _, pg := range old.PGs {
			pg.Disks = slices.Clone(pg.Disks)
			slices.Reverse(pg.Disks)
			next.PGs = append(next.PGs, pg)
		}
		if err := e.meta.UpdatePGTable(ctx, next); err != nil {
			t.Fatal(err)
		}
		if got, want := put("k", old); !slices.Equal(got, want) {
			t.Fatalf("within %v of reading the table a PUT used %v, not the cached table's %v", tableMaxAge, got, want)
		}
		time.Sleep(tableMaxAge) // virtual time
		if got, want := put("k", next); !slices.Equal(got, want) {
			t.Fatalf("after the table aged out a PUT used %v, want the recomputed table's %v", got, want)
		}
	})
}
