package repair

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/meta"
	"cairn/node/wire"
	"cairn/placement"
	"cairn/repair/decide"
)

// GetShard lets an lt repair read blocks (shardGetter).
func (f *fakeExec) GetShard(ctx context.Context, disk cairn.DiskID, name string, off, n int64) (io.ReadCloser, error) {
	return f.s.GetShard(ctx, disk, name, off, n)
}

// readAll reads key back whole.
func readAll(t *testing.T, c *client.Client, key string) []byte {
	t.Helper()
	_, rc, err := c.Get(context.Background(), "bkt", key, 0, -1)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return b
}

// checkCoded checks that every lt object of e has n blocks per stripe,
// none on a disk that is not up, IDs fresh after a repair (at or above
// the stripe's Next as written), the per-disk and per-node bounds over
// the up disks kept, and that it reads back byte-exact.
func (e *env) checkCoded(t *testing.T, k, n int) {
	t.Helper()
	ctx := context.Background()
	disks, _ := e.meta.Disks(ctx)
	up := map[cairn.DiskID]cairn.Disk{}
	var nodeOf []cairn.NodeID
	for _, d := range disks {
		if d.State == cairn.DiskUp {
			up[d.ID] = d
			nodeOf = append(nodeOf, d.Node)
		}
	}
	bounds := placement.CodedBounds(k, n, placement.CodedMargin, nodeOf)
	for key, want := range e.data {
		m, err := e.meta.Manifest(ctx, "bkt", key)
		if err != nil {
			t.Fatal(err)
		}
		for s, cs := range m.Coded {
			orig := e.orig[key].Coded[s]
			if len(cs.Blocks) != n {
				t.Fatalf("%s stripe %d: %d blocks, want %d", key, s, len(cs.Blocks), n)
			}
			onDisk, onNode := map[cairn.DiskID]int{}, map[cairn.NodeID]int{}
			for _, b := range cs.Blocks {
				d, ok := up[b.Disk]
				if !ok {
					t.Fatalf("%s stripe %d: block %d on %s, which is not up", key, s, b.ID, b.Disk)
				}
				onDisk[b.Disk]++
				onNode[d.Node]++
				if !slices.Contains(orig.Blocks, b) && b.ID < orig.Next {
					t.Fatalf("%s stripe %d: new block %d reuses an ID below %d", key, s, b.ID, orig.Next)
				}
				if b.ID >= cs.Next {
					t.Fatalf("%s stripe %d: block %d at or above Next %d", key, s, b.ID, cs.Next)
				}
				// Its file records the identity a PUT would have written,
				// which the collector and scrub find named (Layout.Refers).
				e.files.Mu.Lock()
				raw := e.files.Idents[string(b.Disk)+"/"+cairn.ShardName(cs.Version, b.ID)]
				e.files.Mu.Unlock()
				id, err := cairn.DecodeIdentity(raw)
				if err != nil || len(raw) != b.Ident {
					t.Fatalf("%s stripe %d: block %d's identity %q (%d bytes in the manifest): %v", key, s, b.ID, raw, b.Ident, err)
				}
				if ref, detail := m.Refers(m.Version, id, b.Disk, int64(cmp.Or(cs.BlockSize, m.BlockSize)), b.CRC); ref != cairn.Named {
					t.Fatalf("%s stripe %d: block %d's file is %v by its manifest (%s); identity %+v", key, s, b.ID, ref, detail, id)
				}
			}
			for d, c := range onDisk {
				if c > bounds.PerDisk {
					t.Fatalf("%s stripe %d: %d blocks on disk %s, bound %d", key, s, c, d, bounds.PerDisk)
				}
			}
			for nd, c := range onNode {
				if c > bounds.PerNode {
					t.Fatalf("%s stripe %d: %d blocks on node %s, bound %d", key, s, c, nd, bounds.PerNode)
				}
			}
		}
		if got := readAll(t, e.c, key); !bytes.Equal(got, want) {
			t.Fatalf("%s: read back %d bytes, differing", key, len(got))
		}
	}
}

