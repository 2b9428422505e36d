package gpbench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/codec/all"
	"cairn/cold"
	"cairn/layout/gp"
)

// NodeRun is the experiment on real storage nodes. For each code,
// placement groups that are rotations of Disks (the group starting at i
// takes N = K+M disks from position i on, wrapping), one for each position
// in LostAt at which the group holds Disks[Lost], so that a lost disk's
// rebuild reads from every other disk as in the paper's many-group cluster
// and meets each position of the stripe as often as the paper's does;
// objects go to the groups by size (spread). A sample of the objects is read whole, normally and then
// with the object's own disk unavailable (its pieces rebuilt by the
// pipeline); then Disks[Lost] is rebuilt in every group that holds it, at
// once and under one shared weight budget, each group's copy onto the disk
// just past the group in the rotation (a spare outside the group, as the
// export job's placement.Spare picks one: the rebuilt bytes are written
// across the cluster, not onto one disk).
type NodeRun struct {
	Disks []cairn.DiskID // the rotation: more than the largest code's K+M
	// LostAt lists the positions at which each group holds Disks[Lost],
	// one group each (nil: one group per rotation, n of them, with the
	// n−N that do not hold it). Every other position of a 14-disk stripe
	// (0, 2, …, 12) meets Clay's y-sections and LRC's local and global
	// parities in the proportions all 14 do.
	LostAt []int
	Nodes  cold.Disks
	Geo    gp.Geometry
	Sizes  []int64
	// ClientLink is the reader's rate in bytes/s (0: unshaped).
	ClientLink float64
	Budget     int // the repairer's weight budget
	Batch      int // objects per export batch (per group)
	// Gap is the groups' cold.Group.Gap: the bytes a disk streams in the
	// time of a seek, which a helper reads through (0: cold.CoalesceGap).
	Gap int64
	// Contiguous is the chunk size of the Contiguous layout a code with
	// NodeCode.Layouts is also read in (0: not measured).
	Contiguous int64
	// Pad writes, after the exports, every never-written data slot of the
	// groups' used rows (zeros: the parity already counts them so). A
	// slot never written reads as zeros without the disk, so in sparse
	// groups a decode that asks K whole slots (RS, LRC) costs little; the
	// paper's groups are full, and padded rows make every helper read cost
	// the disk as it does there. The written slots become free slots of
	// their buckets (each bucket's end raised to the used rows), which a
	// recovery rebuilds too: every disk of a group then holds as much as
	// its parity disks, as in a full group, not just its objects' chunks.
	Pad bool
	// Measured, if not nil, is called once the groups are set up (the
	// exports and the padding), before anything is timed: the CLI sets
	// up on fast disks and restarts the nodes on throttled ones there.
	Measured func(ctx context.Context) error
	Log      func(format string, a ...any)
	// CPU, if not nil, returns the machine's busy and total CPU time so
	// far (any unit): a recovery on a machine with no idle CPU was not
	// bound by its disks alone (NodeRow.CPUBusy).
	CPU func() (busy, total float64)
	// Progress, if not nil, is called with the codes measured and their
	// total: (0, total) first, then after each.
	Progress func(done, total int)
}

