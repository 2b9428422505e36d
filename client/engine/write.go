package engine

import (
	"fmt"
	"slices"
	"time"
)

// WriteConfig shapes a speculative write.
type WriteConfig struct {
	Disks     int // disks available, indexed 0..Disks−1
	Primaries int // disks 0..Primaries−1 start with block = their index
	Target    int // durable blocks needed before Done
	// MaxBlock bounds block IDs: blocks are 0..MaxBlock−1, handed out in
	// order (RS: 256−K rows... as K+rows; lt: 2^24).
	MaxBlock int
	// MaxPerDisk bounds the blocks one disk takes (0: no bound). RS uses 1
	// so losing a disk never costs two blocks of a stripe.
	MaxPerDisk int
	// Group, if set, names each disk's failure domain above the disk (its
	// node): disk d is in group Group[d] (len(Group) == Disks).
	// MaxPerGroup bounds the blocks one group takes (0: no bound), as
	// MaxPerDisk bounds one disk's, so that losing a node cannot cost
	// more blocks than the code tolerates (lt: placement.CodedBounds).
	Group       []int
	MaxPerGroup int
	// Depth is the requests a disk may have outstanding (default 1).
	Depth int
	// Eager sends to every disk at once and keeps every disk busy until
	// Target blocks are durable (RobuSTore mode). Otherwise spare disks
	// (≥ Primaries) are used only to replace stragglers and failures.
	Eager bool
	// StragglerFactor and MinWait define a straggler (defaults 3 and 0).
	StragglerFactor float64
	MinWait         time.Duration
	// Stream makes every request a stream of blocks, one per stripe of
	// the object, that the driver feeds in step: it may queue at most Lag
	// blocks ahead of the slowest open request, so a request that falls
	// behind holds back all the others. The driver reports each block a
	// request takes from its queue (Progress). A straggler is an open
	// request Lag blocks behind the furthest one that has taken nothing
	// for longer than StragglerFactor × the median time between blocks
	// (and MinWait): it is replaced by a spare block on a spare disk and
	// cancelled at once — left to finish, it would stall the rest. Without
	// a spare disk, or after StopSpares, a straggler is waited for.
	Stream bool
	Lag    int // Stream: the driver's queue depth per request (default 1)
}

// Placed is a durable block and the disk that holds it.
type Placed struct{ Block, Disk int }

// Write is the state machine of one speculative write. Not safe for
// concurrent use: the driver serializes events.
type Write struct {
	cfg     WriteConfig
	t       tracker
	next    int         // next block ID to hand out
	taken   []int       // blocks sent to each disk (durable or outstanding)
	gtaken  map[int]int // blocks sent to each group (Group), likewise
	bad     []bool
	durable []Placed

	// Stream mode.
	noSpares bool                    // StopSpares was called
	took     map[ReqID]int           // blocks each request took from its queue
	last     map[ReqID]time.Duration // when it last took one (or was sent)
	holding  map[ReqID]time.Duration // since when a request holds back the write
	gaps     []time.Duration         // times between a request's blocks while none held back the write
}

// NewWrite returns a write; Start begins it.
func NewWrite(cfg WriteConfig) (*Write, error) {
	if cfg.Depth <= 0 {
		cfg.Depth = 1
	}
	if cfg.StragglerFactor <= 0 {
		cfg.StragglerFactor = 3
	}
	if cfg.Lag <= 0 {
		cfg.Lag = 1
	}
	switch {
	case cfg.Stream && (cfg.Eager || cfg.MaxPerDisk != 1):
		return nil, fmt.Errorf("engine: write: a stream write takes one block per disk and is not eager")
	case cfg.Disks < 1 || cfg.Primaries < 0 || cfg.Primaries > cfg.Disks:
		return nil, fmt.Errorf("engine: write: %d primaries of %d disks", cfg.Primaries, cfg.Disks)
	case cfg.Target < 1 || cfg.MaxBlock < cfg.Target || cfg.MaxBlock < cfg.Primaries:
		return nil, fmt.Errorf("engine: write: target %d blocks with %d block IDs", cfg.Target, cfg.MaxBlock)
	case cfg.MaxPerDisk > 0 && cfg.MaxPerDisk*cfg.Disks < cfg.Target:
		return nil, fmt.Errorf("engine: write: %d disks × %d blocks cannot hold %d", cfg.Disks, cfg.MaxPerDisk, cfg.Target)
	case cfg.Group != nil && len(cfg.Group) != cfg.Disks:
		return nil, fmt.Errorf("engine: write: %d groups for %d disks", len(cfg.Group), cfg.Disks)
	case cfg.MaxPerGroup > 0 && groupCapacity(cfg) < cfg.Target:
		return nil, fmt.Errorf("engine: write: groups of at most %d blocks (disks of at most %d) cannot hold %d",
			cfg.MaxPerGroup, cfg.MaxPerDisk, cfg.Target)
	}
	return &Write{cfg: cfg, t: tracker{factor: cfg.StragglerFactor, minWait: cfg.MinWait},
		next: cfg.Primaries, taken: make([]int, cfg.Disks), gtaken: map[int]int{}, bad: make([]bool, cfg.Disks),
		took: map[ReqID]int{}, last: map[ReqID]time.Duration{}, holding: map[ReqID]time.Duration{}}, nil
}

