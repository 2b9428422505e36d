package cold_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cairn"
	"cairn/codec/all"
	"cairn/cold"
	"cairn/layout/gp"
	"cairn/node/nodetest"
	"cairn/node/wire"
)

// newGroup starts a node per disk of a group whose chunks use code (the
// cold tier's clay-4-2-5, or a baseline) with s0 = 32 KiB, q = 2.
func newGroup(t *testing.T, code string) (*cold.Group, *nodetest.Nodes) {
	t.Helper()
	c := nodetest.New()
	chunk, err := all.New(code)
	if err != nil {
		t.Fatal(err)
	}
	p := chunk.Params()
	rs, err := all.New(fmt.Sprintf("rs-%d-%d", p.K, p.M))
	if err != nil {
		t.Fatal(err)
	}
	var disks []cairn.DiskID
	for i := range p.N() {
		disks = append(disks, c.Start(t, fmt.Sprintf("n%d", i+1)))
	}
	geo, err := gp.NewGeometry(32<<10, 2, 256<<10)
	if err != nil {
		t.Fatal(err)
	}
	g, err := cold.NewGroup("g1", geo, disks, c.Client, chunk, rs)
	if err != nil {
		t.Fatal(err)
	}
	return g, c
}

func check(t *testing.T, g *cold.Group, rng *rand.Rand, what string, objs map[int][]byte, recs map[int]gp.Record, avail []bool) {
	t.Helper()
	ctx := context.Background()
	for id, data := range objs {
		var buf bytes.Buffer
		if err := g.Read(ctx, recs[id], 0, int64(len(data)), avail, &buf); err != nil {
			t.Fatalf("%s: object %d (%d bytes): %v", what, id, len(data), err)
		}
		if !bytes.Equal(buf.Bytes(), data) {
			t.Fatalf("%s: object %d (%d bytes) differs", what, id, len(data))
		}
		if len(data) == 0 {
			continue
		}
		off := rng.Int64N(int64(len(data)))
		n := 1 + rng.Int64N(int64(len(data))-off)
		buf.Reset()
		if err := g.Read(ctx, recs[id], off, n, avail, &buf); err != nil || !bytes.Equal(buf.Bytes(), data[off:off+n]) {
			t.Fatalf("%s: object %d range [%d, +%d): %v", what, id, off, n, err)
		}
	}
}

// TestExportReadRebuild runs the cold tier's layout on real node servers:
// batches of objects from 0 bytes to 2 MiB are exported (with deletes
// between them, so slots are reused and rows updated by delta), read back
// byte-exact whole and in ranges with every disk, with the objects' disks
// and a second disk gone (Clay sub-chunk and degraded repairs, RS for the
// fronts), and after one lost disk is rebuilt onto a new node.
func TestExportReadRebuild(t *testing.T) {
	for _, code := range []string{"clay-4-2-5", "rs-4-2", "lrc-4-2-2"} {
		t.Run(code, func(t *testing.T) { testExportReadRebuild(t, code) })
	}
}

// avail returns the availability of n disks with the lost ones false.
func avail(n int, lost ...int) []bool {
	a := make([]bool, n)
	for i := range a {
		a[i] = !slices.Contains(lost, i)
	}
	return a
}

