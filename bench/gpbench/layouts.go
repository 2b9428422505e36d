package gpbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"

	"golang.org/x/sync/errgroup"

	"cairn/cold"
	"cairn/layout/gp"
)

// The paper's baseline layouts on the nodes, for the degraded read: each
// keeps its chunks in the slots of a cold.Group of one chunk size (a
// geometry with s0 = cap), so its reads, repairs and helper-read
// coalescing are cold's, the same as Geometric Partitioning's.

// layouts writes the sampled objects idx in the Stripe-Max layout (each on
// its Geometric Partitioning group's disks) and, with nr.Contiguous, in the
// Contiguous layout (packed, on the first group's disks).
func (nr NodeRun) layouts(ctx context.Context, nc NodeCode, groups []*member, home, idx []int) ([]*stripeMax, *contiguous, error) {
	var sm []*stripeMax
	var objs [][]byte
	for _, j := range idx {
		g := groups[home[j]].g
		data := objectData(j, nr.Sizes[j])
		s, err := putStripeMax(ctx, fmt.Sprintf("bench-stripemax-%s-%d", nc.Code, j), g, data)
		if err != nil {
			return nil, nil, fmt.Errorf("stripe-max: %w", err)
		}
		sm = append(sm, s)
		objs = append(objs, data)
	}
	if nr.Contiguous <= 0 {
		return sm, nil, nil
	}
	lead := rand.New(rand.NewPCG(uint64(len(idx)), 0x636f)).Int64N(nr.Contiguous)
	con, err := putContiguous(ctx, "bench-contiguous-"+nc.Code, groups[0].g, nr.Contiguous, lead, objs)
	if err != nil {
		return nil, nil, fmt.Errorf("contiguous: %w", err)
	}
	return sm, con, nil
}

// stripeMax is one object in the Stripe-Max layout: one stripe whose K
// data strips are the object cut in K (size/K, rounded up to the code's
// shard multiple), strip d on data disk d.
type stripeMax struct {
	g    *cold.Group
	size int64
}

// putStripeMax writes data as one stripe on like's disks, coded with its
// chunk code.
func putStripeMax(ctx context.Context, id string, like *cold.Group, data []byte) (*stripeMax, error) {
	p := like.Clay.Params()
	size := int64(len(data))
	unit := int64(p.ShardMultiple)
	strip := (size + int64(p.K) - 1) / int64(p.K)
	strip = max(unit, (strip+unit-1)/unit*unit)
	geo, err := gp.NewGeometry(strip, 2, strip)
	if err != nil {
		return nil, err
	}
	g, err := cold.NewGroup(id, geo, like.Disks, like.Nodes, like.Clay, like.RS)
	if err != nil {
		return nil, err
	}
	g.Gap = like.Gap
	shards := make([][]byte, p.N())
	for d := range p.K {
		shards[d] = make([]byte, strip)
		copy(shards[d], data[min(size, int64(d)*strip):min(size, int64(d+1)*strip)])
	}
	if err := like.Clay.Encode(shards); err != nil {
		return nil, err
	}
	if err := putSlots(ctx, g, g.PG.Stripe(0, 0), shards); err != nil {
		return nil, err
	}
	return &stripeMax{g: g, size: size}, nil
}

// read writes bytes [off, off+n) of the object to w, fetching the parts
// of every strip the range touches at once and sending them in order; the
// strip on data disk lost (−1: none) is rebuilt whole by the code's repair
// from the other disks, which serve their own strips at the same time.
func (s *stripeMax) read(ctx context.Context, off, n int64, lost int, w io.Writer) error {
	row := s.g.PG.Stripe(0, 0)
	strip := row[0].Length
	var locs []gp.Location
	for d, l := range row[:s.g.PG.K] {
		lo, hi := max(off, int64(d)*strip), min(off+n, int64(d+1)*strip)
		if lo < hi {
			l.Offset, l.Length = lo-int64(d)*strip, hi-lo
			locs = append(locs, l)
		}
	}
	return readPieces(ctx, s.g, locs, available(len(row), lost), len(locs), w)
}

// readStripe is read as the paper's system reads a striped object: the
// stripe is the unit of decode, so nothing of it is sent before every
// strip the range touches has arrived (the lost one rebuilt). A Stripe-Max
// object is one stripe, so a degraded read sends only after its repair.
// It fetches only the strips the range touches (the paper's reader read
// the whole object), which can only favour Stripe-Max.
func (s *stripeMax) readStripe(ctx context.Context, off, n int64, lost int, w io.Writer) error {
	var stripe bytes.Buffer
	stripe.Grow(int(n))
	if err := s.read(ctx, off, n, lost, &stripe); err != nil {
		return err
	}
	_, err := w.Write(stripe.Bytes())
	return err
}

