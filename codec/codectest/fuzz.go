package codectest

import (
	"bytes"
	"errors"
	"testing"

	"cairn/codec"
)

// Fuzz is a fuzz target for Reconstruct (and RepairPlan, for linear codes)
// with arbitrary shard sets: any subset of shards present, some truncated or
// lengthened, arbitrary want lists including bad indices. The code must
// never panic; it either succeeds with correct shards or returns one of
// codec's documented errors, leaving present shards untouched.
//
// Input layout: byte 0 flags (bit 0: want given, bit 1: corrupt one size);
// bytes 1..N: shard i present iff the byte is odd; the byte after is the
// shard to resize; the rest are want indices as int8.
func Fuzz(f *testing.F, c codec.Code) {
	p := c.Params()
	n := p.N()
	orig := Stripe(f, c, Rand(f), 2*max(p.ShardMultiple, 1)*max(1, 64/max(p.ShardMultiple, 1)))
	seed := func(flags byte, present []byte, resize byte, want ...byte) {
		in := append([]byte{flags}, present...)
		in = append(in, resize)
		f.Add(append(in, want...))
	}
	all := bytes.Repeat([]byte{1}, n)
	seed(0, all, 0)
	lose := bytes.Repeat([]byte{1}, n)
	for i := 0; i < p.M && i < n; i++ {
		lose[i] = 0
	}
	seed(0, lose, 0)
	seed(1, lose, 0, 0, byte(n-1), 200)
	seed(2, lose, byte(n-1))
	seed(3, make([]byte, n), 0, 0)

	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 1+n+1 {
			return
		}
		flags := in[0]
		shards := make([][]byte, n)
		for i := range n {
			if in[1+i]%2 == 1 {
				shards[i] = bytes.Clone(orig[i])
			}
		}
		resize := int(in[1+n]) % n
		if flags&2 != 0 && len(shards[resize]) > 0 {
			shards[resize] = shards[resize][:len(shards[resize])-1]
		}
		var want []int
		if flags&1 != 0 {
			want = []int{}
			for _, b := range in[2+n:] {
				want = append(want, int(int8(b)))
			}
		}
		before := make([][]byte, n)
		for i, s := range shards {
			before[i] = bytes.Clone(s)
		}
		err := c.Reconstruct(shards, want)
		if err != nil {
			if !isCodecError(err) {
				t.Fatalf("reconstruct returned an undocumented error: %v", err)
			}
			for i, s := range before {
				if len(s) > 0 && !bytes.Equal(shards[i], s) {
					t.Fatalf("failed reconstruct (%v) modified shard %d", err, i)
				}
			}
		} else if flags&2 == 0 {
			for i, s := range shards {
				if len(s) > 0 && !bytes.Equal(s, orig[i]) {
					t.Fatalf("reconstruct succeeded but shard %d is wrong", i)
				}
			}
		}
		if lr, ok := c.(codec.LinearRepairer); ok && want != nil {
			plan, err := lr.RepairPlan(want, codec.Present(before))
			if err != nil {
				if !isCodecError(err) {
					t.Fatalf("repair plan returned an undocumented error: %v", err)
				}
				return
			}
			if flags&2 != 0 {
				return
			}
			helpers := make([][]byte, len(plan.Helpers))
			for i, h := range plan.Helpers {
				helpers[i] = before[h]
			}
			out := make([][]byte, len(plan.Lost))
			for j := range out {
				out[j] = make([]byte, len(orig[0]))
			}
			if err := plan.Repair(helpers, out); err != nil {
				t.Fatalf("repair: %v", err)
			}
			for j, l := range plan.Lost {
				if !bytes.Equal(out[j], orig[l]) {
					t.Fatalf("repair plan rebuilt shard %d wrong", l)
				}
			}
		}
	})
}

func isCodecError(err error) bool {
	for _, e := range []error{codec.ErrShardCount, codec.ErrShardSize, codec.ErrShardIndex, codec.ErrUndecodable, codec.ErrInvalidParams} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