func testExportReadRebuild(t *testing.T, code string) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 1))
	g, c := newGroup(t, code)
	n := len(g.Disks)
	objs := map[int][]byte{}
	recs := map[int]gp.Record{}
	next := 0
	for batch := range 3 {
		var datas [][]byte
		for i := range 8 {
			n := rng.Int64N(2 << 20)
			if batch == 0 && i < 2 {
				n = int64(i) // 0 and 1 byte
			}
			d := make([]byte, n)
			for j := range d {
				d[j] = byte(rng.Uint32())
			}
			datas = append(datas, d)
		}
		rs, err := g.Export(ctx, datas)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range datas {
			objs[next], recs[next] = d, rs[i]
			next++
		}
		for _, id := range slices.Sorted(maps.Keys(objs)) {
			if rng.IntN(4) == 0 {
				if err := g.PG.Release(recs[id]); err != nil {
					t.Fatal(err)
				}
				delete(objs, id)
				delete(recs, id)
			}
		}
	}
	all := avail(n)
	check(t, g, rng, "all disks", objs, recs, all)
	for _, r := range recs {
		bad := r
		bad.Sums = nil
		if err := g.Read(ctx, bad, 0, r.Size, all, &bytes.Buffer{}); !errors.Is(err, cairn.ErrInvalid) {
			t.Fatalf("a record without checksums: %v", err)
		}
		if err := g.Read(ctx, r, 0, r.Size+1, all, &bytes.Buffer{}); !errors.Is(err, cairn.ErrInvalid) {
			t.Fatalf("a range past the end: %v", err)
		}
		if err := g.Read(ctx, r, 0, r.Size, all[1:], &bytes.Buffer{}); !errors.Is(err, cairn.ErrInvalid) {
			t.Fatalf("short availability: %v", err)
		}
		break
	}

	// Lose data disk 1 (its node stops) and then parity disk 5.
	lost := g.Disks[1]
	c.Stop(lost)
	one := avail(n, 1)
	for id := range objs {
		if recs[id].Disk == 1 {
			continue
		}
		// Objects elsewhere read normally.
		var buf bytes.Buffer
		if err := g.Read(ctx, recs[id], 0, recs[id].Size, one, &buf); err != nil || !bytes.Equal(buf.Bytes(), objs[id]) {
			t.Fatalf("object %d on a live disk: %v", id, err)
		}
	}
	if len(onDisk(objs, recs, 1)) < 1 || len(onDisk(objs, recs, 0)) < 1 {
		t.Fatalf("too few objects on disks 0 and 1 to test: %v", recs)
	}
	for id := range onDisk(objs, recs, 1) {
		if recs[id].Size == 0 {
			continue
		}
		if err := g.Read(ctx, recs[id], 0, recs[id].Size, all, &bytes.Buffer{}); err == nil {
			t.Fatalf("object %d read from its stopped node", id)
		}
		break
	}
	check(t, g, rng, "disk 1 lost", onDisk(objs, recs, 1), recs, one)
	c.Stop(g.Disks[5])
	two := avail(n, 1, 5)
	check(t, g, rng, "disks 1 and 5 lost", onDisk(objs, recs, 1), recs, two)

	// Rebuild disk 1 onto a new node while 5 is still gone; then every
	// object reads normally from the group's disks.
	repl := c.Start(t, "spare")
	if err := g.Rebuild(ctx, 1, repl, two, cold.NewBudget(4)); err != nil {
		t.Fatal(err)
	}
	if g.Disks[1] != repl {
		t.Fatalf("disk 1 is %s after the rebuild, want %s", g.Disks[1], repl)
	}
	check(t, g, rng, "after rebuild", objs, recs, avail(n, 5))
	// The rebuilt disk serves repairs too: lose disk 0 and read its objects.
	check(t, g, rng, "disk 0 lost after rebuild", onDisk(objs, recs, 0), recs, avail(n, 0, 5))
}

func onDisk(objs map[int][]byte, recs map[int]gp.Record, disk int) map[int][]byte {
	out := map[int][]byte{}
	for id, d := range objs {
		if recs[id].Disk == disk {
			out[id] = d
		}
	}
	return out
}

