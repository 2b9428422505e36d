package codec_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"cairn/codec"
	"cairn/codec/internal/gf"
)

func TestParsePolicy(t *testing.T) {
	good := []string{"rs-10-4", "lrc-12-2-2", "rep-3", "clay-10-4-13", "raidp", "rs-4-2/read=all", "rs-4-2/read=k+0", "lrc-12-2-2/read=k+3"}
	for _, s := range good {
		p, err := codec.ParsePolicy(s)
		if err != nil {
			t.Fatalf("ParsePolicy(%q): %v", s, err)
		}
		if p.String() != s {
			t.Fatalf("ParsePolicy(%q).String() = %q", s, p.String())
		}
	}
	bad := []string{"", "-1", "RS-10-4", "rs--4", "rs-1x-4", "rs-10-", "rs 10 4", "rs-99999999-1", "ß-1",
		"rs-4-2/", "rs-4-2/read=", "rs-4-2/read=some", "rs-4-2/read=k+", "rs-4-2/read=k+256", "rs-4-2/read=k+-1", "rs-4-2/read=k+01", "rs-4-2/write=all", "/read=all"}
	for _, s := range bad {
		if _, err := codec.ParsePolicy(s); !errors.Is(err, codec.ErrInvalidParams) {
			t.Errorf("ParsePolicy(%q) = %v, want ErrInvalidParams", s, err)
		}
	}
	for _, c := range []struct {
		s     string
		all   bool
		extra int
	}{{"rs-4-2", false, -1}, {"rs-4-2/read=all", true, 0}, {"rs-4-2/read=k+2", false, 2}} {
		p, _ := codec.ParsePolicy(c.s)
		if all, extra := p.ReadExtra(); all != c.all || extra != c.extra {
			t.Errorf("%s: ReadExtra() = %v, %d", c.s, all, extra)
		}
	}
}

func TestMulAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 31, 32, 63, 64, 65, 1000, 4096 + 17} {
		src := make([]byte, n)
		dst := make([]byte, n+3) // longer dst: only the first n bytes change
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		for i := range dst {
			dst[i] = byte(rng.Uint32())
		}
		for _, c := range []byte{0, 1, 2, 0x8e, 255} {
			want := bytes.Clone(dst)
			for i := range src {
				want[i] ^= gf.Mul(c, src[i])
			}
			got := bytes.Clone(dst)
			codec.MulAdd(got, src, c)
			if !bytes.Equal(got, want) {
				t.Fatalf("MulAdd len %d c %d wrong", n, c)
			}
			codec.Mul(got, src, c)
			for i := range src {
				if got[i] != gf.Mul(c, src[i]) {
					t.Fatalf("Mul len %d c %d wrong at %d", n, c, i)
				}
			}
		}
	}
}

func TestSplitJoin(t *testing.T) {
	p := codec.Params{K: 4, M: 2, Alpha: 8, ShardMultiple: 8}
	for _, size := range []int{0, 1, 31, 32, 33, 1000} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i)
		}
		shards := codec.Split(p, data)
		want := codec.ShardSize(p, size)
		if len(shards) != 6 || len(shards[0]) != want || want%8 != 0 || want*4 < size {
			t.Fatalf("size %d: %d shards of %d bytes", size, len(shards), len(shards[0]))
		}
		var b bytes.Buffer
		if err := codec.Join(&b, p, shards, size); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), data) {
			t.Fatalf("size %d: join differs", size)
		}
		// Appending to a data shard must not clobber its neighbour.
		_ = append(shards[0], 0xff)
		if size > want && shards[1][0] != data[want] {
			t.Fatalf("size %d: shards share capacity", size)
		}
	}
	shards := codec.Split(p, make([]byte, 100))
	shards[1] = nil
	if err := codec.Join(&bytes.Buffer{}, p, shards, 100); !errors.Is(err, codec.ErrShardSize) {
		t.Fatalf("join with a missing shard: %v", err)
	}
}
