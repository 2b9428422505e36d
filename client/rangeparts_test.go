package client

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"testing"

	"cairn"
)

// recordingShards is Shards that records which shard files are read.
type recordingShards struct {
	Shards
	mu   sync.Mutex
	read map[string]int // "disk/name" → GetShard calls
}

func (r *recordingShards) GetShard(ctx context.Context, disk cairn.DiskID, name string, off, n int64) (io.ReadCloser, error) {
	r.mu.Lock()
	r.read[string(disk)+"/"+name]++
	r.mu.Unlock()
	return r.Shards.GetShard(ctx, disk, name, off, n)
}

// reset forgets the reads so far and returns them.
func (r *recordingShards) reset() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.read
	r.read = map[string]int{}
	return got
}

// TestRangeReadsOnlyItsParts: a range GET of a 1,000-part object — inside
// part 900, across parts 900 and 901, exactly part 900 (what S3's
// ?partNumber=900 asks) — reads shards of those parts only, no more of
// them than a stripe has, and returns the right bytes; likewise for an
// SSE-S3 object, whose parts are found by their plaintext sizes.
func TestRangeReadsOnlyItsParts(t *testing.T) {
	ctx := context.Background()
	const parts, partSize = 1000, 300
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 64, MinPartSize: 1, Keys: testKeyring(t)})
	rec := &recordingShards{Shards: e.shards, read: map[string]int{}}
	c := New(e.meta, rec, Config{BlockSize: 64, MinPartSize: 1, Keys: testKeyring(t)})
	for _, tc := range []struct {
		key string
		sse *SSE
	}{{"plain", nil}, {"sse-s3", &SSE{Scheme: cairn.SSES3}}} {
		t.Run(tc.key, func(t *testing.T) {
			u, err := c.CreateUpload(ctx, "bkt", tc.key, PutOptions{SSE: tc.sse})
			if err != nil {
				t.Fatal(err)
			}
			data := randBytes(9, parts*partSize)
			var list []CompletePart
			for i := range parts {
				b := data[i*partSize : (i+1)*partSize]
				p, err := c.UploadPart(ctx, "bkt", tc.key, u.ID, i+1, bytes.NewReader(b), PutOptions{Size: partSize})
				if err != nil {
					t.Fatal(err)
				}
				etag := p.ETag
				if tc.sse == nil {
					sum := md5.Sum(b)
					etag = hex.EncodeToString(sum[:])
				}
				list = append(list, CompletePart{Number: i + 1, ETag: etag})
			}
			m, err := c.CompleteUpload(ctx, "bkt", tc.key, u.ID, list)
			if err != nil {
				t.Fatal(err)
			}
			files := func(numbers ...int) map[string]bool {
				out := map[string]bool{}
				for _, n := range numbers {
					for _, f := range m.Parts[n-1].Files() {
						out[string(f.Disk)+"/"+f.Name] = true
					}
				}
				return out
			}
			p900 := int64(899 * partSize)
			for _, r := range []struct {
				name      string
				off, n    int64
				partsRead []int
			}{
				{"inside part 900", p900 + 10, 100, []int{900}},
				{"across parts 900 and 901", p900 + 250, 100, []int{900, 901}},
				{"part 900 (partNumber=900)", p900, partSize, []int{900}},
				{"the last byte", parts*partSize - 1, 1, []int{1000}},
			} {
				rec.reset()
				_, rc, err := c.GetWith(ctx, "bkt", tc.key, r.off, r.n, GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || !bytes.Equal(got, data[r.off:r.off+r.n]) {
					t.Fatalf("%s: %d bytes, %v; not the object's", r.name, len(got), err)
				}
				allowed, reads := files(r.partsRead...), rec.reset()
				calls := 0
				for f, n := range reads {
					if !allowed[f] {
						t.Fatalf("%s: read %s, a shard of a part the range does not touch", r.name, f)
					}
					calls += n
				}
				if max := 6 * len(r.partsRead); calls == 0 || calls > max {
					t.Fatalf("%s: %d shard reads, want 1..%d", r.name, calls, max)
				}
			}
		})
	}
}

// TestPartSpan: the parts a range touches, by their offsets.
func TestPartSpan(t *testing.T) {
	var parts []cairn.Part
	for i, n := range []int64{10, 0, 5, 20} { // offsets 0, 10, 10, 15; size 35
		parts = append(parts, cairn.Part{Number: i + 1, Size: n})
	}
	size := func(p cairn.Part) (int64, error) { return p.Size, nil }
	tests := []struct {
		off, end          int64
		first, last, base int64
	}{
		{0, 35, 0, 4, 0},
		{0, 10, 0, 1, 0},
		{9, 11, 0, 3, 0},
		{10, 11, 2, 3, 10},
		{10, 16, 2, 4, 10},
		{15, 35, 3, 4, 15},
		{34, 35, 3, 4, 15},
		{5, 5, 0, 0, 0},
		{35, 35, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d-%d", tc.off, tc.end), func(t *testing.T) {
			first, last, base, err := partSpan(parts, size, tc.off, tc.end)
			if err != nil || int64(first) != tc.first || int64(last) != tc.last || base != tc.base {
				t.Fatalf("parts[%d:%d] from %d (%v), want parts[%d:%d] from %d", first, last, base, err, tc.first, tc.last, tc.base)
			}
		})
	}
	bad := fmt.Errorf("bad size")
	if _, _, _, err := partSpan(parts, func(cairn.Part) (int64, error) { return 0, bad }, 0, 1); err != bad {
		t.Fatalf("a size's error: %v", err)
	}
}
