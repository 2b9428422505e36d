package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/cleanup"
)

// TestReadInFlightSurvivesOverwriteAndDelete: a GET that opened an object
// reads it to the end, byte for byte, while the object is overwritten and
// then deleted and the cleanup worker runs: the old version's shards stay
// for the grace period, and go once it has passed. Without a grace period
// the same read fails: the test sees what the grace period protects.
func TestReadInFlightSurvivesOverwriteAndDelete(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace time.Duration
	}{{"grace", 0}, {"no grace", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			// A bubble: the grace period passes on the fake clock of the
			// store's records and the worker.
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 16 << 10, WindowBytes: 64 << 10})
				ctx := context.Background()
				data := randBytes(1, 2<<20) // 32 windows
				if _, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(data), PutOptions{Size: -1}); err != nil {
					t.Fatal(err)
				}
				_, rc, err := e.c.Get(ctx, "bkt", "k", 0, -1)
				if err != nil {
					t.Fatal(err)
				}
				defer rc.Close()
				got := make([]byte, 100<<10)
				if _, err := io.ReadFull(rc, got); err != nil {
					t.Fatal(err)
				}
				if _, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(randBytes(2, 1<<20)), PutOptions{Size: -1}); err != nil {
					t.Fatal(err)
				}
				if err := e.c.Delete(ctx, "bkt", "k"); err != nil {
					t.Fatal(err)
				}
				w := cleanup.New(e.meta, e.shards, cleanup.Config{Grace: tc.grace, Rate: 1e6})
				if _, err := w.Run(ctx, time.Now()); err != nil {
					t.Fatal(err)
				}
				rest, err := io.ReadAll(rc)
				if tc.grace < 0 {
					if !errors.Is(err, cairn.ErrUnavailable) {
						t.Fatalf("read with the shards deleted under it: %v, want ErrUnavailable", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("read in flight across an overwrite and a delete: %v", err)
				}
				if !bytes.Equal(append(got, rest...), data) {
					t.Fatal("read in flight returned other bytes than the version it opened")
				}
				if n := e.shards.Count(); n != 12 {
					t.Fatalf("%d shard files within the grace period, want both versions' 12", n)
				}
				time.Sleep(cleanup.DefaultGrace)
				st, err := w.Run(ctx, time.Now())
				if err != nil || st.Deleted != 12 || e.shards.Count() != 0 {
					t.Fatalf("after the grace period: %+v, %v, %d files left", st, err, e.shards.Count())
				}
				if _, _, err := e.c.Get(ctx, "bkt", "k", 0, -1); !errors.Is(err, cairn.ErrNotFound) {
					t.Fatalf("GET after the delete: %v", err)
				}
			})
		})
	}
}