// TestSlotReadRange writes one row of slots through PutSlot and reads
// ranges of them back with ReadRange: directly, and rebuilt (whole slot,
// then the range) with the slot's disk gone, byte-exact; ranges that cross
// a slot and writes that are not a whole slot are refused.
func TestSlotReadRange(t *testing.T) {
	g, _ := newGroup(t, "clay-4-2-5")
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 0))
	level := 1 // 64 KiB slots
	size := g.PG.Geo.Size(level)
	row := g.PG.Stripe(level, 3)
	shards := make([][]byte, len(row))
	for d := range g.PG.K {
		shards[d] = make([]byte, size)
		for i := range shards[d] {
			shards[d][i] = byte(rng.Uint32())
		}
	}
	if err := g.Clay.Encode(shards); err != nil {
		t.Fatal(err)
	}
	for d, l := range row {
		if err := g.PutSlot(ctx, l, shards[d]); err != nil {
			t.Fatal(err)
		}
	}
	for d, l := range row {
		for _, lost := range []int{-1, d} {
			avail := make([]bool, len(row))
			for i := range avail {
				avail[i] = i != lost
			}
			off := rng.Int64N(size)
			r := gp.Location{Disk: d, File: l.File, Offset: l.Offset + off, Length: 1 + rng.Int64N(size-off)}
			got, err := g.ReadRange(ctx, r, avail)
			if err != nil || !bytes.Equal(got, shards[d][off:off+r.Length]) {
				t.Fatalf("disk %d, lost %d: range [%d, +%d) of the slot: %v", d, lost, off, r.Length, err)
			}
		}
	}
	all := []bool{true, true, true, true, true, true}
	if _, err := g.ReadRange(ctx, gp.Location{Disk: 0, File: row[0].File, Offset: row[0].Offset + 1, Length: size}, all); !errors.Is(err, cairn.ErrInvalid) {
		t.Errorf("a range crossing a slot: %v, want ErrInvalid", err)
	}
	half := row[0]
	half.Length /= 2
	if err := g.PutSlot(ctx, half, shards[0][:half.Length]); !errors.Is(err, cairn.ErrInvalid) {
		t.Errorf("half a slot written: %v, want ErrInvalid", err)
	}
}

// countingDisks counts the bytes asked of the nodes by GetShard.
type countingDisks struct {
	cold.Disks
	asked atomic.Int64
}

func (c *countingDisks) GetShard(ctx context.Context, disk cairn.DiskID, name string, off, n int64) (io.ReadCloser, error) {
	c.asked.Add(n)
	return c.Disks.GetShard(ctx, disk, name, off, n)
}

var _ cold.Disks = (*countingDisks)(nil)

// TestRepairGap checks what a Clay repair asks of its helpers: with a gap
// below a sub-chunk every helper sends β/α of its slot and no more, for
// every lost position of the row (runs of one sub-chunk for the last
// y-section); with the default gap the runs of a small slot are read
// through, as one request per helper.
func TestRepairGap(t *testing.T) {
	g, _ := newGroup(t, "clay-4-2-5") // α = 8, β = 4: a helper sends half its slot
	ctx := context.Background()
	level := 2 // 128 KiB slots, 16 KiB sub-chunks
	size := g.PG.Geo.Size(level)
	row := g.PG.Stripe(level, 0)
	shards := make([][]byte, len(row))
	for d := range g.PG.K {
		shards[d] = bytes.Repeat([]byte{byte(d + 1)}, int(size))
	}
	if err := g.Clay.Encode(shards); err != nil {
		t.Fatal(err)
	}
	for d, l := range row {
		if err := g.PutSlot(ctx, l, shards[d]); err != nil {
			t.Fatal(err)
		}
	}
	c := &countingDisks{Disks: g.Nodes}
	g.Nodes = c
	helpers := int64(len(row) - 1) // d = 5
	for _, tc := range []struct {
		gap  int64
		want func(lost int) int64 // bytes asked of all helpers
	}{
		{1, func(int) int64 { return helpers * size / 2 }},
		{0, func(lost int) int64 {
			// clay-4-2-5: q = 2, t = 3; y-section 0 reads one run of 4
			// sub-chunks, 1 two runs of 2 (one gap of 2), 2 four runs of 1.
			read := []int64{4, 6, 7}[lost/2]
			return helpers * size / 8 * read
		}},
	} {
		g.Gap = tc.gap
		for lost, l := range row {
			avail := []bool{true, true, true, true, true, true}
			avail[lost] = false
			c.asked.Store(0)
			got, err := g.ReadRange(ctx, l, avail)
			if err != nil || !bytes.Equal(got, shards[lost]) {
				t.Fatalf("gap %d, lost %d: %v", tc.gap, lost, err)
			}
			if asked, want := c.asked.Load(), tc.want(lost); asked != want {
				t.Errorf("gap %d, lost %d: helpers asked for %d bytes, want %d", tc.gap, lost, asked, want)
			}
		}
	}
}

