package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"cairn"
)

// poison fills the pools with buffers of every pooled size up to 2 MiB
// (the sizes TestGetWithPooledBuffers uses) holding 0xa5, so a read or
// decode that leaves a byte of a pooled buffer unwritten shows as wrong
// data.
func poison() {
	for n := poolMin; n <= 2*poolUnit; n *= 2 {
		for range 4 {
			b := getBuf(n)[:n]
			for i := range b {
				b[i] = 0xa5
			}
			putBuf(b)
		}
	}
}

func TestPoolCap(t *testing.T) {
	for _, tt := range []struct{ n, want int }{
		{0, 0}, {1000, 0}, {poolMin - 1, 0}, {poolMin, poolMin}, {poolMin + 1, 2 * poolMin},
		{256 << 10, 256 << 10}, {poolUnit, poolUnit}, {poolUnit + 1, 2 * poolUnit}, {5*poolUnit + 3, 6 * poolUnit},
		{poolMax, poolMax}, {poolMax + 1, 0},
	} {
		if got := poolCap(tt.n); got != tt.want {
			t.Errorf("poolCap(%d) = %d, want %d", tt.n, got, tt.want)
		}
		if c := poolCap(tt.n); c != 0 && poolCap(c) != c {
			t.Errorf("poolCap(%d) = %d, which is not a pooled size itself", tt.n, c)
		}
	}
}

// TestGetWithPooledBuffers: GETs whose shard buffers and decode buffers
// come from pools full of other bytes return exact data — whole, ranged,
// degraded (a data shard lost, so the decoder writes into a pooled
// buffer), and read in small pieces by many readers at once, so a window
// given back to the pool while its reader still used it would show.
func TestGetWithPooledBuffers(t *testing.T) {
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 64 << 10, WindowBytes: 512 << 10})
	ctx := context.Background()
	sizes := []int{1, 40 << 10, 256<<10 + 7, 1 << 20, 3<<20 + 12345}
	objs := map[string][]byte{}
	var m0 *cairn.Manifest
	for i, n := range sizes {
		key := fmt.Sprintf("k%d", i)
		objs[key] = randBytes(uint64(100+i), n)
		poison()
		m, err := e.c.Put(ctx, "bkt", key, bytes.NewReader(objs[key]), PutOptions{Size: int64(n)})
		if err != nil {
			t.Fatal(err)
		}
		if i == len(sizes)-1 {
			m0 = m
		}
	}
	check := func(what string) {
		t.Helper()
		for key, data := range objs {
			poison()
			if got := e.get(t, key, 0, -1); !bytes.Equal(got, data) {
				t.Fatalf("%s: %s: %d bytes read back, differing", what, key, len(got))
			}
			if len(data) > 100 {
				off, n := int64(len(data)/3), int64(len(data)/2)
				if got := e.get(t, key, off, n); !bytes.Equal(got, data[off:off+n]) {
					t.Fatalf("%s: %s [%d, +%d): differing", what, key, off, n)
				}
			}
		}
	}
	check("healthy")
	// The disk of the largest object's first data shard fails: its reads
	// (and those of any other object with a data shard there) decode.
	e.shards.Set(func() {
		e.shards.FailGet[m0.Shards[0].Disk] = fmt.Errorf("gone: %w", cairn.ErrNotFound)
	})
	check("one disk lost")
	e.shards.Set(func() { clear(e.shards.FailGet) }) // (Config.OnDamage of newEnv is not for concurrent GETs)

	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for r := range 16 {
		wg.Go(func() {
			for key, data := range objs {
				_, rc, err := e.c.Get(ctx, "bkt", key, 0, -1)
				if err != nil {
					errs <- err
					return
				}
				var got bytes.Buffer
				buf := make([]byte, 1000+r*37)
				_, err = io.CopyBuffer(&got, struct{ io.Reader }{rc}, buf) // Read, not WriteTo
				rc.Close()
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got.Bytes(), data) {
					errs <- fmt.Errorf("reader %d: %s differs", r, key)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