// contiguous is objects packed one after another into chunks of c bytes
// (after a lead-in of other data): chunk i of the stream is slot i/K of
// data disk i mod K, and the K chunks of a slot row form one stripe.
type contiguous struct {
	g           *cold.Group
	c           int64
	start, size []int64 // object i's offset in the stream and its length
}

// putContiguous packs objs into chunks of c bytes on like's disks from
// offset lead of the stream, coded with like's chunk code.
func putContiguous(ctx context.Context, id string, like *cold.Group, c, lead int64, objs [][]byte) (*contiguous, error) {
	geo, err := gp.NewGeometry(c, 2, c)
	if err != nil {
		return nil, err
	}
	g, err := cold.NewGroup(id, geo, like.Disks, like.Nodes, like.Clay, like.RS)
	if err != nil {
		return nil, err
	}
	g.Gap = like.Gap
	con := &contiguous{g: g, c: c}
	pos := lead
	for _, o := range objs {
		con.start = append(con.start, pos)
		con.size = append(con.size, int64(len(o)))
		pos += int64(len(o))
	}
	k := int64(g.PG.K)
	for row := int64(0); row*k*c < pos; row++ {
		shards := make([][]byte, g.PG.K+g.PG.M)
		for d := range k {
			shards[d] = make([]byte, c)
			lo := (row*k + d) * c
			for i, o := range objs { // copy the parts of objects in [lo, lo+c)
				a, b := max(lo, con.start[i]), min(lo+c, con.start[i]+con.size[i])
				if a < b {
					copy(shards[d][a-lo:], o[a-con.start[i]:b-con.start[i]])
				}
			}
		}
		if err := like.Clay.Encode(shards); err != nil {
			return nil, err
		}
		if err := putSlots(ctx, g, g.PG.Stripe(0, uint32(row)), shards); err != nil {
			return nil, err
		}
	}
	return con, nil
}

// read writes bytes [off, off+n) of object i to w, chunk range after
// chunk range, one fetched while the one before is sent; degraded loses
// the disk of the object's first chunk, whose chunks are then rebuilt
// whole.
func (con *contiguous) read(ctx context.Context, i int, off, n int64, degraded bool, w io.Writer) error {
	k := int64(con.g.PG.K)
	first := con.start[i] / con.c
	var locs []gp.Location
	for pos := con.start[i] + off; pos < con.start[i]+off+n; {
		ch := pos / con.c
		b := min(con.c-pos%con.c, con.start[i]+off+n-pos)
		locs = append(locs, gp.Location{Disk: int(ch % k), File: gp.BucketFile(0), Offset: ch/k*con.c + pos%con.c, Length: b})
		pos += b
	}
	lost := -1
	if degraded {
		lost = int(first % k)
	}
	return readPieces(ctx, con.g, locs, available(con.g.PG.K+con.g.PG.M, lost), 2, w)
}

// available returns n disks' availability with lost (−1: none) gone.
func available(n, lost int) []bool {
	a := make([]bool, n)
	for d := range a {
		a[d] = d != lost
	}
	return a
}

// putSlots writes shards[d] into slot locs[d] of g, all at once.
func putSlots(ctx context.Context, g *cold.Group, locs []gp.Location, shards [][]byte) error {
	eg, ctx := errgroup.WithContext(ctx)
	for d, l := range locs {
		eg.Go(func() error { return g.PutSlot(ctx, l, shards[d]) })
	}
	return eg.Wait()
}

// readPieces writes the bytes of locs to w in order, with up to ahead of
// them fetched (read, or rebuilt when their disk is unavailable) at once
// ahead of the one being sent.
func readPieces(ctx context.Context, g *cold.Group, locs []gp.Location, avail []bool, ahead int, w io.Writer) error {
	eg, ctx := errgroup.WithContext(ctx)
	got := make([]chan []byte, len(locs))
	for i := range got {
		got[i] = make(chan []byte, 1)
	}
	slots := make(chan struct{}, max(1, ahead))
	eg.Go(func() error {
		for i, l := range locs {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			eg.Go(func() error {
				b, err := g.ReadRange(ctx, l, avail)
				if err != nil {
					return err
				}
				got[i] <- b
				return nil
			})
		}
		return nil
	})
	eg.Go(func() error {
		for i := range locs {
			select {
			case b := <-got[i]:
				if _, err := w.Write(b); err != nil {
					return err
				}
				<-slots
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	return eg.Wait()
}
