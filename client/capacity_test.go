package client

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cairn"
	"cairn/codec"
	"cairn/codec/all"
)

// TestShardsSizedToTheData: the last stripe of an object is coded with
// blocks just big enough for the data left for it — ⌈rest/K⌉ rounded up
// to the code's shard multiple (lt: its block multiple) — so every
// object is stored at its policy's expansion; every range reads back,
// also with two shards (blocks) unreadable.
func TestShardsSizedToTheData(t *testing.T) {
	const bs = 4096
	for _, policy := range []string{"rs-4-2", "rs-10-4", "lrc-12-2-2", "clay-4-2-5", "rep-3", "lt-16-2"} {
		t.Run(policy, func(t *testing.T) {
			e := newEnv(t, 32, 1, policy, Config{BlockSize: bs, WindowBytes: 3 * bs, SmallObject: -1})
			code, err := all.New(policy)
			if err != nil {
				t.Fatal(err)
			}
			p := code.Params()
			k := p.K
			if rc, ok := code.(rateless); ok {
				k = rc.SourceBlocks()
			}
			sd := k * bs
			rng := rand.New(rand.NewPCG(5, 5))
			for _, size := range []int{sd - 1, sd + 1, 2*sd + sd/2, 3*sd + 7} {
				data := randBytes(uint64(size), size)
				key := fmt.Sprintf("obj-%d", size)
				m, err := e.c.Put(context.Background(), "bkt", key, bytes.NewReader(data), PutOptions{Size: -1})
				if err != nil {
					t.Fatalf("put %d: %v", size, err)
				}
				stripes := (size + sd - 1) / sd
				rest := size - (stripes-1)*sd
				if rc, ok := code.(rateless); ok {
					mult := rc.BlockMultiple()
					want := ((rest+k-1)/k + mult - 1) / mult * mult
					if got := m.StripeBlock(m.Size, k, int64(stripes-1)); got != int64(want) {
						t.Errorf("size %d: last stripe blocks of %d bytes, want %d", size, got, want)
					}
					if stripes > 1 && m.Coded[stripes-1].BlockSize != want && want != bs {
						t.Errorf("size %d: last coded stripe records %d, want %d", size, m.Coded[stripes-1].BlockSize, want)
					}
				} else {
					want := int64((stripes-1)*bs + codec.ShardSize(p, rest))
					if stripes == 1 {
						want = int64(codec.ShardSize(p, size)) // one stripe: BlockSize is the shard size
					}
					for i, s := range m.Shards {
						if s.Size != want {
							t.Fatalf("size %d: shard %d of %d bytes, want %d", size, i, s.Size, want)
						}
					}
					// Stored at the expansion, up to the alignment of the last block.
					if stored, bound := want*int64(p.N()), int64(size)*int64(p.N())/int64(p.K)+int64(p.N()*p.ShardMultiple); stored > bound {
						t.Errorf("size %d: %d shard bytes, more than %d", size, stored, bound)
					}
				}
				if got := e.get(t, key, 0, -1); !bytes.Equal(got, data) {
					t.Fatalf("size %d: read back differs", size)
				}
				for range 10 {
					off := rng.Int64N(int64(size))
					n := rng.Int64N(int64(size) - off + 1)
					if got := e.get(t, key, off, n); !bytes.Equal(got, data[off:off+n]) {
						t.Fatalf("size %d: range [%d,+%d) differs", size, off, n)
					}
				}
				d0, d1 := firstDisks(m)
				e.shards.Set(func() { e.shards.FailGet = map[cairn.DiskID]error{d0: cairn.ErrNotFound, d1: cairn.ErrCorrupt} })
				if got := e.get(t, key, int64(size)-3, -1); !bytes.Equal(got, data[size-3:]) {
					t.Fatalf("size %d: degraded read of the last stripe differs", size)
				}
				if got := e.get(t, key, 0, -1); !bytes.Equal(got, data) {
					t.Fatalf("size %d: degraded read differs", size)
				}
				e.shards.Set(func() { e.shards.FailGet = map[cairn.DiskID]error{} })
			}
		})
	}
}

