package client

import (
	"sync/atomic"
	"time"

	"cairn/client/drive"
	"cairn/client/slowdisk"
)

// Stats counts what a Client's data path did since it was made: the
// operator's view of the speculative engine (docs/metrics.md). Read it
// with Client.Stats.
type Stats struct {
	// Reads and Writes count the shard requests of GETs (and of coded
	// objects' blocks) and of PUTs.
	Reads, Writes Requests
	// Decodes counts the GET windows (a run of stripes) that were decoded
	// around missing data shards, and DecodeTime the time their decoding
	// took.
	Decodes    int64
	DecodeTime time.Duration
	// SpareRows counts the shard streams PUTs started on a spare parity
	// row, replacing a stream that held the write back.
	SpareRows int64
	// SlowDisks is how many disks Config.SlowDisks holds slow now, and
	// SlowMarks how many times it marked one slow.
	SlowDisks int
	SlowMarks int64
}

// Requests counts shard requests (drive.Counts).
type Requests struct {
	Started, Succeeded, Failed int64
	Cancelled                  int64 // stragglers and losers the engine cancelled
	Hedged                     int64 // started because a request was too slow
	Replaced                   int64 // started because a request failed
}

// stats are a Client's live counters.
type stats struct {
	reads, writes drive.Counts
	decodes       atomic.Int64
	decodeNanos   atomic.Int64
	spares        atomic.Int64
}

// Stats returns the counters so far. Safe for concurrent use.
func (c *Client) Stats() Stats {
	st := Stats{Reads: requests(&c.stats.reads), Writes: requests(&c.stats.writes),
		Decodes: c.stats.decodes.Load(), DecodeTime: time.Duration(c.stats.decodeNanos.Load()), SpareRows: c.stats.spares.Load()}
	if t := c.cfg.SlowDisks; t != nil {
		st.SlowDisks, st.SlowMarks = t.Slow(time.Now()), t.Marks()
	}
	return st
}

// SlowDisks returns the disks Config.SlowDisks holds slow or on
// probation at time now (none without it).
func (c *Client) SlowDisks(now time.Time) []slowdisk.Status {
	if c.cfg.SlowDisks == nil {
		return nil
	}
	var out []slowdisk.Status
	for _, s := range c.cfg.SlowDisks.Snapshot(now) {
		if s.State != slowdisk.OK {
			out = append(out, s)
		}
	}
	return out
}

func requests(d *drive.Counts) Requests {
	return Requests{Started: d.Started.Load(), Succeeded: d.Succeeded.Load(), Failed: d.Failed.Load(),
		Cancelled: d.Cancelled.Load(), Hedged: d.Hedged.Load(), Replaced: d.Replaced.Load()}
}