// barrierDisks holds every GetShard until want of them are in flight at
// once (or a deadline passes) and records the most it saw.
type barrierDisks struct {
	cold.Disks
	want     int64
	inflight atomic.Int64
	most     atomic.Int64
	release  chan struct{}
	once     sync.Once
}

func (b *barrierDisks) GetShard(ctx context.Context, disk cairn.DiskID, name string, off, n int64) (io.ReadCloser, error) {
	now := b.inflight.Add(1)
	defer b.inflight.Add(-1)
	for m := b.most.Load(); now > m && !b.most.CompareAndSwap(m, now); m = b.most.Load() {
	}
	if now >= b.want {
		b.once.Do(func() { close(b.release) })
	}
	select {
	case <-b.release:
	case <-time.After(time.Second): // real time: requests that never overlap wait this long, and the test fails
	}
	return b.Disks.GetShard(ctx, disk, name, off, n)
}

// TestRowReadsOverlap exports one full row (K chunks of one size, no
// fronts), then re-encodes it as a recovery does: the row's parity is
// computed from the K data slots read from their disks, and those K reads
// are in flight at once, not one disk after another. (The export itself
// reads none of them back: TestExportReadsNoChunkBack.)
func TestRowReadsOverlap(t *testing.T) {
	g, _ := newGroup(t, "clay-4-2-5")
	var objs [][]byte
	for i := range g.PG.K {
		objs = append(objs, bytes.Repeat([]byte{byte(i + 1)}, 32<<10)) // one s0 chunk each, one per disk
	}
	recs, err := g.Export(context.Background(), objs)
	if err != nil {
		t.Fatal(err)
	}
	b := &barrierDisks{Disks: g.Nodes, want: int64(g.PG.K), release: make(chan struct{})}
	g.Nodes = b
	if err := cold.ReencodeRow(context.Background(), g, 0, recs[0].Slots[0]); err != nil {
		t.Fatal(err)
	}
	g.Nodes = b.Disks
	if got := b.most.Load(); got < int64(g.PG.K) {
		t.Errorf("at most %d reads in flight while a row's parity was computed, want %d", got, g.PG.K)
	}
	all := []bool{true, true, true, true, true, true}
	check(t, g, rand.New(rand.NewPCG(1, 0)), "row", map[int][]byte{0: objs[0], 3: objs[3]}, map[int]gp.Record{0: recs[0], 3: recs[3]}, all)
	gone := slices.Clone(all)
	gone[recs[2].Disk] = false
	check(t, g, rand.New(rand.NewPCG(2, 0)), "row, disk gone", map[int][]byte{2: objs[2]}, map[int]gp.Record{2: recs[2]}, gone)
}