// oldObject is a fixture of client/testdata/oldclient: an object as the
// client wrote it before shards were sized to the data (the last stripe
// padded to full blocks), its shard files included.
type oldObject struct {
	Sizes    []int             `json:"sizes"` // the parts' sizes (one: a single-part object); content: randBytes(100+i, size)
	Manifest cairn.Manifest    `json:"manifest"`
	Files    map[string][]byte `json:"files"` // disk + "/" + shard name
}

// TestOldClientObjectsReadBack: objects written before shards were sized
// to the data (every policy form, multipart included) read back whole,
// by range and degraded, through today's GET.
func TestOldClientObjectsReadBack(t *testing.T) {
	files, err := filepath.Glob("testdata/oldclient/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var o oldObject
			if err := json.Unmarshal(raw, &o); err != nil {
				t.Fatal(err)
			}
			m := &o.Manifest
			e := newEnv(t, 16, 1, m.Policy, Config{BlockSize: 1 << 20})
			ctx := context.Background()
			e.shards.Set(func() {
				for name, b := range o.Files {
					e.shards.Files[name] = b
				}
			})
			if err := e.meta.CommitManifest(ctx, m, ""); err != nil {
				t.Fatal(err)
			}
			var data []byte
			for i, n := range o.Sizes {
				data = append(data, randBytes(uint64(100+i), n)...)
			}
			if sum := md5.Sum(data); len(o.Sizes) == 1 && m.ETag != hex.EncodeToString(sum[:]) {
				t.Fatalf("fixture ETag %s is not that of its content", m.ETag)
			}
			if got := e.get(t, m.Key, 0, -1); !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes, differing from the %d written", len(got), len(data))
			}
			for _, r := range [][2]int{{len(data) - 1, 1}, {len(data) - 40, 40}, {10, len(data) - 20}, {0, 1}} {
				if got := e.get(t, m.Key, int64(r[0]), int64(r[1])); !bytes.Equal(got, data[r[0]:r[0]+r[1]]) {
					t.Fatalf("range %v differs", r)
				}
			}
			var d0, d1 cairn.DiskID
			if len(m.Parts) > 0 {
				d0, d1 = m.Parts[0].Shards[0].Disk, m.Parts[0].Shards[1].Disk
			} else {
				d0, d1 = firstDisks(m)
			}
			e.shards.Set(func() { e.shards.FailGet = map[cairn.DiskID]error{d0: cairn.ErrNotFound, d1: cairn.ErrCorrupt} })
			if got := e.get(t, m.Key, 0, -1); !bytes.Equal(got, data) {
				t.Fatal("degraded read differs")
			}
		})
	}
}

