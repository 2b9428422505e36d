package gpbench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"cairn"
	"cairn/codec/all"
	"cairn/cold"
	"cairn/layout/gp"
)

// NodeRun is the experiment on real storage nodes: each code's group is
// written on the first N of Disks (N = the code's K+M), the objects on its
// disk 1 are read whole, normally and then with disk 1 unavailable (its
// pieces rebuilt by the pipeline), and disk 1 is rebuilt onto Spare.
type NodeRun struct {
	Disks []cairn.DiskID // at least the largest code's K+M
	Spare cairn.DiskID   // where the lost disk is rebuilt (one group's shards per code)
	Nodes cold.Disks
	Geo   gp.Geometry
	Sizes []int64
	// ClientLink is the reader's rate in bytes/s (0: unshaped).
	ClientLink float64
	Budget     int // repair weight budget of the rebuild
	Batch      int // objects per export batch
	Log        func(format string, a ...any)
}

// NodeRow is one code's measurements.
type NodeRow struct {
	Code string
	// RebuiltBytes of disk 1 in RecoverySeconds.
	RebuiltBytes    int64
	RecoverySeconds float64
	RecoveryBps     float64
	// NormalRead and DegradedRead are the mean seconds to read an object
	// of disk 1, over Reads objects.
	NormalRead, DegradedRead float64
	Reads                    int
}

// Run measures each code (clay-K-M-D, rs-K-M, lrc-K-L-R, …).
func (nr NodeRun) Run(ctx context.Context, codes []string) ([]NodeRow, error) {
	var rows []NodeRow
	for _, code := range codes {
		r, err := nr.one(ctx, code)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", code, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func (nr NodeRun) one(ctx context.Context, code string) (NodeRow, error) {
	chunk, err := all.New(code)
	if err != nil {
		return NodeRow{}, err
	}
	p := chunk.Params()
	rs, err := all.New(fmt.Sprintf("rs-%d-%d", p.K, p.M))
	if err != nil {
		return NodeRow{}, err
	}
	if len(nr.Disks) < p.N() {
		return NodeRow{}, fmt.Errorf("%w: %d disks for %s", cairn.ErrInvalid, len(nr.Disks), code)
	}
	disks := append([]cairn.DiskID(nil), nr.Disks[:p.N()]...)
	g, err := cold.NewGroup("bench-"+code, nr.Geo, disks, nr.Nodes, chunk, rs)
	if err != nil {
		return NodeRow{}, err
	}
	row := NodeRow{Code: code}
	var recs []gp.Record
	start := time.Now()
	for i := 0; i < len(nr.Sizes); i += nr.Batch {
		var batch [][]byte
		for j := i; j < min(i+nr.Batch, len(nr.Sizes)); j++ {
			b := make([]byte, nr.Sizes[j])
			rand.NewChaCha8([32]byte{byte(j), byte(j >> 8), 18}).Read(b)
			batch = append(batch, b)
		}
		rs, err := g.Export(ctx, batch)
		if err != nil {
			return NodeRow{}, err
		}
		recs = append(recs, rs...)
	}
	nr.Log("%s: exported %d objects in %.1f s", code, len(recs), time.Since(start).Seconds())
	all := make([]bool, p.N())
	for i := range all {
		all[i] = true
	}
	lost := append([]bool(nil), all...)
	lost[1] = false
	for _, r := range recs {
		if r.Disk != 1 || r.Size == 0 {
			continue
		}
		for _, mode := range []struct {
			avail []bool
			sum   *float64
		}{{all, &row.NormalRead}, {lost, &row.DegradedRead}} {
			t0 := time.Now()
			if err := g.Read(ctx, r, 0, r.Size, mode.avail, &shaped{rate: nr.ClientLink, start: t0}); err != nil {
				return NodeRow{}, err
			}
			*mode.sum += time.Since(t0).Seconds()
		}
		row.Reads++
	}
	if row.Reads > 0 {
		row.NormalRead /= float64(row.Reads)
		row.DegradedRead /= float64(row.Reads)
	}
	for _, t := range g.PG.RecoveryTasks(1) {
		row.RebuiltBytes += t.Where.Length
	}
	start = time.Now()
	if err := g.Rebuild(ctx, 1, nr.Spare, all, nr.Budget); err != nil {
		return NodeRow{}, err
	}
	row.RecoverySeconds = time.Since(start).Seconds()
	row.RecoveryBps = float64(row.RebuiltBytes) / row.RecoverySeconds
	nr.Log("%s: %d reads of disk 1's objects: normal %.3f s, degraded %.3f s; rebuilt %d MiB in %.2f s",
		code, row.Reads, row.NormalRead, row.DegradedRead, row.RebuiltBytes>>20, row.RecoverySeconds)
	return row, nil
}

// shaped is a client's link: it accepts bytes no faster than rate per
// second since start (rate 0: at once), sleeping in real time.
type shaped struct {
	rate  float64
	start time.Time
	n     int64
}

var _ io.Writer = (*shaped)(nil)

func (s *shaped) Write(p []byte) (int, error) {
	s.n += int64(len(p))
	if s.rate > 0 {
		due := s.start.Add(time.Duration(float64(s.n) / s.rate * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
	}
	return len(p), nil
}
