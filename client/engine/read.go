package engine

import (
	"fmt"
	"time"
)

// Loc is a stored block: its ID and the disk that holds it.
type Loc struct{ Block, Disk int }

// ReadConfig shapes a speculative read.
type ReadConfig struct {
	// Blocks are the stored blocks in order of preference (data blocks
	// first, so a read that gets them decodes nothing).
	Blocks []Loc
	// Decodable reports whether the blocks received (IDs) suffice.
	Decodable func(blocks []int) bool
	// Initial is how many requests start at once: K+δ, or 0 for every
	// block (RobuSTore mode).
	Initial int
	// StragglerFactor and MinWait define a straggler (defaults 3 and 0);
	// each straggler is hedged with one more block while blocks remain.
	StragglerFactor float64
	MinWait         time.Duration
}

// Read is the state machine of one speculative read. Not safe for
// concurrent use.
type Read struct {
	cfg  ReadConfig
	t    tracker
	next int   // index into cfg.Blocks of the next block to request
	have []int // blocks received
}

// NewRead returns a read; Start begins it.
func NewRead(cfg ReadConfig) (*Read, error) {
	if cfg.Decodable == nil || len(cfg.Blocks) == 0 {
		return nil, fmt.Errorf("engine: read: no blocks or no decodability check")
	}
	if cfg.Initial <= 0 || cfg.Initial > len(cfg.Blocks) {
		cfg.Initial = len(cfg.Blocks)
	}
	if cfg.StragglerFactor <= 0 {
		cfg.StragglerFactor = 3
	}
	return &Read{cfg: cfg, t: tracker{factor: cfg.StragglerFactor, minWait: cfg.MinWait}}, nil
}

// Start returns the first requests.
func (r *Read) Start(now time.Duration) []Action {
	if r.cfg.Decodable(nil) {
		r.t.end(nil) // nothing to read (e.g. an empty range)
		return r.t.flush()
	}
	for range r.cfg.Initial {
		r.more(now)
	}
	return r.t.flush()
}

func (r *Read) more(now time.Duration) bool {
	if r.next >= len(r.cfg.Blocks) {
		return false
	}
	b := r.cfg.Blocks[r.next]
	r.next++
	r.t.send(b.Disk, b.Block, now)
	return true
}

// Arrived reports that request id finished: ok means its block arrived
// intact (a missing or corrupt block is !ok).
func (r *Read) Arrived(id ReqID, ok bool, now time.Duration) []Action {
	if r.t.finished {
		return nil
	}
	q := r.t.finish(id, ok, now)
	if q == nil {
		return nil
	}
	if ok {
		r.have = append(r.have, q.block)
		if r.cfg.Decodable(r.have) {
			r.t.end(nil)
			return r.t.flush()
		}
		if !r.t.anyOpen() {
			r.more(now) // decodable sets can need more than Initial (LRC)
		}
	} else if !q.hedged {
		r.more(now)
	}
	if !r.t.anyOpen() {
		r.t.end(fmt.Errorf("%w: %d blocks arrived, not enough to decode, none left to ask for", ErrUnavailable, len(r.have)))
	}
	return r.t.flush()
}

// Tick hedges stragglers; call it periodically.
func (r *Read) Tick(now time.Duration) []Action {
	if r.t.finished {
		return nil
	}
	for _, q := range r.t.stragglers(now) {
		if r.more(now) {
			q.hedged = true
		}
	}
	return r.t.flush()
}

// Have returns the blocks received so far.
func (r *Read) Have() []int { return r.have }