// TestRepairHelperDepth rebuilds a slot of the last y-section, whose
// helpers each send runs of one sub-chunk that a small gap keeps apart:
// each helper has cold.HelperDepth of its requests in flight at once, not
// one after another.
func TestRepairHelperDepth(t *testing.T) {
	g, _ := newGroup(t, "clay-4-2-5") // lost 4 (y-section 2): 4 runs of one sub-chunk from each of 5 helpers
	ctx := context.Background()
	row := g.PG.Stripe(2, 0)
	shards := make([][]byte, len(row))
	for d := range g.PG.K {
		shards[d] = bytes.Repeat([]byte{byte(d + 7)}, int(row[0].Length))
	}
	if err := g.Clay.Encode(shards); err != nil {
		t.Fatal(err)
	}
	for d, l := range row {
		if err := g.PutSlot(ctx, l, shards[d]); err != nil {
			t.Fatal(err)
		}
	}
	want := int64(5 * min(4, cold.HelperDepth))
	b := &barrierDisks{Disks: g.Nodes, want: want, release: make(chan struct{})}
	g.Nodes, g.Gap = b, 1
	got, err := g.ReadRange(ctx, row[4], []bool{true, true, true, true, false, true})
	if err != nil || !bytes.Equal(got, shards[4]) {
		t.Fatalf("rebuild: %v", err)
	}
	if most := b.most.Load(); most < want {
		t.Errorf("at most %d helper requests in flight, want %d", most, want)
	}
}

// writeHold holds the first write onto disk until a read of one of next
// (the next task's helper shards) has started, and then up to a second
// longer for a second write onto disk to start; it records whether the
// read came and the most writes onto disk in flight at once.
type writeHold struct {
	cold.Disks
	disk     cairn.DiskID
	next     map[string]bool
	seen     chan struct{} // closed at the first read of next
	once     sync.Once
	second   chan struct{} // a second write onto disk started
	writes   atomic.Int64
	inflight atomic.Int64
	most     atomic.Int64
	overlap  atomic.Bool // the first write saw a read of next
}

func (w *writeHold) GetShard(ctx context.Context, disk cairn.DiskID, name string, off, n int64) (io.ReadCloser, error) {
	if w.next[name] {
		w.once.Do(func() { close(w.seen) })
	}
	return w.Disks.GetShard(ctx, disk, name, off, n)
}

func (w *writeHold) PutShard(ctx context.Context, disk cairn.DiskID, name string, r io.Reader) (wire.ShardInfo, error) {
	if disk == w.disk {
		now := w.inflight.Add(1)
		defer w.inflight.Add(-1)
		for m := w.most.Load(); now > m && !w.most.CompareAndSwap(m, now); m = w.most.Load() {
		}
		if w.writes.Add(1) == 1 {
			select {
			case <-w.seen:
				w.overlap.Store(true)
			case <-time.After(10 * time.Second): // real time: a failure deadline (the next task never reads while this write waits)
			}
			select {
			case <-w.second: // a write pool of one task let a second write start: the test fails
			case <-time.After(time.Second): // real time: waiting for what must not happen
			}
		} else {
			select {
			case w.second <- struct{}{}:
			default:
			}
		}
	}
	return w.Disks.PutShard(ctx, disk, name, r)
}

// TestRebuildReadsWhileWriting: a rebuilt chunk leaves the weight budget
// for the write pool, so with a budget of one task the next task reads
// its helpers while the first chunk is still being written to the
// replacement; the pool of one task keeps one write at a time; and the
// rebuild is byte-exact.
func TestRebuildReadsWhileWriting(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 9))
	g, c := newGroup(t, "clay-4-2-5")
	var datas [][]byte
	for range 8 {
		datas = append(datas, randBytes(rng, 100<<10+rng.IntN(300<<10)))
	}
	recs, err := g.Export(ctx, datas)
	if err != nil {
		t.Fatal(err)
	}
	objs, byID := map[int][]byte{}, map[int]gp.Record{}
	for i, d := range datas {
		objs[i], byID[i] = d, recs[i]
	}
	const lost = 4 // a parity disk: every used row has a slot on it
	tasks := g.PG.RecoveryTasks(lost)
	if len(tasks) < 2 || tasks[1].Level < 0 {
		t.Fatalf("recovery tasks %v: too few to test", tasks)
	}
	next := map[string]bool{}
	for d, l := range g.PG.Stripe(tasks[1].Level, tasks[1].Slot) {
		if d != lost {
			next[cold.UnitShard(g, d, l.File, int64(tasks[1].Slot))] = true
		}
	}
	c.Stop(g.Disks[lost])
	repl := c.Start(t, "spare")
	w := &writeHold{Disks: g.Nodes, disk: repl, next: next, seen: make(chan struct{}), second: make(chan struct{}, 1)}
	g.Nodes = w
	if err := g.Rebuild(ctx, lost, repl, avail(len(g.Disks), lost), cold.NewBudget(1)); err != nil {
		t.Fatal(err)
	}
	g.Nodes = w.Disks
	if !w.overlap.Load() {
		t.Error("the next task read none of its helpers while the first chunk was being written")
	}
	if most := w.most.Load(); most != 1 {
		t.Errorf("%d writes onto the replacement at once, want 1 (a write pool of one task's weight)", most)
	}
	check(t, g, rng, "after the rebuild", objs, byID, avail(len(g.Disks), 0))
}

