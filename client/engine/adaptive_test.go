package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"cairn/internal/golden"
)

// checkedAdaptive drives an AdaptiveRead for sim and asserts, action by
// action, the rules its doc comment promises: a disk never has more than
// Depth requests outstanding, is never asked for one block twice, gets
// nothing after it failed a request; no block is asked for once it
// arrived; a Cancel names an outstanding request; Done comes with Need
// distinct blocks, Fail wraps ErrUnavailable, both leave nothing
// outstanding and are the last action; late answers get nil.
type checkedAdaptive struct {
	t       *testing.T
	r       *AdaptiveRead
	cfg     AdaptiveConfig
	open    map[ReqID]Action
	perDisk map[int]int
	asked   map[Loc]bool
	bad     map[int]bool
	arrived map[int]bool
	ended   bool
}

func newCheckedAdaptive(t *testing.T, cfg AdaptiveConfig) *checkedAdaptive {
	t.Helper()
	r, err := NewAdaptiveRead(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Depth <= 0 {
		cfg.Depth = 1
	}
	return &checkedAdaptive{t: t, r: r, cfg: cfg, open: map[ReqID]Action{}, perDisk: map[int]int{},
		asked: map[Loc]bool{}, bad: map[int]bool{}, arrived: map[int]bool{}}
}

func (c *checkedAdaptive) Start(now time.Duration) []Action { return c.check(c.r.Start(now)) }

func (c *checkedAdaptive) Tick(now time.Duration) []Action { return c.check(c.r.Tick(now)) }

func (c *checkedAdaptive) Arrived(id ReqID, ok bool, now time.Duration) []Action {
	a, outstanding := c.open[id]
	acts := c.r.Arrived(id, ok, now)
	if !outstanding {
		if acts != nil {
			c.t.Fatalf("late answer for r%d: %v", id, acts)
		}
		return nil
	}
	delete(c.open, id)
	c.perDisk[a.Disk]--
	if ok {
		c.arrived[a.Block] = true
	} else {
		c.bad[a.Disk] = true
	}
	return c.check(acts)
}

func (c *checkedAdaptive) check(acts []Action) []Action {
	c.t.Helper()
	for _, a := range acts {
		if c.ended {
			c.t.Fatalf("%v after the read ended", a)
		}
		switch a.Kind {
		case Send:
			l := Loc{Block: a.Block, Disk: a.Disk}
			switch {
			case c.asked[l]:
				c.t.Fatalf("%v: block asked of the disk twice", a)
			case c.bad[a.Disk]:
				c.t.Fatalf("%v: the disk failed a request", a)
			case c.arrived[a.Block]:
				c.t.Fatalf("%v: the block arrived already", a)
			case c.perDisk[a.Disk] >= c.cfg.Depth:
				c.t.Fatalf("%v: the disk has %d outstanding, depth %d", a, c.perDisk[a.Disk], c.cfg.Depth)
			case !slices.Contains(c.cfg.Blocks, l):
				c.t.Fatalf("%v: the disk holds no copy of the block", a)
			}
			c.asked[l] = true
			c.perDisk[a.Disk]++
			c.open[a.Req] = a
		case Cancel:
			if _, ok := c.open[a.Req]; !ok {
				c.t.Fatalf("%v: not outstanding", a)
			}
			delete(c.open, a.Req)
			c.perDisk[a.Disk]--
		case Done:
			if len(c.arrived) < c.cfg.Need {
				c.t.Fatalf("done with %d of %d blocks", len(c.arrived), c.cfg.Need)
			}
			c.ended = true
		case Fail:
			if !errors.Is(a.Err, ErrUnavailable) {
				c.t.Fatalf("fail: %v, want ErrUnavailable", a.Err)
			}
			c.ended = true
		}
	}
	if c.ended && len(c.open) > 0 {
		c.t.Fatalf("the read ended with %d requests outstanding", len(c.open))
	}
	if !c.ended && len(c.open) == 0 {
		c.t.Fatal("nothing outstanding and the read did not end")
	}
	if got, want := len(c.r.Have()), len(c.arrived); got != want {
		c.t.Fatalf("Have() lists %d blocks, %d distinct arrived", got, want)
	}
	return acts
}

// replicated lays out blocks with copies: copy c of block b on disk
// (b+c) % disks; all primaries (c = 0) are listed first.
func replicated(blocks, copies, disks int) []Loc {
	var out []Loc
	for c := range copies {
		for b := range blocks {
			out = append(out, Loc{Block: b, Disk: (b + c) % disks})
		}
	}
	return out
}

// distinct reports whether blocks holds at least n distinct IDs.
func distinct(n int) func([]int) bool {
	return func(blocks []int) bool {
		s := slices.Clone(blocks)
		slices.Sort(s)
		return len(slices.Compact(s)) >= n
	}
}

// RRAID-A (RobuSTore §4.1.1, Figure 7b): 8 blocks, 2 copies, 4 disks, disk
// 2 10× slower. The fast disks read their own blocks, then disk 3 reads
// disk 2's blocks from their second copies — first the one disk 2 has not
// started, then the one it is still reading. The read is done long before
// disk 2 could have served its share, and disk 2's request is cancelled.
func TestAdaptiveReadFastDisksTakeOver(t *testing.T) {
	c := newCheckedAdaptive(t, AdaptiveConfig{Blocks: replicated(8, 2, 4), Need: 8})
	d := disks(10*ms, 10*ms, 100*ms, 10*ms)
	res := sim(t, c, d, c.Arrived, 5*ms)
	golden.Check(t, "adaptive_read.txt", res.trace.String())
	if res.failed != nil {
		t.Fatal(res.failed)
	}
	if share := 2 * d[2].service; res.done >= share/2 {
		t.Fatalf("read took %v; disk 2 alone needs %v for its share", res.done, share)
	}
	if got := c.r.Have(); len(got) != 8 {
		t.Fatalf("have %v, want all 8 blocks", got)
	}
	slowCancelled := false
	for id, a := range res.sent {
		if a.Disk == 2 {
			if res.completed[id] {
				t.Fatalf("disk 2 served %v", a)
			}
			slowCancelled = true
		}
	}
	if !slowCancelled {
		t.Fatal("disk 2's request was not cancelled")
	}
}

// RRAID-A against RRAID-S (Read with Initial 0: every copy requested at
// once) on the same layout and disks: the adaptive read asks for fewer
// blocks and is not much slower.
func TestAdaptiveReadLessIOThanSpeculative(t *testing.T) {
	for _, slow := range []time.Duration{10 * ms, 100 * ms, 1000 * ms} {
		t.Run(fmt.Sprint(slow), func(t *testing.T) {
			layout := replicated(8, 2, 4)
			c := newCheckedAdaptive(t, AdaptiveConfig{Blocks: layout, Need: 8})
			ares := sim(t, c, disks(10*ms, 10*ms, slow, 10*ms), c.Arrived, 5*ms)
			s, err := NewRead(ReadConfig{Blocks: layout, Decodable: distinct(8)})
			if err != nil {
				t.Fatal(err)
			}
			sres := sim(t, s, disks(10*ms, 10*ms, slow, 10*ms), s.Arrived, 5*ms)
			if ares.failed != nil || sres.failed != nil {
				t.Fatalf("adaptive: %v, speculative: %v", ares.failed, sres.failed)
			}
			t.Logf("adaptive: %d requests, %v; speculative: %d requests, %v",
				len(ares.sent), ares.done, len(sres.sent), sres.done)
			if len(ares.sent) >= len(sres.sent) {
				t.Errorf("adaptive sent %d requests, speculative %d", len(ares.sent), len(sres.sent))
			}
			if ares.done > 2*sres.done {
				t.Errorf("adaptive took %v, speculative %v", ares.done, sres.done)
			}
		})
	}
}

// Depth 2: each disk keeps two requests outstanding and the queue feeds
// the rest; the fast disk takes over the slow one's unstarted blocks.
func TestAdaptiveReadDepth(t *testing.T) {
	c := newCheckedAdaptive(t, AdaptiveConfig{Blocks: replicated(8, 2, 2), Need: 8, Depth: 2})
	res := sim(t, c, disks(10*ms, 100*ms), c.Arrived, 5*ms)
	golden.Check(t, "adaptive_read_depth2.txt", res.trace.String())
	if res.failed != nil {
		t.Fatal(res.failed)
	}
	if res.done > 100*ms {
		t.Fatalf("read took %v", res.done)
	}
}

// A disk's own queue skips a block an idle disk took over: disk 0, done
// with its own blocks at 30ms, takes block 3 from slow disk 1's queue, so
// disk 1 goes on to block 5 instead of asking for block 3 a second time.
func TestAdaptiveReadQueueSkipsTakenBlocks(t *testing.T) {
	c := newCheckedAdaptive(t, AdaptiveConfig{Blocks: replicated(6, 2, 2), Need: 6})
	res := sim(t, c, disks(10*ms, 35*ms), c.Arrived, 5*ms)
	golden.Check(t, "adaptive_read_queue_skip.txt", res.trace.String())
	if res.failed != nil {
		t.Fatal(res.failed)
	}
	if c.asked[Loc{Block: 3, Disk: 1}] {
		t.Fatal("disk 1 asked for block 3, which disk 0 was fetching")
	}
}

// A disk whose requests fail: its blocks come from their other copies.
// With both copies of a block on failing disks the read fails with
// ErrUnavailable.
func TestAdaptiveReadFailures(t *testing.T) {
	c := newCheckedAdaptive(t, AdaptiveConfig{Blocks: replicated(8, 2, 4), Need: 8})
	d := disks(10*ms, 10*ms, 10*ms, 10*ms)
	d[1].fail = true
	res := sim(t, c, d, c.Arrived, 5*ms)
	if res.failed != nil {
		t.Fatal(res.failed)
	}
	if got := c.r.Have(); len(got) != 8 {
		t.Fatalf("have %v, want all 8 blocks", got)
	}
	asked := 0
	for _, a := range res.sent {
		if a.Disk == 1 {
			asked++
		}
	}
	if asked != 1 {
		t.Fatalf("disk 1 was asked %d times, want once (it failed its first request)", asked)
	}

	c = newCheckedAdaptive(t, AdaptiveConfig{Blocks: replicated(8, 2, 4), Need: 8})
	d = disks(10*ms, 10*ms, 10*ms, 10*ms)
	d[1].fail, d[2].fail = true, true // both copies of block 1 (and of 5)
	res = sim(t, c, d, c.Arrived, 5*ms)
	if !errors.Is(res.failed, ErrUnavailable) {
		t.Fatalf("both copies of a block failing: %v, want ErrUnavailable", res.failed)
	}
	t.Log(res.failed)

	// Need fewer than all: the same failures cost only blocks 1 and 5.
	c = newCheckedAdaptive(t, AdaptiveConfig{Blocks: replicated(8, 2, 4), Need: 6})
	d = disks(10*ms, 10*ms, 10*ms, 10*ms)
	d[1].fail, d[2].fail = true, true
	res = sim(t, c, d, c.Arrived, 5*ms)
	if res.failed != nil {
		t.Fatalf("6 of 8 with blocks 1 and 5 lost: %v", res.failed)
	}
	if h := c.r.Have(); slices.Contains(h, 1) || slices.Contains(h, 5) {
		t.Fatalf("have %v: a lost block arrived", h)
	}
}

// Random layouts, speeds, failures and depths: the read always ends, obeys
// the rules checkedAdaptive asserts, and succeeds exactly when Need blocks
// have a copy on a disk that does not fail.
func TestAdaptiveReadRandom(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			nDisks := 1 + rng.IntN(8)
			nBlocks := 1 + rng.IntN(20)
			d := make([]*simDisk, nDisks)
			for i := range d {
				d[i] = &simDisk{service: time.Duration(1+rng.IntN(100)) * ms, fail: rng.IntN(5) == 0}
			}
			var layout []Loc
			copies := make([][]int, nBlocks)
			for b := range nBlocks {
				copies[b] = rng.Perm(nDisks)[:1+rng.IntN(min(3, nDisks))]
			}
			for c := range 3 { // primaries first, then second copies, …
				for b := range nBlocks {
					if c < len(copies[b]) {
						layout = append(layout, Loc{Block: b, Disk: copies[b][c]})
					}
				}
			}
			cfg := AdaptiveConfig{Blocks: layout, Need: 1 + rng.IntN(nBlocks), Depth: rng.IntN(4)}
			obtainable := 0
			for b := range nBlocks {
				if slices.ContainsFunc(copies[b], func(disk int) bool { return !d[disk].fail }) {
					obtainable++
				}
			}
			c := newCheckedAdaptive(t, cfg)
			res := sim(t, c, d, c.Arrived, 5*ms)
			if want := obtainable >= cfg.Need; (res.failed == nil) != want {
				t.Fatalf("%+v on %d disks: %d blocks obtainable, got %v", cfg, nDisks, obtainable, res.failed)
			}
		})
	}
}