// TestLTRepair: lt objects lose a node (two disks); Scan queues their
// stripes, Work decodes each and writes fresh blocks with new IDs within
// the bounds; every object reads back; then a second node is lost and
// repaired the same way.
func TestLTRepair(t *testing.T) {
	e := newEnvDisks(t, 6, 2, "lt-16-3", 6)
	ctx := context.Background()
	for key, m := range e.orig {
		if len(m.Coded) == 0 || m.Coded[0].Next < 48 {
			t.Fatalf("%s: not an lt object with Next recorded: %+v", key, m.Layout)
		}
	}
	r := New(e.meta, e.exec, Config{})
	for round := range 2 {
		// A node holding blocks (which ones the PUT kept depends on timing).
		node := strings.Split(string(e.orig["obj-000"].Coded[0].Blocks[0].Disk), "/")[0]
		e.loseNode(t, node)
		added, err := r.Scan(ctx, time.Unix(1000, 0))
		if err != nil {
			t.Fatal(err)
		}
		if added == 0 {
			t.Fatalf("round %d: no task queued", round)
		}
		ts, _ := meta.AllRepairTasks(ctx, e.meta)
		for _, task := range ts {
			if task.Stripe != "" || len(task.Lost) == 0 || task.Bytes == 0 {
				t.Fatalf("round %d: lt task %+v", round, task)
			}
		}
		drain(t, r, e.meta)
		if st := r.Stats(); st.Schemes["lt"] == 0 || st.Shards == 0 {
			t.Fatalf("round %d: stats %+v", round, st)
		}
		e.checkCoded(t, 16, 48)
		for key := range e.data {
			e.orig[key], _ = e.meta.Manifest(ctx, "bkt", key)
		}
	}
}

// TestLTRepairDamage: a corrupt block found by the repair while decoding
// (its CRC does not match the manifest) is replaced as well; a damage
// record (scrub) makes a task of its own.
func TestLTRepairDamage(t *testing.T) {
	e := newEnvDisks(t, 6, 2, "lt-16-3", 2)
	ctx := context.Background()
	key := "obj-000"
	m := e.orig[key]
	cs := m.Coded[0]
	// Damage the file of the lowest block (a repair reads blocks in ID
	// order: it is among the first read) and record damage for the
	// highest, as scrub would. Which IDs the PUT kept depends on timing.
	byID := func(a, b cairn.BlockLoc) int { return a.ID - b.ID }
	b0, b1 := slices.MinFunc(cs.Blocks, byID), slices.MaxFunc(cs.Blocks, byID)
	e.files.Mu.Lock()
	f := e.files.Files[string(b0.Disk)+"/"+cairn.ShardName(cs.Version, b0.ID)]
	f[0] ^= 0xff
	e.files.Mu.Unlock()
	if err := e.meta.PutDamage(ctx, cairn.Damage{Disk: b1.Disk, Shard: cairn.ShardName(cs.Version, b1.ID), Kind: cairn.DamageCorrupt,
		Source: cairn.DamageScrub, Found: time.Unix(900, 0)}); err != nil {
		t.Fatal(err)
	}
	r := New(e.meta, e.exec, Config{})
	drain(t, r, e.meta)
	got, _ := e.meta.Manifest(ctx, "bkt", key)
	for _, b := range got.Coded[0].Blocks {
		if b == b0 || b == b1 {
			t.Fatalf("damaged block %d still in the manifest; stats %+v", b.ID, r.Stats())
		}
	}
	if st := r.Stats(); st.HelpersMarked != 1 || st.DamageQueued != 1 {
		t.Fatalf("stats %+v: want 1 helper marked, 1 damage queued", st)
	}
	e.checkCoded(t, 16, 48)
}

