package engine

import (
	"fmt"
	"slices"
	"time"
)

// AdaptiveConfig shapes an adaptive read of replicated blocks.
type AdaptiveConfig struct {
	// Blocks lists every stored copy: Loc{Block: source block ID, Disk: disk index}.
	// Copies of one block are on distinct disks. The first copy listed of each block is its primary.
	Blocks []Loc
	// Need is how many distinct block IDs must arrive (all of them, for a replicated object).
	Need int
	// Depth is the requests one disk may have outstanding (default 1).
	Depth int
}

// AdaptiveRead is the state machine of one adaptive read. Not safe for concurrent use.
//
// It is the RRAID-A access of RobuSTore (§4.1.1, Figure 7b): every disk
// reads the blocks it holds the primary copy of, in the order listed, and
// a disk that has run out of its own blocks — it is idle — is given a
// block that has not arrived yet and of which it holds a copy: first one
// nobody is fetching (the queue of a slow or failed disk), else the one
// fetched for the longest (the straggler it helps most). So disks that
// finish early take over the work of slow ones, and extra requests are
// made only when a disk would otherwise sit idle.
//
// Rules, in full:
//   - A disk has at most Depth requests outstanding and is never asked for
//     one block twice.
//   - Its own queue skips blocks that arrived or that another disk is
//     fetching (an idle disk took them over); they are not lost, the disk
//     may still take them when it is idle.
//   - Among idle candidates, a block with fewer outstanding requests wins,
//     then the one whose latest outstanding request is oldest, then the one
//     listed first.
//   - A block arriving counts once; its other outstanding requests are
//     cancelled at once (they could only duplicate it). When Need distinct
//     blocks have arrived, everything outstanding is cancelled and the
//     read is Done.
//   - A disk that fails a request gets no more requests (its outstanding
//     ones may still deliver); its failed and queued blocks are left to
//     the idle disks holding other copies.
//   - When nothing is outstanding and no disk can be given a block, the
//     read fails with an error wrapping ErrUnavailable.
type AdaptiveRead struct {
	need, depth int
	t           tracker
	ids         []int          // block IDs, in the order first listed
	index       map[int]int    // block ID → index into ids
	blocks      []adaptiveBlk  // by block index
	disks       []*adaptiveDsk // in ascending disk index
	byDisk      map[int]*adaptiveDsk
	asked       map[copyKey]bool // a request was sent for this copy
	open        int              // requests outstanding
	have        []int            // distinct block IDs received, in arrival order
	started     bool
}

// adaptiveBlk is one block (by index) of an adaptive read.
type adaptiveBlk struct {
	arrived bool
	reqs    []*request // every request sent for it
}

// copyKey is a copy of a block: its index (not ID) and its disk.
type copyKey struct{ block, disk int }

// adaptiveDsk is one disk of an adaptive read.
type adaptiveDsk struct {
	index int
	holds []int // block indexes it holds a copy of, in the order listed
	queue []int // block indexes it holds the primary copy of, not yet sent or skipped
	open  int   // requests outstanding
	bad   bool  // it failed a request: it gets no more
	// spent: it had a free slot and nothing to be given. Nothing can be
	// given to it later either, since the blocks it could take (held, not
	// arrived, not yet asked of it) only ever become fewer.
	spent bool
}

// NewAdaptiveRead returns an adaptive read; Start begins it. It does not
// retain cfg.Blocks. Errors: Need < 1, Need above the number of distinct
// block IDs, a negative disk index, or one block listed twice on one disk.
func NewAdaptiveRead(cfg AdaptiveConfig) (*AdaptiveRead, error) {
	r := &AdaptiveRead{need: cfg.Need, depth: max(cfg.Depth, 1),
		index: map[int]int{}, byDisk: map[int]*adaptiveDsk{}, asked: map[copyKey]bool{}}
	seen := map[Loc]bool{}
	for _, l := range cfg.Blocks {
		if l.Disk < 0 {
			return nil, fmt.Errorf("engine: adaptive read: block %d on disk %d", l.Block, l.Disk)
		}
		if seen[l] {
			return nil, fmt.Errorf("engine: adaptive read: block %d listed twice on disk %d", l.Block, l.Disk)
		}
		seen[l] = true
		b, ok := r.index[l.Block]
		if !ok {
			b = len(r.ids)
			r.index[l.Block] = b
			r.ids = append(r.ids, l.Block)
		}
		d := r.byDisk[l.Disk]
		if d == nil {
			d = &adaptiveDsk{index: l.Disk}
			r.byDisk[l.Disk] = d
			r.disks = append(r.disks, d)
		}
		d.holds = append(d.holds, b)
		if !ok {
			d.queue = append(d.queue, b) // the first copy listed is the primary
		}
	}
	if cfg.Need < 1 || cfg.Need > len(r.ids) {
		return nil, fmt.Errorf("engine: adaptive read: need %d of %d distinct blocks", cfg.Need, len(r.ids))
	}
	slices.SortFunc(r.disks, func(a, b *adaptiveDsk) int { return a.index - b.index })
	r.blocks = make([]adaptiveBlk, len(r.ids))
	return r, nil
}