// NodeCode is one code of a NodeRun and what is read of it.
type NodeCode struct {
	Code string // clay-K-M-D, rs-K-M, lrc-K-L-R, …
	// Reads objects, spread evenly over the workload, are read whole,
	// normally and degraded (0: none).
	Reads int
	// Layouts also stores those objects in the Stripe-Max layout (and the
	// Contiguous one, NodeRun.Contiguous) coded with this code, on the
	// same disks, and reads them the same way: the paper's baselines for
	// the degraded read.
	Layouts bool
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
	// HelperRequests and HelperBytes are the reads the rebuild asked of
	// the nodes (coalesced runs: bytes read through gaps count).
	HelperRequests, HelperBytes int64
	// HelperMissingBytes of HelperBytes were asked of slots never written
	// (a sparse group's free slots): zeros, which cost no disk time.
	HelperMissingBytes int64
	// CPUBusy is the share of the machine's CPU time that was busy (with
	// anything, the nodes' and other work) during the recovery, when
	// NodeRun.CPU is set.
	CPUBusy float64
	// NormalRead and DegradedRead are the mean seconds to read an object
	// whole, with every disk and with its own disk unavailable, over Reads
	// objects (Geometric Partitioning).
	NormalRead, DegradedRead float64
	Reads                    int
	ReadBytes                int64 // the bytes of the Reads objects
	// DegradedRange is the mean seconds of a degraded read of a range of
	// each object (length uniform in [1, size], offset uniform where it
	// fits: the paper's range accesses), RangeBytes their total.
	DegradedRange float64
	RangeBytes    int64
	// The degraded reads of the same objects in the Stripe-Max layout (each object one stripe
	// of strips size/K; the degraded read loses the strip on the disk the
	// object's Geometric Partitioning copy lives on) and in the Contiguous
	// layout (objects packed into chunks of NodeRun.Contiguous bytes; the
	// degraded read loses the disk of the object's first chunk), when the
	// code's Layouts is set (Contiguous: and NodeRun.Contiguous).
	StripeMaxDegraded, ContiguousDegraded float64
	StripeMaxRange, ContiguousRange       float64 // the same ranges, degraded
	// The same Stripe-Max reads by the paper's reader, which sends a stripe
	// only once all of it has arrived (stripeMax.readStripe); the ones
	// above send each strip as soon as it and those before it are in.
	StripeMaxWholeStripeDegraded, StripeMaxWholeStripeRange float64
}

// Run measures each code.
func (nr NodeRun) Run(ctx context.Context, codes []NodeCode) ([]NodeRow, error) {
	progress := nr.Progress
	if progress == nil {
		progress = func(int, int) {}
	}
	progress(0, len(codes))
	var rows []NodeRow
	for _, c := range codes {
		r, err := nr.one(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Code, err)
		}
		rows = append(rows, r)
		progress(len(rows), len(codes))
	}
	return rows, nil
}

// member is a group and the lost disk's position in it (−1: not in it).
type member struct {
	g     *cold.Group
	lost  int
	start int // the group's first disk in the rotation
}

// objectData returns object j's bytes (seeded by j, the same for every
// code and layout).
func objectData(j int, size int64) []byte {
	data := make([]byte, size)
	rand.NewChaCha8([32]byte{byte(j), byte(j >> 8), 18}).Read(data)
	return data
}