// Start returns the first requests.
func (w *Write) Start(now time.Duration) []Action {
	for d := range w.cfg.Primaries {
		if w.canTake(d) { // only a group's bound can say no
			w.sendTo(d, d, now)
		}
	}
	if w.cfg.Eager {
		w.fill(now)
	}
	return w.t.flush()
}

// groupCapacity is how many blocks the disks of cfg take within
// MaxPerGroup and MaxPerDisk.
func groupCapacity(cfg WriteConfig) int {
	disks := map[int]int{}
	for d := range cfg.Disks {
		disks[groupOf(cfg, d)]++
	}
	c := 0
	for _, n := range disks {
		if cfg.MaxPerDisk > 0 {
			n *= cfg.MaxPerDisk
		} else {
			n = cfg.MaxPerGroup
		}
		c += min(n, cfg.MaxPerGroup)
	}
	return c
}

// groupOf is disk d's group: Group[d], or d itself without groups.
func groupOf(cfg WriteConfig, d int) int {
	if cfg.Group == nil {
		return -1 - d
	}
	return cfg.Group[d]
}

// take counts a block sent to disk (n = 1) or given back (n = −1).
func (w *Write) take(disk, n int) {
	w.taken[disk] += n
	w.gtaken[groupOf(w.cfg, disk)] += n
}

func (w *Write) sendTo(disk, block int, now time.Duration) {
	w.take(disk, 1)
	r := w.t.send(disk, block, now)
	w.last[r.id] = now
}

// canTake reports whether disk may get another block now.
func (w *Write) canTake(d int) bool {
	return !w.bad[d] && (w.cfg.MaxPerDisk == 0 || w.taken[d] < w.cfg.MaxPerDisk) &&
		(w.cfg.MaxPerGroup == 0 || w.gtaken[groupOf(w.cfg, d)] < w.cfg.MaxPerGroup) && w.t.openOn(d) < w.cfg.Depth
}

// newBlock hands a fresh block to disk d, if any remain.
func (w *Write) newBlock(d int, now time.Duration) bool {
	if w.next >= w.cfg.MaxBlock || !w.canTake(d) {
		return false
	}
	w.sendTo(d, w.next, now)
	w.next++
	return true
}

// fill keeps every disk that can take more busy (Eager mode).
func (w *Write) fill(now time.Duration) {
	for progress := true; progress; {
		progress = false
		for d := range w.cfg.Disks {
			if w.newBlock(d, now) {
				progress = true
			}
		}
	}
}

// spare sends one new block to the least used spare disk; it reports
// whether it could.
func (w *Write) spare(now time.Duration) bool {
	if w.noSpares {
		return false
	}
	best := -1
	for d := w.cfg.Primaries; d < w.cfg.Disks; d++ {
		if w.canTake(d) && (best < 0 || w.taken[d] < w.taken[best]) {
			best = d
		}
	}
	if best < 0 {
		return false
	}
	return w.newBlock(best, now)
}

// Acked reports that request id finished: ok means the block is durable.
func (w *Write) Acked(id ReqID, ok bool, now time.Duration) []Action {
	if w.t.finished {
		return nil
	}
	r := w.t.finish(id, ok, now)
	if r == nil {
		return nil
	}
	if ok {
		w.durable = append(w.durable, Placed{Block: r.block, Disk: r.disk})
		if len(w.durable) >= w.cfg.Target {
			w.t.end(nil)
			return w.t.flush()
		}
	} else {
		w.take(r.disk, -1)
		w.bad[r.disk] = true // a disk that failed a write gets no more
		if !r.hedged {
			w.replace(now)
		}
	}
	if w.cfg.Eager {
		w.fill(now)
	}
	if w.cfg.Stream {
		w.updateHolding(now)
	}
	w.checkStuck()
	return w.t.flush()
}

// replace issues a block in place of a failed or straggling one.
func (w *Write) replace(now time.Duration) {
	if w.cfg.Eager {
		w.fill(now)
		return
	}
	w.spare(now)
}

