package client

import (
	"bytes"
	"context"
	"io"
	"testing"

	"cairn"
)

// BenchmarkPutGet times a PUT and a GET of a 64 MiB rs-4-2 object through
// the in-memory shard store (clienttest) on 8 disks (so the PUT has its 2
// spares and holds its spare window): the data path's own cost —
// encoding, decoding, the driver, copies — with no network or disk.
//
// The sse-s3 variants encrypt (docs/design/encryption.md): their ratio to
// the plain ones is the cost of encryption at rest.
func BenchmarkPutGet(b *testing.B) {
	for _, sse := range []string{"", cairn.SSES3} {
		benchmarkPutGet(b, sse)
	}
}

func benchmarkPutGet(b *testing.B, sse string) {
	const size = 64 << 20
	e := newEnv(b, 8, 1, "rs-4-2", Config{Keys: testKeyring(b)})
	data := randBytes(1, size)
	ctx := context.Background()
	opts := PutOptions{Size: size}
	suffix := ""
	if sse != "" {
		opts.SSE, suffix = &SSE{Scheme: sse}, "/"+sse
	}
	put := func(b *testing.B) {
		if _, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(data), opts); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("put/rs-4-2/64MiB"+suffix, func(b *testing.B) {
		put(b) // warm the stripe pools
		b.SetBytes(size)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			put(b)
		}
	})
	b.Run("get/rs-4-2/64MiB"+suffix, func(b *testing.B) {
		put(b)
		get := func() {
			_, rc, err := e.c.Get(ctx, "bkt", "k", 0, -1)
			if err != nil {
				b.Fatal(err)
			}
			defer rc.Close()
			if n, err := io.Copy(io.Discard, rc); err != nil || n != size {
				b.Fatalf("get: %d bytes, %v", n, err)
			}
		}
		get()
		b.SetBytes(size)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			get()
		}
	})
}