// TestLTRepairUnrecoverable: a stripe with fewer than K blocks left is
// reported as unrecoverable, permanently (the longest backoff), and its
// task is kept.
func TestLTRepairUnrecoverable(t *testing.T) {
	e := newEnvDisks(t, 6, 2, "lt-16-3", 1)
	ctx := context.Background()
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		e.loseNode(t, n)
	}
	// Down disks may come back (the error is then transient); out ones
	// are gone for good.
	disks, _ := e.meta.Disks(ctx)
	for _, d := range disks {
		if d.State == cairn.DiskDown {
			if err := e.meta.SetDiskState(ctx, d.ID, cairn.DiskOut, time.Unix(0, 0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := e.orig["obj-000"]
	left := 0
	for _, b := range m.Coded[0].Blocks {
		if !strings.HasPrefix(string(b.Disk), "n1/") && !strings.HasPrefix(string(b.Disk), "n2/") &&
			!strings.HasPrefix(string(b.Disk), "n3/") && !strings.HasPrefix(string(b.Disk), "n4/") {
			left++
		}
	}
	if left >= 16 {
		t.Skipf("%d blocks left on two nodes: the bounds kept enough", left)
	}
	r := New(e.meta, e.exec, Config{MaxBackoff: time.Hour})
	now := time.Unix(1000, 0)
	if _, err := r.Scan(ctx, now); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Work(ctx, now); err != nil {
		t.Fatal(err)
	}
	ts, _ := meta.AllRepairTasks(ctx, e.meta)
	if len(ts) != 1 {
		t.Fatalf("%d tasks, want 1", len(ts))
	}
	if !strings.HasPrefix(ts[0].LastError, "permanent: ") || !strings.Contains(ts[0].LastError, ErrUnrecoverable.Error()) ||
		!ts[0].NotBefore.Equal(now.Add(time.Hour)) {
		t.Fatalf("task %+v: want a permanent unrecoverable error, retried after MaxBackoff", ts[0])
	}
}

// racingExec overwrites the object once, as the repair writes its first
// new block.
type racingExec struct {
	*fakeExec
	once  sync.Once
	race  func()
	wrote []cairn.ShardFile
}

func (x *racingExec) PutShardIdentified(ctx context.Context, disk cairn.DiskID, name string, ident []byte, r io.Reader) (wire.ShardInfo, error) {
	x.once.Do(x.race)
	x.wrote = append(x.wrote, cairn.ShardFile{Disk: disk, Name: name})
	return x.fakeExec.PutShardIdentified(ctx, disk, name, ident, r)
}

// TestLTRepairOverwriteRace: the object is overwritten while the repair
// writes new blocks. The commit's compare-and-swap fails, the task is
// dropped, the overwrite stays, and the new blocks are queued for
// deletion: nothing of the old version comes back.
func TestLTRepairOverwriteRace(t *testing.T) {
	e := newEnvDisks(t, 6, 2, "lt-16-3", 1)
	ctx := context.Background()
	e.loseNode(t, strings.Split(string(e.orig["obj-000"].Coded[0].Blocks[0].Disk), "/")[0])
	fresh := bytes.Repeat([]byte("new content "), 1000)
	x := &racingExec{fakeExec: e.exec, race: func() {
		if _, err := e.c.Put(ctx, "bkt", "obj-000", bytes.NewReader(fresh), client.PutOptions{Size: int64(len(fresh))}); err != nil {
			t.Error(err)
		}
	}}
	r := New(e.meta, x, Config{})
	now := time.Unix(1000, 0)
	if added, err := r.Scan(ctx, now); err != nil || added != 1 {
		t.Fatalf("scan: %d tasks, %v", added, err)
	}
	if _, err := r.Work(ctx, now); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Dropped != 1 || st.Repaired != 0 {
		t.Fatalf("stats %+v: want the task dropped", st)
	}
	if ts, _ := meta.AllRepairTasks(ctx, e.meta); len(ts) != 0 {
		t.Fatalf("tasks left: %+v", ts)
	}
	m, _ := e.meta.Manifest(ctx, "bkt", "obj-000")
	if m.Version == e.orig["obj-000"].Version || !bytes.Equal(readAll(t, e.c, "obj-000"), fresh) {
		t.Fatalf("the overwrite did not stay: version %s", m.Version)
	}
	cl, err := e.meta.Cleanups(ctx, time.Unix(1<<40, 0), 1000)
	if err != nil {
		t.Fatal(err)
	}
	queued := map[cairn.ShardFile]bool{}
	for _, c := range cl {
		for _, f := range c.Files {
			queued[f] = true
		}
	}
	if len(x.wrote) == 0 {
		t.Fatal("the repair wrote no block")
	}
	for _, f := range x.wrote {
		if !queued[f] {
			t.Fatalf("new block %v of the lost race is not queued for deletion", f)
		}
	}
}

// TestPlanCodedKeepsDrainingBlocksWithoutRoom: a block on a draining
// disk leaves only for a new block; with no disk to take one it stays.
func TestPlanCodedKeepsDrainingBlocksWithoutRoom(t *testing.T) {
	disks := []cairn.Disk{{ID: "a/1", Node: "a", State: cairn.DiskDraining}, {ID: "b/1", Node: "b", State: cairn.DiskUp}}
	v := decide.NewView([]cairn.Node{{ID: "a", Addr: "x"}, {ID: "b", Addr: "y"}}, disks)
	cs := &cairn.CodedStripe{Version: "v", Next: 4, Blocks: []cairn.BlockLoc{{ID: 0, Disk: "a/1"}, {ID: 1, Disk: "a/1"}, {ID: 2, Disk: "b/1"}, {ID: 3, Disk: "b/1"}}}
	pl, err := decide.PlanCoded(cs, 2, 4, v, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Keep)+len(pl.New) != 4 || len(pl.Drop) != len(pl.New) {
		t.Fatalf("plan %+v: a draining block was dropped without a replacement", pl)
	}
	if errors.Is(err, decide.ErrNoBlockIDs) {
		t.Fatal(err)
	}
}

// A draining disk is emptied of lt blocks too: they are read (the disk
// still serves them), replaced by fresh blocks elsewhere, and the census
// that ends the drain counts them until they are gone.
func TestLTDrain(t *testing.T) {
	e := newEnvDisks(t, 6, 2, "lt-16-3", 3)
	ctx := context.Background()
	victim := e.orig["obj-000"].Coded[0].Blocks[0].Disk
	r := New(e.meta, e.exec, Config{})
	e.setState(t, string(victim), cairn.DiskDraining)
	drain(t, r, e.meta)
	for key := range e.data {
		m, _ := e.meta.Manifest(ctx, "bkt", key)
		for _, cs := range m.Coded {
			for _, b := range cs.Blocks {
				if b.Disk == victim {
					t.Fatalf("%s: block %d still on the drained disk", key, b.ID)
				}
			}
		}
	}
	if _, err := r.Scan(ctx, time.Unix(1<<20, 0)); err != nil {
		t.Fatal(err)
	}
	census := r.Census().Refs
	if n := census[victim]; n != 0 {
		t.Fatalf("the census counts %d blocks on the drained disk", n)
	}
	total := 0
	for _, n := range census {
		total += n
	}
	if total != 3*48 {
		t.Fatalf("the census counts %d blocks, want the 3×48 of the objects", total)
	}
	e.setState(t, string(victim), cairn.DiskUp) // checkCoded's bounds are over the up disks
	e.checkCoded(t, 16, 48)
}

// The lt parts of an upload in progress are repaired too (their task
// names the upload; the part is updated in the upload), and the object
// the upload completes into reads back byte-exact.
func TestLTRepairUploadParts(t *testing.T) {
	e := newEnvDisks(t, 6, 2, "lt-16-3", 0)
	up := e.startUpload(t, "mp", 2)
	lost := strings.Split(string(up.before[0].Coded[0].Blocks[0].Disk), "/")[0]
	e.loseNode(t, lost)
	r := New(e.meta, e.exec, Config{})
	drain(t, r, e.meta)
	for _, p := range e.parts(t, up) {
		for _, cs := range p.Coded {
			if len(cs.Blocks) != 48 {
				t.Fatalf("part %d: %d blocks, want 48", p.Number, len(cs.Blocks))
			}
			for _, b := range cs.Blocks {
				if strings.HasPrefix(string(b.Disk), lost+"/") {
					t.Fatalf("part %d: block %d still on %s", p.Number, b.ID, b.Disk)
				}
			}
		}
	}
	if st := r.Stats(); st.Schemes["lt"] == 0 {
		t.Fatalf("no lt repair: %+v", st)
	}
	e.readBack(t, "mp", e.complete(t, up))
}

// BenchmarkLTRepair: one lt-128-3 object of one stripe (8 MiB of data in
// 64 KiB blocks, 384 blocks over 12 in-memory disks of 6 nodes) loses a
// node; each op scans and repairs it (read the blocks that decode it,
// encode and write the new ones, two compare-and-swaps), from the
// manifest as written. Bytes per op: the stripe's data.
func BenchmarkLTRepair(b *testing.B) {
	e := newEnvDisks(b, 6, 2, "lt-128-3", 0)
	ctx := context.Background()
	e.c = client.New(e.meta, e.files, client.Config{BlockSize: 64 << 10})
	data := make([]byte, 128*64<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	orig, err := e.c.Put(ctx, "bkt", "big", bytes.NewReader(data), client.PutOptions{Size: int64(len(data))})
	if err != nil {
		b.Fatal(err)
	}
	e.loseNode(b, strings.Split(string(orig.Coded[0].Blocks[0].Disk), "/")[0])
	r := New(e.meta, e.exec, Config{})
	now := time.Unix(1000, 0)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		cur, _ := e.meta.Manifest(ctx, "bkt", "big")
		if cur.Coded[0].Version != orig.Coded[0].Version || !slices.Equal(cur.Coded[0].Blocks, orig.Coded[0].Blocks) {
			back := *orig
			back.Coded = slices.Clone(orig.Coded)
			back.Coded[0].Next = cur.Coded[0].Next // IDs are never handed out twice
			if err := e.meta.UpdateManifest(ctx, &back, cur); err != nil {
				b.Fatal(err)
			}
		}
		now = now.Add(time.Hour)
		b.StartTimer()
		if n, err := r.Scan(ctx, now); err != nil || n != 1 {
			b.Fatalf("scan: %d tasks, %v", n, err)
		}
		if n, err := r.Work(ctx, now); err != nil || n != 1 {
			b.Fatalf("work: %d repaired, %v (%+v)", n, err, r.Stats())
		}
	}
}