// TestWitness: a group that wrote nothing has no witness; after an export
// every disk's witness is a shard the disk holds, and a disk whose data is
// gone (a new, empty node in its place) answers "not found" for it.
func TestWitness(t *testing.T) {
	ctx := context.Background()
	g, nodes := newGroup(t, "clay-4-2-5")
	for d := range g.Disks {
		if _, ok := g.Witness(d); ok {
			t.Fatalf("disk %d of an empty group has a witness", d)
		}
	}
	if _, ok := g.Witness(len(g.Disks)); ok {
		t.Fatal("a witness for a disk past the group")
	}
	// One object with a front and chunks on one data disk; the other data
	// disks hold nothing they must hold.
	recs, err := g.Export(ctx, [][]byte{bytes.Repeat([]byte{7}, 100<<10+5)})
	if err != nil {
		t.Fatal(err)
	}
	for d, id := range g.Disks {
		name, ok := g.Witness(d)
		if want := d == recs[0].Disk || d >= g.PG.K; ok != want {
			t.Fatalf("disk %d: witness %v, want %v", d, ok, want)
		}
		if !ok {
			continue
		}
		rc, err := nodes.Client.GetShard(ctx, id, name, 0, 1)
		if err != nil {
			t.Fatalf("disk %d does not hold its witness %s: %v", d, name, err)
		}
		rc.Close()
	}
	name, _ := g.Witness(g.PG.K)
	lost := g.Disks[g.PG.K]
	nodes.Stop(lost)
	g.Disks[g.PG.K] = nodes.Start(t, "fresh")
	if _, err := nodes.Client.GetShard(ctx, g.Disks[g.PG.K], name, 0, 1); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("an empty disk's answer for the witness: %v", err)
	}
}

// flakyDisks fails the first fail PutShard calls with err before they
// reach the node, and counts the calls.
type flakyDisks struct {
	cold.Disks
	err   error
	fail  int
	calls atomic.Int64
}

func (f *flakyDisks) PutShard(ctx context.Context, disk cairn.DiskID, name string, r io.Reader) (wire.ShardInfo, error) {
	if f.calls.Add(1) <= int64(f.fail) {
		return wire.ShardInfo{}, f.err
	}
	return f.Disks.PutShard(ctx, disk, name, r)
}

// TestPutSlotRetries: a slot's write that meets a transient failure (a
// dropped connection) is made again and lands whole; a permanent one is
// not retried; and failures past the retry policy's attempts are returned.
func TestPutSlotRetries(t *testing.T) {
	g, _ := newGroup(t, "clay-4-2-5")
	ctx := context.Background()
	l := g.PG.Stripe(2, 0)[0]
	data := bytes.Repeat([]byte{7}, int(l.Length))
	nodes := g.Nodes
	all := []bool{true, true, true, true, true, true}
	for _, tc := range []struct {
		err   error
		fail  int
		calls int64
		ok    bool
	}{
		{fmt.Errorf("%w: write: broken pipe", cairn.ErrUnavailable), 2, 3, true},
		{fmt.Errorf("%w: bad name", cairn.ErrInvalid), 1, 1, false},
		{fmt.Errorf("%w: node gone", cairn.ErrUnavailable), 10, 3, false},
	} {
		f := &flakyDisks{Disks: nodes, err: tc.err, fail: tc.fail}
		g.Nodes = f
		err := g.PutSlot(ctx, l, data)
		if (err == nil) != tc.ok || f.calls.Load() != tc.calls {
			t.Fatalf("%v ×%d: PutSlot %v after %d calls, want ok %v after %d", tc.err, tc.fail, err, f.calls.Load(), tc.ok, tc.calls)
		}
		if !tc.ok && !errors.Is(err, tc.err) {
			t.Errorf("PutSlot returned %v, want it to wrap %v", err, tc.err)
		}
		if tc.ok {
			got, err := g.ReadRange(ctx, l, all)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("slot after a retried write: %v", err)
			}
		}
	}
}