func (nr NodeRun) one(ctx context.Context, nc NodeCode) (NodeRow, error) {
	code := nc.Code
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
	starts := make([]int, 0, n)
	for i := range n {
		if pos := ((Lost-i)%n + n) % n; nr.LostAt == nil || (pos < p.N() && slices.Contains(nr.LostAt, pos)) {
			starts = append(starts, i)
		}
	}
	if len(starts) == 0 {
		return NodeRow{}, fmt.Errorf("%w: no group of %s holds the lost disk at %v", cairn.ErrInvalid, code, nr.LostAt)
	}
	nodes := &counting{Disks: nr.Nodes}
	var groups []*member
	for _, i := range starts {
		var disks []cairn.DiskID
		lost := -1
		for j := range p.N() {
			if (i+j)%n == Lost {
				lost = j
			}
			disks = append(disks, nr.Disks[(i+j)%n])
		}
		g, err := cold.NewGroup(fmt.Sprintf("bench-%s-%d", code, i), nr.Geo, disks, nodes, chunk, rs)
		if err != nil {
			return NodeRow{}, err
		}
		g.Gap = nr.Gap
		groups = append(groups, &member{g: g, lost: lost, start: i})
	}
	row := NodeRow{Code: code, Groups: len(groups)}
	recs := make([]gp.Record, len(nr.Sizes)) // object j's record, in group home[j]
	home := spread(nr.Sizes, len(groups))
	start := time.Now()
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(ExportGroups)
	for gi, m := range groups {
		eg.Go(func() error {
			var mine []int
			for j, h := range home {
				if h == gi {
					mine = append(mine, j)
				}
			}
			for b := 0; b < len(mine); b += nr.Batch {
				var batch [][]byte
				idx := mine[b:min(b+nr.Batch, len(mine))]
				for _, j := range idx {
					batch = append(batch, objectData(j, nr.Sizes[j]))
				}
				rs, err := m.g.Export(ectx, batch)
				if err != nil {
					return err
				}
				for i, j := range idx {
					recs[j] = rs[i]
				}
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return NodeRow{}, err
	}
	nr.Log("%s: exported %d objects into %d groups in %.1f s", code, len(nr.Sizes), len(groups), time.Since(start).Seconds())
	if nr.Pad {
		start := time.Now()
		b, err := pad(ctx, nr.Geo, groups)
		if err != nil {
			return NodeRow{}, err
		}
		nr.Log("%s: padded the groups' used rows with %d MiB of written zero slots in %.1f s", code, b>>20, time.Since(start).Seconds())
	}
	if nr.Measured != nil {
		start := time.Now()
		if err := nr.Measured(ctx); err != nil {
			return NodeRow{}, err
		}
		nr.Log("%s: ready to measure in %.1f s", code, time.Since(start).Seconds())
	}
	all := make([]bool, p.N()) // every disk available (read-only: Read and Rebuild copy it)
	for i := range all {
		all[i] = true
	}
	if err := nr.reads(ctx, nc, groups, home, recs, &row); err != nil {
		return NodeRow{}, err
	}
	budget := cold.NewBudget(nr.Budget)
	nodes.requests.Store(0)
	nodes.bytes.Store(0)
	nodes.missing.Store(0)
	var busy0, total0 float64
	if nr.CPU != nil {
		busy0, total0 = nr.CPU()
	}
	start = time.Now()
	eg, ectx = errgroup.WithContext(ctx)
	var perGroup []string                // the lost disk's MiB in each group, by its position there
	done := make([]float64, len(groups)) // when each group's rebuild ended, in seconds
	for _, m := range groups {
		if m.lost < 0 {
			continue
		}
		var b int64
		for _, t := range m.g.PG.RecoveryTasks(m.lost) {
			b += t.Where.Length
		}
		row.RebuiltBytes += b
		perGroup = append(perGroup, fmt.Sprintf("%d@%d", b>>20, m.lost))
		spare := nr.Disks[(m.start+p.N())%n] // outside the group, never Disks[Lost]
		i := len(perGroup) - 1
		eg.Go(func() error {
			err := m.g.Rebuild(ectx, m.lost, spare, all, budget)
			done[i] = time.Since(start).Seconds()
			return err
		})
	}
	if err := eg.Wait(); err != nil {
		return NodeRow{}, err
	}
	row.RecoverySeconds = time.Since(start).Seconds()
	row.RecoveryBps = float64(row.RebuiltBytes) / row.RecoverySeconds
	row.HelperRequests, row.HelperBytes, row.HelperMissingBytes = nodes.requests.Load(), nodes.bytes.Load(), nodes.missing.Load()
	if nr.CPU != nil {
		if busy, total := nr.CPU(); total > total0 {
			row.CPUBusy = (busy - busy0) / (total - total0)
		}
	}
	for i := range perGroup {
		perGroup[i] += fmt.Sprintf(" (%.1f s)", done[i])
	}
	nr.Log("%s: rebuilt %d MiB of the lost disk (MiB@position per group, and when its rebuild ended: %s) in %.2f s (%.1f MB/s), asking the helpers for %.2f bytes per byte (%.2f of them never written: zeros, no disk read) in %d requests; the machine's CPU %.0f%% busy",
		code, row.RebuiltBytes>>20, strings.Join(perGroup, ", "), row.RecoverySeconds, row.RecoveryBps/1e6,
		float64(row.HelperBytes)/float64(row.RebuiltBytes), float64(row.HelperMissingBytes)/float64(row.RebuiltBytes), row.HelperRequests, 100*row.CPUBusy)
	return row, nil
}

// spread assigns the objects of sizes to n groups, returning each one's
// group: the largest first, each to the group with the fewest bytes so
// far (ties: the lowest). The paper's groups are full, so a lost disk holds
// about as much in each; a few objects dealt out in turn would leave one
// group with most of the bytes and its one spare with most of the writes.
func spread(sizes []int64, n int) []int {
	order := make([]int, len(sizes))
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sizes[b], sizes[a]) })
	bytes := make([]int64, n)
	home := make([]int, len(sizes))
	for _, j := range order {
		g := 0
		for i := range bytes {
			if bytes[i] < bytes[g] {
				g = i
			}
		}
		home[j] = g
		bytes[g] += sizes[j]
	}
	return home
}

// padDepth is how many slot writes pad keeps in flight.
const padDepth = 16

