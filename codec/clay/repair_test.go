package clay

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"cairn/codec"
	"cairn/codec/codectest"
)

// poisoned returns a copy of each helper's planned bytes, gathered from
// the stripe, each in its own exactly-sized window (cap = len) of a larger
// arena whose every other byte is garbage: a repair that reads outside the
// plan either panics (out of the window) or gets garbage.
func poisoned(rng *rand.Rand, plan *codec.SubChunkPlan, shards [][]byte) [][]byte {
	reads := make([][]byte, len(plan.Helpers))
	for i, h := range plan.Helpers {
		arena := randBytes(rng, h.Bytes()+2*64)
		win := arena[64 : 64+h.Bytes() : 64+h.Bytes()]
		copy(win, h.Gather(nil, shards[h.Shard]))
		reads[i] = win
	}
	return reads
}

// Issue 3: the repair never touches a byte it did not ask for. Each helper
// hands over only the concatenation of its planned runs (everything else
// absent or poisoned); the lost shard comes back exactly, and the helper
// buffers are not modified.
func TestSubChunkRepairReadsOnlyPlannedBytes(t *testing.T) {
	rng := codectest.Rand(t)
	codes := [][3]int{{4, 2, 5}, {6, 3, 8}, {10, 4, 13}, {10, 4, 12}, {5, 4, 7}, {3, 3, 4}, {4, 3, 5}, {1, 2, 2}}
	if !testing.Short() {
		codes = append(codes, [3]int{12, 4, 15}, [3]int{8, 4, 11}, [3]int{7, 4, 9})
	}
	for _, p := range codes {
		c := mustNew(t, p[0], p[1], p[2])
		t.Run(c.Policy().String(), func(t *testing.T) {
			g := &c.g
			n := g.k + g.m
			for _, sc := range []int{1, 3, 64, 2*stripBytes + 17} {
				if sc > stripBytes && (g.alpha > 16 || testing.Short()) {
					continue // strips: small α only
				}
				size := g.alpha * sc
				orig := codectest.Stripe(t, c, rng, size)
				for lost := range n {
					avail := others(n, lost)
					rng.Shuffle(len(avail), func(i, j int) { avail[i], avail[j] = avail[j], avail[i] })
					// The shuffled preference order varies which shards
					// are helpers and which are aloof.
					plan, err := c.SubChunkPlan(lost, avail, size)
					if err != nil {
						t.Fatal(err)
					}
					if plan.ReadBytes() != g.d*g.beta*sc {
						t.Fatalf("lost %d: plan reads %d bytes, want d·β·sc", lost, plan.ReadBytes())
					}
					reads := poisoned(rng, plan, orig)
					before := make([][]byte, len(reads))
					for i, r := range reads {
						before[i] = bytes.Clone(r)
					}
					out := randBytes(rng, size) // Repair overwrites
					if err := plan.Repair(reads, out); err != nil {
						t.Fatalf("lost %d: %v", lost, err)
					}
					if !bytes.Equal(out, orig[lost]) {
						t.Fatalf("sc %d lost %d from %v: repaired shard differs", sc, lost, avail)
					}
					for i := range reads {
						if !bytes.Equal(reads[i], before[i]) {
							t.Fatalf("lost %d: repair modified helper %d's buffer", lost, plan.Helpers[i].Shard)
						}
					}
				}
			}
		})
	}
}