// readsBack records, per shard name, the writes and the reads after one,
// to catch an export that reads back a unit it has just written.
type readsBack struct {
	cold.Disks
	mu      sync.Mutex
	put     map[string]bool
	readOwn []string
}

func (r *readsBack) PutShard(ctx context.Context, disk cairn.DiskID, name string, rd io.Reader) (wire.ShardInfo, error) {
	r.mu.Lock()
	r.put[name] = true
	r.mu.Unlock()
	return r.Disks.PutShard(ctx, disk, name, rd)
}

func (r *readsBack) GetShard(ctx context.Context, disk cairn.DiskID, name string, off, n int64) (io.ReadCloser, error) {
	r.mu.Lock()
	if r.put[name] {
		r.readOwn = append(r.readOwn, name)
	}
	r.mu.Unlock()
	return r.Disks.GetShard(ctx, disk, name, off, n)
}

// TestExportReadsNoChunkBack: a row's parity is computed from the chunks
// the export has just written, as it holds them, not from reading them
// back off their disks — a fresh group's rows (every one Fresh) and, after
// a release, reused slots (Delta) alike. The objects read back byte-exact.
func TestExportReadsNoChunkBack(t *testing.T) {
	ctx := context.Background()
	g, _ := newGroup(t, "clay-4-2-5")
	rb := &readsBack{Disks: g.Nodes, put: map[string]bool{}}
	g.Nodes = rb
	rng := rand.New(rand.NewPCG(18, 14))
	var objs [][]byte
	for range 6 {
		objs = append(objs, randBytes(rng, 1+rng.IntN(900<<10)))
	}
	recs, err := g.Export(ctx, objs)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.PG.Release(recs[0]); err != nil {
		t.Fatal(err)
	}
	rb.put = map[string]bool{} // the second export: what it writes itself
	more := [][]byte{randBytes(rng, 700<<10)}
	recs2, err := g.Export(ctx, more)
	if err != nil {
		t.Fatal(err)
	}
	// The chunks' slots (a small page is read, filled and written, and
	// its parity re-encoded from the pages: not a chunk).
	chunks := map[string]bool{}
	for _, r := range append(slices.Clone(recs), recs2...) {
		locs, err := g.PG.Pieces(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range locs {
			if l.File != gp.SmallFile {
				chunks[cold.UnitShard(g, l.Disk, l.File, l.Offset/l.Length)] = true
			}
		}
	}
	if len(chunks) == 0 {
		t.Fatal("the objects have no chunks")
	}
	for _, name := range rb.readOwn {
		if chunks[name] {
			t.Fatalf("the export read back the chunk %s, which it had just written", name)
		}
	}
	all := []bool{true, true, true, true, true, true}
	for i, o := range append(objs[1:], more...) {
		r := recs2[0]
		if i+1 < len(objs) {
			r = recs[i+1]
		}
		var got bytes.Buffer
		if err := g.Read(ctx, r, 0, r.Size, all, &got); err != nil || !bytes.Equal(got.Bytes(), o) {
			t.Fatalf("object %d after the exports: %v", i+1, err)
		}
	}
}