// pad writes every never-written data slot of every used row of the
// groups (which share geo) with zeros (NodeRun.Pad) and returns the bytes
// written.
func pad(ctx context.Context, geo gp.Geometry, groups []*member) (int64, error) {
	zeros := make([]byte, geo.Max) // read-only, shared by the writes
	var total int64
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(padDepth)
	for _, m := range groups {
		pg := m.g.PG
		for level := range geo.Levels() {
			var rows uint32
			for _, d := range pg.Disks {
				rows = max(rows, d.Buckets[level].Next)
			}
			for slot := range rows {
				stripe := pg.Stripe(level, slot)
				for d := range pg.K {
					if slot < pg.Disks[d].Buckets[level].Next {
						continue
					}
					l := stripe[d]
					total += l.Length
					eg.Go(func() error { return m.g.PutSlot(ectx, l, zeros[:l.Length]) })
				}
			}
			// The written slots are free slots below each bucket's end,
			// as if claimed once and released: a lost disk's recovery
			// rebuilds them too, as it would a full group's.
			for d := range pg.K {
				b := &pg.Disks[d].Buckets[level]
				for slot := b.Next; slot < rows; slot++ {
					b.Free = append(b.Free, slot)
				}
				b.Next = rows
			}
		}
	}
	return total, eg.Wait()
}

// sample returns count indices of non-empty objects spread evenly over
// sizes.
func sample(sizes []int64, count int) []int {
	var nonEmpty []int
	for j, s := range sizes {
		if s > 0 {
			nonEmpty = append(nonEmpty, j)
		}
	}
	count = min(count, len(nonEmpty))
	out := make([]int, 0, count)
	for i := range count {
		out = append(out, nonEmpty[i*len(nonEmpty)/count])
	}
	return out
}

// reads measures the normal and degraded whole-object reads of a sample
// of the objects, one read at a time on the idle cluster, in the Geometric
// Partitioning layout and, with nc.Layouts, the Stripe-Max and Contiguous
// ones. Every read is checked byte for byte (CRC-32C of what the client
// received against the object's).
func (nr NodeRun) reads(ctx context.Context, nc NodeCode, groups []*member, home []int, recs []gp.Record, row *NodeRow) error {
	idx := sample(nr.Sizes, nc.Reads)
	if len(idx) == 0 {
		return nil
	}
	sums := make([]uint32, len(idx))
	// Each object's range: a length uniform in [1, size] at an offset
	// uniform over where it fits (the paper's range accesses).
	rng := rand.New(rand.NewPCG(uint64(len(idx)), 0x7261))
	ranges := make([][2]int64, len(idx))
	rangeSums := make([]uint32, len(idx))
	for i, j := range idx {
		data := objectData(j, nr.Sizes[j])
		sums[i] = crc32.Checksum(data, castagnoli)
		n := 1 + rng.Int64N(int64(len(data)))
		off := rng.Int64N(int64(len(data)) - n + 1)
		ranges[i] = [2]int64{off, n}
		rangeSums[i] = crc32.Checksum(data[off:off+n], castagnoli)
		row.ReadBytes += nr.Sizes[j]
		row.RangeBytes += n
	}
	timed := func(want uint32, sum *float64, read func(w io.Writer) error) error {
		w := &shaped{rate: nr.ClientLink, start: time.Now()}
		if err := read(w); err != nil {
			return err
		}
		*sum += time.Since(w.start).Seconds()
		if w.sum != want {
			return fmt.Errorf("%w: a read returned bytes of CRC %08x, want %08x", cairn.ErrCorrupt, w.sum, want)
		}
		return nil
	}
	var sm []*stripeMax
	var con *contiguous
	if nc.Layouts {
		var err error
		if sm, con, err = nr.layouts(ctx, nc, groups, home, idx); err != nil {
			return err
		}
	}
	for i, j := range idx {
		g, r := groups[home[j]].g, recs[j]
		avail := make([]bool, len(g.Disks))
		for d := range avail {
			avail[d] = true
		}
		gone := append([]bool(nil), avail...)
		gone[r.Disk] = false
		type mode struct {
			sum  *float64
			want uint32
			read func(io.Writer) error
		}
		off, n := ranges[i][0], ranges[i][1]
		modes := []mode{
			{&row.NormalRead, sums[i], func(w io.Writer) error { return g.Read(ctx, r, 0, r.Size, avail, w) }},
			{&row.DegradedRead, sums[i], func(w io.Writer) error { return g.Read(ctx, r, 0, r.Size, gone, w) }},
			{&row.DegradedRange, rangeSums[i], func(w io.Writer) error { return g.Read(ctx, r, off, n, gone, w) }},
		}
		// The baselines' normal reads are not timed: like Geometric
		// Partitioning's, they are bound by the client's link (the paper
		// measured all layouts' within 2 % of each other).
		if sm != nil {
			modes = append(modes,
				mode{&row.StripeMaxDegraded, sums[i], func(w io.Writer) error { return sm[i].read(ctx, 0, r.Size, r.Disk, w) }},
				mode{&row.StripeMaxRange, rangeSums[i], func(w io.Writer) error { return sm[i].read(ctx, off, n, r.Disk, w) }},
				mode{&row.StripeMaxWholeStripeDegraded, sums[i], func(w io.Writer) error { return sm[i].readStripe(ctx, 0, r.Size, r.Disk, w) }},
				mode{&row.StripeMaxWholeStripeRange, rangeSums[i], func(w io.Writer) error { return sm[i].readStripe(ctx, off, n, r.Disk, w) }})
		}
		if con != nil {
			modes = append(modes,
				mode{&row.ContiguousDegraded, sums[i], func(w io.Writer) error { return con.read(ctx, i, 0, r.Size, true, w) }},
				mode{&row.ContiguousRange, rangeSums[i], func(w io.Writer) error { return con.read(ctx, i, off, n, true, w) }})
		}
		for _, m := range modes {
			if err := timed(m.want, m.sum, m.read); err != nil {
				return err
			}
		}
	}
	row.Reads = len(idx)
	for _, s := range []*float64{&row.NormalRead, &row.DegradedRead, &row.DegradedRange,
		&row.StripeMaxDegraded, &row.StripeMaxRange, &row.ContiguousDegraded, &row.ContiguousRange,
		&row.StripeMaxWholeStripeDegraded, &row.StripeMaxWholeStripeRange} {
		*s /= float64(row.Reads)
	}
	nr.Log("%s: %d objects (%d MiB) read whole: normal %.3f s, degraded %.3f s (stripe-max %.3f s, by the paper's whole-stripe reader %.3f s, contiguous %.3f s); degraded ranges (%d MiB): %.3f s (stripe-max %.3f s, whole-stripe %.3f s, contiguous %.3f s)",
		nc.Code, row.Reads, row.ReadBytes>>20, row.NormalRead, row.DegradedRead, row.StripeMaxDegraded, row.StripeMaxWholeStripeDegraded, row.ContiguousDegraded,
		row.RangeBytes>>20, row.DegradedRange, row.StripeMaxRange, row.StripeMaxWholeStripeRange, row.ContiguousRange)
	return nil
}

