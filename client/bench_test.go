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
// the plain ones is the cost of encryption at rest. Every variant puts and
// gets once before any is timed: the first PUTs of the process grow its
// heap (fresh pages, page faults), which made whichever variant ran first
// look slower than the other (plain slower than encrypted).
func BenchmarkPutGet(b *testing.B) {
	var vs []putGetBench
	for _, sse := range []string{"", cairn.SSES3} {
		v := newPutGetBench(b, sse)
		v.put(b)
		v.get(b)
		vs = append(vs, v)
	}
	for _, v := range vs {
		b.Run("put/rs-4-2/64MiB"+v.suffix, func(b *testing.B) {
			b.SetBytes(putGetSize)
			b.ReportAllocs()
			for b.Loop() {
				v.put(b)
			}
		})
		b.Run("get/rs-4-2/64MiB"+v.suffix, func(b *testing.B) {
			b.SetBytes(putGetSize) // of the object the warm-up put
			b.ReportAllocs()
			for b.Loop() {
				v.get(b)
			}
		})
	}
}

const putGetSize = 64 << 20

// putGetBench is one variant of BenchmarkPutGet: its cluster and object.
type putGetBench struct {
	suffix   string
	put, get func(b *testing.B)
}

func newPutGetBench(b *testing.B, sse string) putGetBench {
	e := newEnv(b, 8, 1, "rs-4-2", Config{Keys: testKeyring(b)})
	data := randBytes(1, putGetSize)
	ctx := context.Background()
	opts := PutOptions{Size: putGetSize}
	v := putGetBench{}
	if sse != "" {
		opts.SSE, v.suffix = &SSE{Scheme: sse}, "/"+sse
	}
	v.put = func(b *testing.B) {
		if _, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(data), opts); err != nil {
			b.Fatal(err)
		}
	}
	v.get = func(b *testing.B) {
		_, rc, err := e.c.Get(ctx, "bkt", "k", 0, -1)
		if err != nil {
			b.Fatal(err)
		}
		defer rc.Close()
		if n, err := io.Copy(io.Discard, rc); err != nil || n != putGetSize {
			b.Fatalf("get: %d bytes, %v", n, err)
		}
	}
	return v
}

// BenchmarkSmallGet times the GET of a 64 KiB rs-4-4 object on 8 disks
// (in-memory shards) with its allocations: the data path's share of a
// small S3 GET, whose metadata is one read (issue 22).
func BenchmarkSmallGet(b *testing.B) {
	e := newEnv(b, 8, 1, "rs-4-4", Config{})
	data := randBytes(2, 64<<10)
	ctx := context.Background()
	m, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(data), PutOptions{Size: int64(len(data))})
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, len(data)+1)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		_, rc, err := e.c.OpenWith(ctx, m, 0, -1, GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.ReadFull(rc, buf)
		rc.Close()
		if err != io.ErrUnexpectedEOF || n != len(data) {
			b.Fatalf("get: %d bytes, %v", n, err)
		}
	}
}