// Tick lets the write notice stragglers; call it periodically.
func (w *Write) Tick(now time.Duration) []Action {
	if w.t.finished {
		return nil
	}
	if w.cfg.Stream {
		w.replaceLaggard(now)
		w.replaceUnanswered(now)
		return w.t.flush()
	}
	for _, r := range w.t.stragglers(now) {
		r.hedged = true
		w.replace(now)
	}
	return w.t.flush()
}

// Progress reports that stream request id took its next block from its
// queue (Stream mode; ignored otherwise and for closed requests).
func (w *Write) Progress(id ReqID, now time.Duration) {
	r := w.t.get(id)
	if !w.cfg.Stream || w.t.finished || r == nil || !r.open {
		return
	}
	if w.took[id] > 0 && len(w.holding) == 0 {
		w.gaps = append(w.gaps, now-w.last[id])
	}
	w.took[id]++
	w.last[id] = now
	w.updateHolding(now)
}

// updateHolding records which open requests are Lag blocks behind the
// furthest one — the ones the driver cannot queue more for, so the write
// waits for them — and since when.
func (w *Write) updateHolding(now time.Duration) {
	ahead := 0 // over requests open or durable, not failed or cancelled
	for _, r := range w.t.reqs {
		if !w.bad[r.disk] {
			ahead = max(ahead, w.took[r.id])
		}
	}
	for _, r := range w.t.reqs {
		_, held := w.holding[r.id]
		switch behind := r.open && ahead-w.took[r.id] >= w.cfg.Lag; {
		case behind && !held:
			w.holding[r.id] = now
		case !behind && held:
			delete(w.holding, r.id)
		}
	}
}

// StopSpares tells a stream write that no spare can be started any more
// (the driver no longer holds the blocks a new stream would need from the
// start): from now on stragglers are waited for and failures fail the
// write.
func (w *Write) StopSpares() { w.noSpares = true }

// replaceLaggard replaces and cancels each request that has held back a
// stream write for longer than the straggler limit, while spares last.
func (w *Write) replaceLaggard(now time.Duration) {
	if w.noSpares {
		return
	}
	limit := w.cfg.MinWait
	if len(w.gaps) > 0 {
		g := slices.Clone(w.gaps)
		slices.Sort(g)
		limit = max(limit, time.Duration(float64(g[len(g)/2])*w.cfg.StragglerFactor))
	}
	for _, r := range w.t.reqs {
		since, held := w.holding[r.id]
		if !held || now-since <= limit {
			continue
		}
		if !w.spare(now) {
			return
		}
		w.t.close(r)
		w.take(r.disk, -1)
		w.bad[r.disk] = true // a disk too slow to stream gets no more of this write
		w.t.out = append(w.t.out, Action{Kind: Cancel, Req: r.id, Disk: r.disk, Block: r.block})
	}
	w.updateHolding(now)
}

// replaceUnanswered replaces and cancels each open stream request that
// holds nothing back but is not acknowledged within the straggler limit
// of the durable requests' latencies (StragglerFactor × their median, and
// MinWait), while spares last. Once a request is durable the body has
// ended, so such a request has taken every block and waits only for its
// disk's answer — one that may never come (a node cut off from the
// network takes the bytes into its socket and is silent): the holding
// rule of replaceLaggard never sees it.
func (w *Write) replaceUnanswered(now time.Duration) {
	if w.noSpares || len(w.durable) == 0 || len(w.t.latencies) == 0 {
		return
	}
	lat := slices.Clone(w.t.latencies)
	slices.Sort(lat)
	limit := max(time.Duration(float64(lat[len(lat)/2])*w.cfg.StragglerFactor), w.cfg.MinWait)
	for _, r := range w.t.reqs {
		if _, held := w.holding[r.id]; !r.open || held || now-r.sent <= limit {
			continue
		}
		if !w.spare(now) {
			return
		}
		w.t.close(r)
		w.take(r.disk, -1)
		w.bad[r.disk] = true // a disk that does not answer gets no more of this write
		w.t.out = append(w.t.out, Action{Kind: Cancel, Req: r.id, Disk: r.disk, Block: r.block})
	}
	w.updateHolding(now)
}

// checkStuck fails the write when the target cannot be reached: nothing
// is outstanding, or (Stream mode, one block per request and no more sent
// but to replace one) too few requests are left to reach it.
func (w *Write) checkStuck() {
	if w.t.finished {
		return
	}
	open := w.t.nopen
	if open == 0 || w.cfg.Stream && len(w.durable)+open < w.cfg.Target {
		w.t.end(fmt.Errorf("%w: %d of %d blocks durable, %d outstanding, and no disk can take more", ErrUnavailable, len(w.durable), w.cfg.Target, open))
	}
}

// Durable returns the blocks acknowledged so far and where they landed.
func (w *Write) Durable() []Placed { return w.durable }
