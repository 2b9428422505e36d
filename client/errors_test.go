package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"cairn"
	"cairn/placement"
)

// A shard's error is not the object's: a PUT or GET that fails because a
// shard file or disk is missing (or the node refuses, or is confused) is
// cairn.ErrUnavailable, never the ErrNotFound a caller would take for a
// missing bucket or key. Only ErrNoSpace keeps its meaning.
func TestShardErrorsAreNotTheObjects(t *testing.T) {
	hidden := []error{cairn.ErrNotFound, cairn.ErrAuth, cairn.ErrInvalid, cairn.ErrCorrupt, cairn.ErrConflict, cairn.ErrExists}
	ctx := context.Background()
	for _, sentinel := range append(hidden, cairn.ErrNoSpace) {
		t.Run("put/"+sentinel.Error(), func(t *testing.T) {
			// (SmallObject −1: the 10 kB object is coded as rs-4-2, not copied.)
			e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 4096, Spares: -1, SmallObject: -1})
			shardErr := fmt.Errorf("put shard v.0 on disk node3/disk1: open /data/disk1/tmp/x: %w", sentinel)
			e.shards.Set(func() { e.shards.FailPut["node3/disk1"] = shardErr })
			data := randBytes(1, 10000)
			_, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(data), PutOptions{Size: int64(len(data))})
			if !errors.Is(err, cairn.ErrUnavailable) {
				t.Fatalf("put: %v, want ErrUnavailable", err)
			}
			for _, h := range hidden {
				if errors.Is(err, h) {
					t.Errorf("put: %v is %v", err, h)
				}
			}
			if sentinel == cairn.ErrNoSpace && !errors.Is(err, cairn.ErrNoSpace) {
				t.Errorf("put: %v, want ErrNoSpace too", err)
			}
		})
	}
	t.Run("get", func(t *testing.T) {
		for _, policy := range []string{"rs-4-2", "lt-16-2"} {
			e := newEnv(t, 32, 1, policy, Config{BlockSize: 4096})
			data := randBytes(2, 10000)
			m, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(data), PutOptions{Size: int64(len(data))})
			if err != nil {
				t.Fatal(err)
			}
			e.shards.Set(func() {
				for _, d := range disksOf(m) {
					e.shards.FailGet[d] = fmt.Errorf("shard on %s: %w", d, cairn.ErrNotFound)
				}
			})
			_, rc, err := e.c.Get(ctx, "bkt", "k", 0, -1)
			if err == nil {
				_, err = io.ReadAll(rc)
				rc.Close()
			}
			if !errors.Is(err, cairn.ErrUnavailable) || errors.Is(err, cairn.ErrNotFound) {
				t.Fatalf("%s: get with every shard missing: %v, want ErrUnavailable and not ErrNotFound", policy, err)
			}
		}
	})
}

// disksOf returns every disk an object's shards or blocks are on.
func disksOf(m *cairn.Manifest) []cairn.DiskID {
	var ds []cairn.DiskID
	for _, s := range m.Shards {
		ds = append(ds, s.Disk)
	}
	for _, st := range m.Coded {
		for _, b := range st.Blocks {
			ds = append(ds, b.Disk)
		}
	}
	return ds
}

// A PUT whose stripe has a disk that is not writable, with no writable
// disk outside the stripe to take its place, fails at once with the
// counts, and stores nothing.
func TestPutTooFewWritableDisks(t *testing.T) {
	e := newEnv(t, 1, 6, "rs-4-2", Config{BlockSize: 4096, SmallObject: -1})
	ctx := context.Background()
	data := randBytes(3, 10000)
	if _, err := e.c.Put(ctx, "bkt", "before", bytes.NewReader(data), PutOptions{Size: int64(len(data))}); err != nil {
		t.Fatal(err) // the PG table of width 6 now exists
	}
	for _, d := range []cairn.DiskID{"node1/disk2", "node1/disk5"} {
		if err := e.meta.SetDiskState(ctx, d, cairn.DiskDown, time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	stored := e.files(t)
	// A fresh client: the one above may serve disk states up to
	// disksMaxAge old.
	c := New(e.meta, e.shards, Config{BlockSize: 4096, SmallObject: -1})
	_, err := c.Put(ctx, "bkt", "after", bytes.NewReader(data), PutOptions{Size: int64(len(data))})
	var few *placement.TooFewDisksError
	if !errors.As(err, &few) || *few != (placement.TooFewDisksError{Need: 6, Have: 4}) || !errors.Is(err, cairn.ErrUnavailable) {
		t.Fatalf("put with 4 of 6 disks writable: %v", err)
	}
	if n := e.files(t); n != stored {
		t.Fatalf("%d shard files after the failed put, %d before", n, stored)
	}
}