// Start returns the first requests: up to Depth of each disk's own blocks.
// Later calls return nil.
func (r *AdaptiveRead) Start(now time.Duration) []Action {
	if r.started {
		return nil
	}
	r.started = true
	r.fill(now)
	return r.t.flush()
}

// Arrived reports that request id finished: ok means its block arrived
// intact (a missing or corrupt block is !ok). It returns nil for a
// cancelled or unknown request and after Done or Fail.
func (r *AdaptiveRead) Arrived(id ReqID, ok bool, now time.Duration) []Action {
	if r.t.finished {
		return nil
	}
	q := r.t.finish(id, ok, now)
	if q == nil {
		return nil
	}
	r.open--
	d := r.byDisk[q.disk]
	d.open--
	b := r.index[q.block]
	if ok {
		if !r.blocks[b].arrived {
			r.blocks[b].arrived = true
			r.have = append(r.have, q.block)
		}
		if len(r.have) >= r.need {
			r.t.end(nil)
			return r.t.flush()
		}
		for _, o := range r.blocks[b].reqs {
			if o.open {
				r.cancel(o)
			}
		}
	} else {
		d.bad = true
		d.queue = nil
	}
	r.fill(now)
	return r.t.flush()
}

// Tick does nothing: an adaptive read acts only when a request finishes.
// It is there so a driver can treat every machine alike.
func (r *AdaptiveRead) Tick(now time.Duration) []Action { return nil }

// Have returns the distinct block IDs received so far, in the order they
// arrived. The slice is the caller's.
func (r *AdaptiveRead) Have() []int { return slices.Clone(r.have) }

// cancel withdraws outstanding request q, whose block arrived from elsewhere.
func (r *AdaptiveRead) cancel(q *request) {
	r.t.close(q)
	r.open--
	r.byDisk[q.disk].open--
	r.t.out = append(r.t.out, Action{Kind: Cancel, Req: q.id, Disk: q.disk, Block: q.block})
}

// fill gives every disk with a free slot a block — its own next one, or
// as an idle disk one of another's — and fails the read when nothing is
// outstanding afterwards.
func (r *AdaptiveRead) fill(now time.Duration) {
	for _, d := range r.disks {
		for !d.bad && !d.spent && d.open < r.depth {
			b, ok := r.own(d)
			if !ok {
				b, ok = r.idle(d)
			}
			if !ok {
				d.spent = true
				break
			}
			r.send(d, b, now)
		}
	}
	if r.open == 0 {
		missing := 0
		for b := range r.blocks {
			if !r.blocks[b].arrived {
				missing = r.ids[b]
				break
			}
		}
		r.t.end(fmt.Errorf("%w: adaptive read: %d of %d blocks arrived, no copy of block %d left to ask for",
			ErrUnavailable, len(r.have), r.need, missing))
	}
}

// own pops d's next own block that is still wanted from it.
func (r *AdaptiveRead) own(d *adaptiveDsk) (int, bool) {
	for len(d.queue) > 0 {
		b := d.queue[0]
		d.queue = d.queue[1:]
		if !r.blocks[b].arrived && !r.asked[copyKey{b, d.index}] && r.fetching(b) == 0 {
			return b, true
		}
	}
	return 0, false
}

// idle picks the block idle disk d helps with (see AdaptiveRead).
func (r *AdaptiveRead) idle(d *adaptiveDsk) (int, bool) {
	best, bestN, bestLast := -1, 0, (*request)(nil)
	for _, b := range d.holds {
		if r.blocks[b].arrived || r.asked[copyKey{b, d.index}] {
			continue
		}
		n, last := 0, (*request)(nil)
		for _, q := range r.blocks[b].reqs {
			if q.open {
				n++
				last = q // reqs are in the order sent
			}
		}
		if n == 0 {
			return b, true // nobody is fetching it
		}
		if best < 0 || n < bestN || n == bestN && last.sent < bestLast.sent {
			best, bestN, bestLast = b, n, last
		}
	}
	return best, best >= 0
}

// fetching counts block b's outstanding requests.
func (r *AdaptiveRead) fetching(b int) int {
	n := 0
	for _, q := range r.blocks[b].reqs {
		if q.open {
			n++
		}
	}
	return n
}

func (r *AdaptiveRead) send(d *adaptiveDsk, b int, now time.Duration) {
	q := r.t.send(d.index, r.ids[b], now)
	r.blocks[b].reqs = append(r.blocks[b].reqs, q)
	r.asked[copyKey{b, d.index}] = true
	d.open++
	r.open++
}