// Reconstruct takes the sub-chunk repair path for one wanted shard: with
// every byte outside the plan's runs poisoned (including whole aloof
// shards), it still rebuilds the shard, so it read nothing else.
func TestReconstructOneUsesOnlyRepairBytes(t *testing.T) {
	rng := codectest.Rand(t)
	for _, p := range [][3]int{{4, 2, 5}, {10, 4, 13}, {10, 4, 12}, {5, 4, 7}} {
		c := mustNew(t, p[0], p[1], p[2])
		g := &c.g
		n := g.k + g.m
		size := g.alpha * 16
		orig := codectest.Stripe(t, c, rng, size)
		for lost := range n {
			present := others(n, lost)
			plan, err := c.SubChunkPlan(lost, present, size) // Reconstruct's choice: ascending
			if err != nil {
				t.Fatal(err)
			}
			shards := make([][]byte, n)
			for _, j := range present {
				shards[j] = randBytes(rng, size)
			}
			for _, h := range plan.Helpers {
				for _, r := range h.Runs {
					copy(shards[h.Shard][r.Offset:r.Offset+r.Length], orig[h.Shard][r.Offset:r.Offset+r.Length])
				}
			}
			if err := c.Reconstruct(shards, []int{lost}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(shards[lost], orig[lost]) {
				t.Fatalf("%s lost %d: Reconstruct read bytes outside the repair plan", c.Policy(), lost)
			}
		}
	}
}

// When a column-mate of the lost shard is unavailable (or fewer than d
// shards are), the sub-chunk repair is impossible: the plan degrades to
// reading K whole shards, and still rebuilds the shard from them alone.
func TestSubChunkPlanDegraded(t *testing.T) {
	rng := codectest.Rand(t)
	for _, p := range [][3]int{{4, 2, 5}, {10, 4, 13}, {10, 4, 12}, {6, 3, 8}} {
		c := mustNew(t, p[0], p[1], p[2])
		g := &c.g
		n := g.k + g.m
		size := g.alpha * 8
		orig := codectest.Stripe(t, c, rng, size)
		for lost := range n {
			l := g.node(lost)
			for x := range g.q {
				mate := l/g.q*g.q + x
				if mate == l || g.virtual(mate) {
					continue
				}
				avail := slices.DeleteFunc(others(n, lost), func(j int) bool { return j == g.shard(mate) })
				plan, err := c.SubChunkPlan(lost, avail, size)
				if err != nil {
					t.Fatal(err)
				}
				if len(plan.Helpers) != g.k || plan.ReadBytes() != g.k*size {
					t.Fatalf("%s lost %d without mate %d: %d helpers reading %d bytes, want K whole shards",
						c.Policy(), lost, g.shard(mate), len(plan.Helpers), plan.ReadBytes())
				}
				out := make([]byte, size)
				if err := plan.Repair(poisoned(rng, plan, orig), out); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out, orig[lost]) {
					t.Fatalf("%s lost %d: degraded repair differs", c.Policy(), lost)
				}
			}
		}
		// Fewer than K available: undecodable.
		_, err := c.SubChunkPlan(0, []int{1, 2}[:min(2, g.k-1)], size)
		var ue *codec.UndecodableError
		if !errors.As(err, &ue) || !errors.Is(err, codec.ErrUndecodable) || ue.Op != "repair" {
			t.Fatalf("%s: plan from fewer than K shards = %v, want *UndecodableError", c.Policy(), err)
		}
	}
}

