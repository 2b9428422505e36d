package slowdisk

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"cairn"
)

// Config tunes a Tracker. The zero value of a field takes its default.
type Config struct {
	Alpha      float64 // weight of the newest ratio in the score (default 0.3)
	MarkAt     float64 // score that makes a disk slow (default 3)
	ClearAt    float64 // score below which a disk on probation is ok again (default 1.5)
	MinSamples int     // ratios a disk needs before it can be marked (default 3)
	// MinExcess is the least time by which a request must exceed its
	// batch's median to count as slower than its peers at all (default
	// 20 ms): below it, scheduling noise of a busy machine is no verdict.
	MinExcess time.Duration
	Hold      time.Duration // how long a disk marked slow is avoided first (default 5 s)
	MaxHold   time.Duration // the longest hold, after repeated marks (default 2 min)
}

// Defaults returns c with every zero field set to its default.
func (c Config) Defaults() Config {
	if c.Alpha == 0 {
		c.Alpha = 0.3
	}
	if c.MarkAt == 0 {
		c.MarkAt = 3
	}
	if c.ClearAt == 0 {
		c.ClearAt = 1.5
	}
	if c.MinSamples == 0 {
		c.MinSamples = 3
	}
	if c.MinExcess == 0 {
		c.MinExcess = 20 * time.Millisecond
	}
	if c.Hold == 0 {
		c.Hold = 5 * time.Second
	}
	if c.MaxHold == 0 {
		c.MaxHold = 2 * time.Minute
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	c = c.Defaults()
	switch {
	case c.Alpha <= 0 || c.Alpha > 1:
		return fmt.Errorf("%w: slowdisk: Alpha %v is not in (0, 1]", cairn.ErrInvalid, c.Alpha)
	case c.ClearAt < 1 || c.MarkAt <= c.ClearAt:
		return fmt.Errorf("%w: slowdisk: want 1 ≤ ClearAt (%v) < MarkAt (%v)", cairn.ErrInvalid, c.ClearAt, c.MarkAt)
	case c.MinSamples < 1:
		return fmt.Errorf("%w: slowdisk: MinSamples %d < 1", cairn.ErrInvalid, c.MinSamples)
	case c.MinExcess < 0:
		return fmt.Errorf("%w: slowdisk: MinExcess %v < 0", cairn.ErrInvalid, c.MinExcess)
	case c.Hold <= 0 || c.MaxHold < c.Hold:
		return fmt.Errorf("%w: slowdisk: want 0 < Hold (%v) ≤ MaxHold (%v)", cairn.ErrInvalid, c.Hold, c.MaxHold)
	}
	return nil
}

// State is what a Tracker thinks of a disk.
type State int

const (
	OK        State = iota // used like any other
	Slow                   // avoided for new stripes until its hold ends
	Probation              // used again, and marked slow again at its first slow request
)

func (s State) String() string {
	switch s {
	case OK:
		return "ok"
	case Slow:
		return "slow"
	case Probation:
		return "probation"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Sample is one request of a batch: its disk and how long it ran.
// Cancelled marks a request the write gave up on as a straggler: its time
// is a lower bound, and it does not count towards the batch's median.
type Sample struct {
	Disk      cairn.DiskID
	Took      time.Duration
	Cancelled bool
}

// ratio bounds: a ratio says "this many times slower than its peers"; past
// maxRatio the number means nothing more, and below minRatio a disk is
// simply fast.
const (
	minRatio = 0.25
	maxRatio = 50
)

// disk is one disk's record.
type disk struct {
	score   float64
	samples int
	state   State
	until   time.Time     // end of the hold, while Slow
	hold    time.Duration // the next mark's hold
	since   time.Time     // when the state began
}

// Tracker keeps the verdict on every disk it has heard of. Memory: one
// small record per disk ever observed (bounded by the cluster's disks).
type Tracker struct {
	cfg   Config
	mu    sync.Mutex
	disks map[cairn.DiskID]*disk
	marks int64 // times a disk was marked slow; guarded by mu
}

// New returns a Tracker; cfg must be valid (Validate).
func New(cfg Config) (*Tracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Tracker{cfg: cfg.Defaults(), disks: map[cairn.DiskID]*disk{}}, nil
}

// ObserveBatch takes the requests of one batch (at least two that were
// not cancelled: a lone request has no peers) at time now, and updates
// the score of each disk. It returns the disks it marked slow.
func (t *Tracker) ObserveBatch(now time.Time, batch []Sample) []cairn.DiskID {
	var done []time.Duration
	for _, s := range batch {
		if !s.Cancelled {
			done = append(done, s.Took)
		}
	}
	if len(done) < 2 {
		return nil
	}
	slices.Sort(done)
	median := done[(len(done)-1)/2] // the lower median: a batch of two judges by the faster
	if median <= 0 {
		median = 1
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var marked []cairn.DiskID
	for _, s := range batch {
		r := min(max(float64(s.Took)/float64(median), minRatio), maxRatio)
		if s.Took-median < t.cfg.MinExcess {
			r = min(r, 1)
		}
		if t.observeLocked(now, s.Disk, r) {
			marked = append(marked, s.Disk)
		}
	}
	return marked
}

// observeLocked adds one ratio to a disk; it reports whether the disk
// became slow.
func (t *Tracker) observeLocked(now time.Time, id cairn.DiskID, r float64) bool {
	d := t.disks[id]
	if d == nil {
		d = &disk{hold: t.cfg.Hold, since: now}
		t.disks[id] = d
	}
	t.refreshLocked(now, d)
	if d.samples == 0 {
		d.score = r
	} else {
		d.score = t.cfg.Alpha*r + (1-t.cfg.Alpha)*d.score
	}
	d.samples++
	switch d.state {
	case OK:
		if d.samples >= t.cfg.MinSamples && d.score >= t.cfg.MarkAt {
			t.markLocked(now, d)
			return true
		}
	case Probation:
		if r >= t.cfg.MarkAt {
			t.markLocked(now, d)
			return true
		}
		if d.score < t.cfg.ClearAt {
			d.state, d.since, d.hold = OK, now, t.cfg.Hold
		}
	case Slow:
		// A request that started before the mark: the score moves, the
		// verdict waits for the hold.
	}
	return false
}

func (t *Tracker) markLocked(now time.Time, d *disk) {
	t.marks++
	d.state, d.since, d.until = Slow, now, now.Add(d.hold)
	d.hold = min(2*d.hold, t.cfg.MaxHold)
}

// refreshLocked ends a hold that is over.
func (t *Tracker) refreshLocked(now time.Time, d *disk) {
	if d.state == Slow && !now.Before(d.until) {
		// Probation starts from a score at MarkAt, not from the score the
		// disk earned while slow: a few requests at its peers' pace clear
		// it, and one slow request marks it again.
		d.state, d.since, d.score = Probation, now, min(d.score, t.cfg.MarkAt)
	}
}

// Avoid reports whether new stripes should avoid disk id at time now.
func (t *Tracker) Avoid(now time.Time, id cairn.DiskID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.disks[id]
	if d == nil {
		return false
	}
	t.refreshLocked(now, d)
	return d.state == Slow
}

// Marks returns how many times a disk was marked slow (a counter).
func (t *Tracker) Marks() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.marks
}

// Slow returns how many disks are held slow at time now.
func (t *Tracker) Slow(now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, d := range t.disks {
		t.refreshLocked(now, d)
		if d.state == Slow {
			n++
		}
	}
	return n
}

// Status is one disk's verdict, for status pages and logs.
type Status struct {
	Disk    cairn.DiskID
	State   State
	Score   float64
	Samples int
	Since   time.Time
	Until   time.Time // the hold's end, when Slow
}

// Snapshot returns every disk's status at time now, by disk ID.
func (t *Tracker) Snapshot(now time.Time) []Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Status, 0, len(t.disks))
	for id, d := range t.disks {
		t.refreshLocked(now, d)
		st := Status{Disk: id, State: d.state, Score: d.score, Samples: d.samples, Since: d.since}
		if d.state == Slow {
			st.Until = d.until
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(string(a.Disk), string(b.Disk)) })
	return out
}
