package engine

import (
	"fmt"
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
	// Depth is the requests a disk may have outstanding (default 1).
	Depth int
	// Eager sends to every disk at once and keeps every disk busy until
	// Target blocks are durable (RobuSTore mode). Otherwise spare disks
	// (≥ Primaries) are used only to replace stragglers and failures.
	Eager bool
	// StragglerFactor and MinWait define a straggler (defaults 3 and 0).
	StragglerFactor float64
	MinWait         time.Duration
}

// Placed is a durable block and the disk that holds it.
type Placed struct{ Block, Disk int }

// Write is the state machine of one speculative write. Not safe for
// concurrent use: the driver serializes events.
type Write struct {
	cfg     WriteConfig
	t       tracker
	next    int   // next block ID to hand out
	taken   []int // blocks sent to each disk (durable or outstanding)
	bad     []bool
	durable []Placed
}

// NewWrite returns a write; Start begins it.
func NewWrite(cfg WriteConfig) (*Write, error) {
	if cfg.Depth <= 0 {
		cfg.Depth = 1
	}
	if cfg.StragglerFactor <= 0 {
		cfg.StragglerFactor = 3
	}
	switch {
	case cfg.Disks < 1 || cfg.Primaries < 0 || cfg.Primaries > cfg.Disks:
		return nil, fmt.Errorf("engine: write: %d primaries of %d disks", cfg.Primaries, cfg.Disks)
	case cfg.Target < 1 || cfg.MaxBlock < cfg.Target || cfg.MaxBlock < cfg.Primaries:
		return nil, fmt.Errorf("engine: write: target %d blocks with %d block IDs", cfg.Target, cfg.MaxBlock)
	case cfg.MaxPerDisk > 0 && cfg.MaxPerDisk*cfg.Disks < cfg.Target:
		return nil, fmt.Errorf("engine: write: %d disks × %d blocks cannot hold %d", cfg.Disks, cfg.MaxPerDisk, cfg.Target)
	}
	return &Write{cfg: cfg, t: tracker{factor: cfg.StragglerFactor, minWait: cfg.MinWait},
		next: cfg.Primaries, taken: make([]int, cfg.Disks), bad: make([]bool, cfg.Disks)}, nil
}

// Start returns the first requests.
func (w *Write) Start(now time.Duration) []Action {
	for d := range w.cfg.Primaries {
		w.sendTo(d, d, now)
	}
	if w.cfg.Eager {
		w.fill(now)
	}
	return w.t.flush()
}

func (w *Write) sendTo(disk, block int, now time.Duration) {
	w.taken[disk]++
	w.t.send(disk, block, now)
}

// canTake reports whether disk may get another block now.
func (w *Write) canTake(d int) bool {
	return !w.bad[d] && (w.cfg.MaxPerDisk == 0 || w.taken[d] < w.cfg.MaxPerDisk) && w.t.openOn(d) < w.cfg.Depth
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
		w.taken[r.disk]--
		w.bad[r.disk] = true // a disk that failed a write gets no more
		if !r.hedged {
			w.replace(now)
		}
	}
	if w.cfg.Eager {
		w.fill(now)
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
	for _, r := range w.t.stragglers(now) {
		r.hedged = true
		w.replace(now)
	}
	return w.t.flush()
}

// checkStuck fails the write when nothing is outstanding and the target
// cannot be reached.
func (w *Write) checkStuck() {
	if !w.t.finished && !w.t.anyOpen() {
		w.t.end(fmt.Errorf("%w: %d of %d blocks durable and no disk can take more", ErrUnavailable, len(w.durable), w.cfg.Target))
	}
}

// Durable returns the blocks acknowledged so far and where they landed.
func (w *Write) Durable() []Placed { return w.durable }