func TestSubChunkPlanErrors(t *testing.T) {
	c := mustNew(t, 4, 2, 5)
	size := 8 * 4
	all := []int{1, 2, 3, 4, 5}
	tests := []struct {
		name  string
		lost  int
		avail []int
		size  int
		want  error
	}{
		{"lost out of range", 6, all, size, codec.ErrShardIndex},
		{"lost negative", -1, all, size, codec.ErrShardIndex},
		{"helper out of range", 0, []int{1, 2, 3, 9}, size, codec.ErrShardIndex},
		{"helper repeated", 0, []int{1, 1, 2, 3}, size, codec.ErrShardIndex},
		{"lost is available", 0, []int{0, 1, 2, 3}, size, codec.ErrShardIndex},
		{"size not a multiple of α", 0, all, size + 1, codec.ErrShardSize},
		{"size zero", 0, all, 0, codec.ErrShardSize},
		{"nothing available", 0, nil, size, codec.ErrUndecodable},
	}
	for _, tc := range tests {
		if _, err := c.SubChunkPlan(tc.lost, tc.avail, tc.size); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	plan, err := c.SubChunkPlan(0, all, size)
	if err != nil {
		t.Fatal(err)
	}
	reads := make([][]byte, len(plan.Helpers))
	for i, h := range plan.Helpers {
		reads[i] = make([]byte, h.Bytes())
	}
	if err := plan.Repair(reads[1:], make([]byte, size)); !errors.Is(err, codec.ErrShardCount) {
		t.Errorf("too few helper buffers: %v", err)
	}
	short := slices.Clone(reads)
	short[2] = short[2][:len(short[2])-1]
	if err := plan.Repair(short, make([]byte, size)); !errors.Is(err, codec.ErrShardSize) {
		t.Errorf("short helper buffer: %v", err)
	}
	if err := plan.Repair(reads, make([]byte, size-1)); !errors.Is(err, codec.ErrShardSize) {
		t.Errorf("short output: %v", err)
	}
}

// Plans are shared: one plan repairs concurrently into different buffers.
func TestSubChunkPlanConcurrent(t *testing.T) {
	rng := codectest.Rand(t)
	c := mustNew(t, 10, 4, 12)
	size := c.g.alpha * 16
	orig := codectest.Stripe(t, c, rng, size)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		lost := g % 14
		plan, err := c.SubChunkPlan(lost, others(14, lost), size)
		if err != nil {
			t.Fatal(err)
		}
		reads := make([][]byte, len(plan.Helpers))
		for i, h := range plan.Helpers {
			reads[i] = h.Gather(nil, orig[h.Shard])
		}
		wg.Go(func() {
			out := make([]byte, size)
			for range 5 {
				if err := plan.Repair(reads, out); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(out, orig[lost]) {
					errs <- fmt.Errorf("lost %d: wrong", lost)
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

// FuzzSubChunkPlan plans and runs repairs for arbitrary lost shards,
// available sets and orders, and shard sizes: it never panics, returns
// only codec errors, and every plan it returns repairs exactly.
//
// Input: byte 0 lost shard, byte 1 sub-chunk size, then available shard
// indices (as int8, so out-of-range and repeated ones occur).
func FuzzSubChunkPlan(f *testing.F) {
	c := mustNew(f, 5, 4, 7) // q=3, α=27, 1 aloof node
	n := 9
	stripes := make([][][]byte, 5) // by sub-chunk size; 0 is invalid
	for sc := 1; sc < len(stripes); sc++ {
		stripes[sc] = codectest.Stripe(f, c, rand.New(rand.NewPCG(uint64(sc), 9)), c.g.alpha*sc)
	}
	f.Add([]byte{0, 1, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{4, 2, 8, 7, 6, 5, 3, 2, 1, 0})
	f.Add([]byte{3, 1, 0, 1, 2, 4, 5})
	f.Add([]byte{2, 0, 1, 3})
	f.Add([]byte{9, 1, 0, 1, 2, 3, 4, 5, 6, 7})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		lost := int(int8(in[0]))
		sc := int(in[1]) % len(stripes)
		var avail []int
		for _, b := range in[2:] {
			avail = append(avail, int(int8(b)))
		}
		plan, err := c.SubChunkPlan(lost, avail, c.g.alpha*sc)
		if err != nil {
			if !isCodecErr(err) {
				t.Fatalf("undocumented error: %v", err)
			}
			return
		}
		shards := stripes[sc]
		for _, h := range plan.Helpers {
			if !slices.Contains(avail, h.Shard) || h.Shard == lost || h.Shard < 0 || h.Shard >= n {
				t.Fatalf("plan reads shard %d, not available", h.Shard)
			}
		}
		reads := make([][]byte, len(plan.Helpers))
		for i, h := range plan.Helpers {
			reads[i] = h.Gather(nil, shards[h.Shard])
		}
		out := make([]byte, plan.ShardSize)
		if err := plan.Repair(reads, out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, shards[lost]) {
			t.Fatalf("lost %d from %v: wrong", lost, avail)
		}
	})
}

func isCodecErr(err error) bool {
	for _, e := range []error{codec.ErrShardCount, codec.ErrShardSize, codec.ErrShardIndex, codec.ErrUndecodable, codec.ErrInvalidParams} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
