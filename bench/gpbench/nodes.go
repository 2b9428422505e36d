package gpbench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/codec/all"
	"cairn/cold"
	"cairn/layout/gp"
)

// NodeRun is the experiment on real storage nodes. For each code, one
// placement group per rotation of Disks (group i takes N = K+M disks from
// position i on, wrapping), so that a lost disk's rebuild reads from every
// other disk as in the paper's many-group cluster; objects go to the
// groups in turn. The objects on Disks[Lost] are read whole, normally and
// then with that disk unavailable (their pieces rebuilt by the pipeline);
// then that disk is rebuilt onto Spare in every group at once, under one
// shared weight budget.
type NodeRun struct {
	Disks []cairn.DiskID // more than the largest code's K+M
	Spare cairn.DiskID   // where the lost disk is rebuilt (each code's shards are named apart)
	Nodes cold.Disks
	Geo   gp.Geometry
	Sizes []int64
	// ClientLink is the reader's rate in bytes/s (0: unshaped).
	ClientLink float64
	Budget     int // the repairer's weight budget
	Batch      int // objects per export batch (per group)
	Log        func(format string, a ...any)
	// Progress, if not nil, is called with the codes measured and their
	// total: (0, total) first, then after each.
	Progress func(done, total int)
}

// Lost is the position in NodeRun.Disks of the disk the experiment loses.
const Lost = 1

// ExportGroups is how many groups export at once: each holds its batch's
// objects and rows in memory.
const ExportGroups = 4

// NodeRow is one code's measurements.
type NodeRow struct {
	Code   string
	Groups int
	// RebuiltBytes of the lost disk in RecoverySeconds.
	RebuiltBytes    int64
	RecoverySeconds float64
	RecoveryBps     float64
	// NormalRead and DegradedRead are the mean seconds to read an object
	// of the lost disk, over Reads objects.
	NormalRead, DegradedRead float64
	Reads                    int
}

// Run measures each code (clay-K-M-D, rs-K-M, lrc-K-L-R, …).
func (nr NodeRun) Run(ctx context.Context, codes []string) ([]NodeRow, error) {
	progress := nr.Progress
	if progress == nil {
		progress = func(int, int) {}
	}
	progress(0, len(codes))
	var rows []NodeRow
	for _, code := range codes {
		r, err := nr.one(ctx, code)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", code, err)
		}
		rows = append(rows, r)
		progress(len(rows), len(codes))
	}
	return rows, nil
}

// member is a group and the lost disk's position in it (−1: not in it).
type member struct {
	g    *cold.Group
	lost int
	recs []gp.Record
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
	n := len(nr.Disks)
	if n <= p.N() {
		return NodeRow{}, fmt.Errorf("%w: %d disks for %s: want more than %d", cairn.ErrInvalid, n, code, p.N())
	}
	var groups []*member
	for i := range n {
		var disks []cairn.DiskID
		lost := -1
		for j := range p.N() {
			if (i+j)%n == Lost {
				lost = j
			}
			disks = append(disks, nr.Disks[(i+j)%n])
		}
		g, err := cold.NewGroup(fmt.Sprintf("bench-%s-%d", code, i), nr.Geo, disks, nr.Nodes, chunk, rs)
		if err != nil {
			return NodeRow{}, err
		}
		groups = append(groups, &member{g: g, lost: lost})
	}
	row := NodeRow{Code: code, Groups: len(groups)}
	start := time.Now()
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(ExportGroups)
	for gi, m := range groups {
		eg.Go(func() error {
			var mine []int
			for j := gi; j < len(nr.Sizes); j += len(groups) {
				mine = append(mine, j)
			}
			for b := 0; b < len(mine); b += nr.Batch {
				var batch [][]byte
				for _, j := range mine[b:min(b+nr.Batch, len(mine))] {
					data := make([]byte, nr.Sizes[j])
					rand.NewChaCha8([32]byte{byte(j), byte(j >> 8), 18}).Read(data)
					batch = append(batch, data)
				}
				recs, err := m.g.Export(ectx, batch)
				if err != nil {
					return err
				}
				m.recs = append(m.recs, recs...)
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return NodeRow{}, err
	}
	nr.Log("%s: exported %d objects into %d groups in %.1f s", code, len(nr.Sizes), len(groups), time.Since(start).Seconds())
	all := make([]bool, p.N()) // every disk available (read-only: Read and Rebuild copy it)
	for i := range all {
		all[i] = true
	}
	for _, m := range groups {
		if m.lost < 0 {
			continue
		}
		gone := append([]bool(nil), all...)
		gone[m.lost] = false
		for _, r := range m.recs {
			if r.Disk != m.lost || r.Size == 0 {
				continue
			}
			for _, mode := range []struct {
				avail []bool
				sum   *float64
			}{{all, &row.NormalRead}, {gone, &row.DegradedRead}} {
				t0 := time.Now()
				if err := m.g.Read(ctx, r, 0, r.Size, mode.avail, &shaped{rate: nr.ClientLink, start: t0}); err != nil {
					return NodeRow{}, err
				}
				*mode.sum += time.Since(t0).Seconds()
			}
			row.Reads++
		}
		for _, t := range m.g.PG.RecoveryTasks(m.lost) {
			row.RebuiltBytes += t.Where.Length
		}
	}
	if row.Reads > 0 {
		row.NormalRead /= float64(row.Reads)
		row.DegradedRead /= float64(row.Reads)
	}
	budget := cold.NewBudget(nr.Budget)
	start = time.Now()
	eg, ectx = errgroup.WithContext(ctx)
	for _, m := range groups {
		if m.lost < 0 {
			continue
		}
		eg.Go(func() error { return m.g.Rebuild(ectx, m.lost, nr.Spare, all, budget) })
	}
	if err := eg.Wait(); err != nil {
		return NodeRow{}, err
	}
	row.RecoverySeconds = time.Since(start).Seconds()
	row.RecoveryBps = float64(row.RebuiltBytes) / row.RecoverySeconds
	nr.Log("%s: %d reads of the lost disk's objects: normal %.3f s, degraded %.3f s; rebuilt %d MiB in %.2f s",
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