// shaped is a client's link: it sends the bytes of each Write at rate
// per second (0: at once), from when they are written or, while it is
// still sending earlier ones, from when those are out, and returns once
// they are sent, sleeping in real time. An idle link banks no time: bytes
// that come late cannot make up for it by being sent faster. It keeps the
// CRC-32C of what it received.
type shaped struct {
	rate  float64
	start time.Time
	free  time.Time // when the bytes written so far are all sent
	n     int64
	sum   uint32
}

var _ io.Writer = (*shaped)(nil)

func (s *shaped) Write(p []byte) (int, error) {
	s.n += int64(len(p))
	s.sum = crc32.Update(s.sum, castagnoli, p)
	if s.rate > 0 {
		if now := time.Now(); s.free.Before(now) {
			s.free = now // the link was idle: it banks no time
		}
		s.free = s.free.Add(time.Duration(float64(len(p)) / s.rate * float64(time.Second)))
		if d := time.Until(s.free); d > 0 {
			time.Sleep(d)
		}
	}
	return len(p), nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// counting counts the reads asked of the nodes, and of those the bytes
// of shards that were never written (read as zeros, without the disk).
type counting struct {
	cold.Disks
	requests, bytes, missing atomic.Int64
}

func (c *counting) GetShard(ctx context.Context, disk cairn.DiskID, name string, off, n int64) (io.ReadCloser, error) {
	c.requests.Add(1)
	c.bytes.Add(n)
	rc, err := c.Disks.GetShard(ctx, disk, name, off, n)
	if errors.Is(err, cairn.ErrNotFound) {
		c.missing.Add(n)
	}
	return rc, err
}