// TestSmallObjects: an object of at most Config.SmallObject bytes is
// stored as replicas that survive as many lost disks as its policy
// (rep-(t+1)); the manifest keeps the policy and names the code; it reads
// back with t replicas lost; larger objects, parts and policies that
// would not gain keep their policy's layout.
func TestSmallObjects(t *testing.T) {
	tests := []struct {
		policy string
		code   string // "" = stored with the policy
	}{
		{"rs-4-2", "rep-3"},
		{"rs-10-4", "rep-5"},
		{"lrc-12-2-2", "rep-4"}, // decodes every 3 losses, not every 4
		{"clay-4-2-5", "rep-3"},
		{"rep-3", ""},
		{"rs-1-2", ""}, // 3 shards already
		{"rs-4-2/read=all", "rep-3"},
	}
	for _, tt := range tests {
		t.Run(tt.policy, func(t *testing.T) {
			e := newEnv(t, 16, 1, tt.policy, Config{BlockSize: 4096})
			ctx := context.Background()
			for _, size := range []int{0, 1, 5000, DefaultSmallObject} {
				data := randBytes(uint64(size), size)
				key := fmt.Sprintf("k%d", size)
				m, err := e.c.Put(ctx, "bkt", key, bytes.NewReader(data), PutOptions{Size: -1})
				if err != nil {
					t.Fatalf("put %d: %v", size, err)
				}
				if m.Policy != tt.policy || m.Code != tt.code {
					t.Fatalf("size %d: policy %q code %q, want %q and %q", size, m.Policy, m.Code, tt.policy, tt.code)
				}
				if tt.code != "" {
					var copies int
					fmt.Sscanf(tt.code, "rep-%d", &copies)
					if len(m.Shards) != copies || m.Shards[0].Size != int64(max(size, 1)) {
						t.Fatalf("size %d: %d shards of %d bytes, want %d whole copies", size, len(m.Shards), m.Shards[0].Size, copies)
					}
					// Every copy but one unreadable.
					e.shards.Set(func() {
						for _, s := range m.Shards[1:] {
							e.shards.FailGet[s.Disk] = cairn.ErrNotFound
						}
					})
				}
				if got := e.get(t, key, 0, -1); !bytes.Equal(got, data) {
					t.Fatalf("size %d: read back differs", size)
				}
				e.shards.Set(func() { e.shards.FailGet = map[cairn.DiskID]error{} })
			}
			// One byte more: the policy's own layout.
			m, err := e.c.Put(ctx, "bkt", "big", bytes.NewReader(randBytes(1, DefaultSmallObject+1)), PutOptions{Size: -1})
			if err != nil || m.Code != "" {
				t.Fatalf("an object past the threshold: code %q, %v", m.Code, err)
			}
			// A small part keeps the policy (a manifest's parts share one code).
			u, err := e.c.CreateUpload(ctx, "bkt", "mp", PutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			part, err := e.c.UploadPart(ctx, "bkt", "mp", u.ID, 1, strings.NewReader("tiny"), PutOptions{Size: 4})
			if err != nil || part.Code != "" {
				t.Fatalf("a small part: code %q, %v", part.Code, err)
			}
		})
	}
	t.Run("disabled", func(t *testing.T) {
		e := newEnv(t, 6, 1, "rs-4-2", Config{SmallObject: -1})
		m, err := e.c.Put(context.Background(), "bkt", "k", strings.NewReader("x"), PutOptions{Size: 1})
		if err != nil || m.Code != "" || len(m.Shards) != 6 {
			t.Fatalf("SmallObject −1: code %q, %d shards, %v", m.Code, len(m.Shards), err)
		}
	})
	t.Run("too few disks", func(t *testing.T) {
		e := newEnv(t, 2, 1, "rs-4-2", Config{})
		_, err := e.c.Put(context.Background(), "bkt", "k", strings.NewReader("x"), PutOptions{Size: 1})
		if !errors.Is(err, cairn.ErrUnavailable) {
			t.Fatalf("3 replicas on 2 disks: %v, want ErrUnavailable", err)
		}
	})
}

// TestTolerance: the losses every stripe survives, which sets the
// replicas of a small object: M for MDS codes, and for LRC what every
// loss pattern allows (LRC(12,2,2) decodes every 3 losses, not every 4).
func TestTolerance(t *testing.T) {
	for policy, want := range map[string]int{"rs-4-2": 2, "rs-10-4": 4, "clay-4-2-5": 2, "rep-3": 2,
		"lrc-12-2-2": 3, "lrc-6-2-2": 3, "lrc-4-2-1": 2} {
		code, err := all.New(policy)
		if err != nil {
			t.Fatal(err)
		}
		if got := tolerance(code); got != want {
			t.Errorf("%s: tolerance %d, want %d", policy, got, want)
		}
	}
}

// The ring of stripes a PUT holds for spares' catch-up covers the spare
// window, but never more stripes than the object has: a one-byte object
// once held a ring of 16 M slots (64 MiB of 4-byte stripes).
func TestSpareWindowStripes(t *testing.T) {
	tests := []struct {
		window  int64
		data    int
		stripes int64
		want    int
	}{
		{64 << 20, 4 << 20, -1, 16},
		{64 << 20, 4 << 20, 3, 3},
		{64 << 20, 4, 1, 1},
		{64 << 20, 4, -1, 16 << 20},
		{0, 4 << 20, 5, 0},
		{-1, 4 << 20, 5, 0},
	}
	for _, tt := range tests {
		if got := spareWindowStripes(tt.window, tt.data, tt.stripes); got != tt.want {
			t.Errorf("spareWindowStripes(%d, %d, %d) = %d, want %d", tt.window, tt.data, tt.stripes, got, tt.want)
		}
	}
}