func TestAdaptiveReadConfigErrors(t *testing.T) {
	two := []Loc{{Block: 0, Disk: 0}, {Block: 1, Disk: 1}, {Block: 0, Disk: 1}}
	for _, cfg := range []AdaptiveConfig{
		{},
		{Blocks: two, Need: 0},
		{Blocks: two, Need: -1},
		{Blocks: two, Need: 3},
		{Blocks: []Loc{{Block: 0, Disk: -1}}, Need: 1},
		{Blocks: []Loc{{Block: 0, Disk: 2}, {Block: 0, Disk: 2}}, Need: 1},
	} {
		if _, err := NewAdaptiveRead(cfg); err == nil {
			t.Errorf("NewAdaptiveRead(%+v) accepted", cfg)
		}
	}
	if _, err := NewAdaptiveRead(AdaptiveConfig{Blocks: two, Need: 2}); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

// Late answers to cancelled requests, unknown IDs and answers after the
// read ended return nil; a second Start does nothing.
func TestAdaptiveReadLateAndUnknownAnswers(t *testing.T) {
	r, err := NewAdaptiveRead(AdaptiveConfig{Blocks: replicated(2, 2, 2), Need: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Arrived(0, true, 0); got != nil {
		t.Fatalf("answer before Start: %v", got)
	}
	acts := r.Start(0) // r0: disk0 block0, r1: disk1 block1
	if len(acts) != 2 {
		t.Fatalf("start: %v", acts)
	}
	if got := r.Start(0); got != nil {
		t.Fatalf("second start: %v", got)
	}
	acts = r.Arrived(0, true, 10*ms) // disk 0 is idle: it helps with block 1
	if want := (Action{Kind: Send, Req: 2, Disk: 0, Block: 1}); len(acts) != 1 || acts[0] != want {
		t.Fatalf("disk 0 idle: %v, want %v", acts, want)
	}
	acts = r.Arrived(2, true, 15*ms)
	if len(acts) != 2 || acts[0] != (Action{Kind: Cancel, Req: 1, Disk: 1, Block: 1}) || acts[1].Kind != Done {
		t.Fatalf("block 1 from disk 0: %v, want cancel r1 and done", acts)
	}
	for _, id := range []ReqID{1, 2, 99, -1} {
		if got := r.Arrived(id, true, 20*ms); got != nil {
			t.Fatalf("answer r%d after done: %v", id, got)
		}
	}
	if got := r.Tick(20 * ms); got != nil {
		t.Fatalf("tick: %v", got)
	}
	if got := r.Have(); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("have %v", got)
	}
}
