package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/meta/mem"
	"cairn/node/nodetest"
	"cairn/raidp"
)

// raidpCluster starts n real nodes with one disk each, served with an
// Lstor of 4 superchunks of size bytes, registered in an in-memory
// metadata store with a bucket "warm" of policy raidp.
func raidpCluster(t testing.TB, n int, size int64) (*mem.Store, *nodetest.Nodes, []cairn.DiskID) {
	t.Helper()
	ctx := context.Background()
	meta, nodes := mem.New(), nodetest.New()
	var disks []cairn.DiskID
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("node%d", i)
		disk := nodes.StartRAIDP(t, id, size, 4)
		disks = append(disks, disk)
		if err := meta.PutNode(ctx, cairn.Node{ID: cairn.NodeID(id), Addr: "nodetest"}); err != nil {
			t.Fatal(err)
		}
		if err := meta.PutDisk(ctx, cairn.Disk{ID: disk, Node: cairn.NodeID(id), Capacity: 1 << 40, State: cairn.DiskUp,
			RAIDPSize: size, RAIDPSlots: 4}); err != nil {
			t.Fatal(err)
		}
	}
	if err := meta.CreateBucket(ctx, cairn.Bucket{Name: "warm", Policy: cairn.RAIDPPolicy}); err != nil {
		t.Fatal(err)
	}
	return meta, nodes, disks
}

// getAll reads every object of bucket warm whole and fails the test
// unless each is byte-exact.
func getAll(t *testing.T, c *client.Client, objects map[string][]byte, when string) {
	t.Helper()
	for key, want := range objects {
		_, rc, err := c.Get(context.Background(), "warm", key, 0, -1)
		if err != nil {
			t.Fatalf("%s: get %s: %v", when, key, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: get %s: %d bytes, %v; want %d bytes", when, key, len(got), err, len(want))
		}
	}
}

func randomBytes(n int, seed uint64) []byte {
	p := make([]byte, n)
	rng := rand.New(rand.NewPCG(seed, 7))
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	return p
}

// TestRAIDPPutGet stores raidp objects on real nodes — empty, small, one
// spanning superchunks, one of unknown size — reads them back whole and
// in ranges, checks that every disk's Lstor is the XOR of its slots, then
// stops a node: every object still reads byte-exact from the mirrors, and
// a PUT that needs the stopped disk fails and leaves its other replica
// zeroed.
func TestRAIDPPutGet(t *testing.T) {
	ctx := context.Background()
	const size = 2 << 20
	meta, nodes, disks := raidpCluster(t, 6, size)
	c := client.New(meta, nodes.Client, client.Config{})

	objects := map[string][]byte{
		"empty": {},
		"small": randomBytes(1000, 1),
		"block": randomBytes(cairn.RAIDPBlock+17, 2),
		"large": randomBytes(size+size/2+5, 3), // spans two or three superchunks
	}
	for _, key := range []string{"empty", "small", "block", "large"} {
		m, err := c.Put(ctx, "warm", key, bytes.NewReader(objects[key]), client.PutOptions{Size: int64(len(objects[key]))})
		if err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
		if m.Policy != cairn.RAIDPPolicy || m.RAIDP == nil || m.RAIDP.Group != client.DefaultRAIDPGroup {
			t.Fatalf("put %s: manifest %+v", key, m)
		}
	}
	unknown := randomBytes(300_000, 4)
	if _, err := c.Put(ctx, "warm", "unknown", bytes.NewReader(unknown), client.PutOptions{Size: -1}); err != nil {
		t.Fatal(err)
	}
	objects["unknown"] = unknown
	// A bucket with Object Lock: the raidp object gets its default
	// retention, as any object does.
	if err := meta.CreateBucket(ctx, cairn.Bucket{Name: "locked", Policy: cairn.RAIDPPolicy, Versioning: cairn.VersioningEnabled,
		ObjectLock: &cairn.ObjectLock{Mode: cairn.LockGovernance, Days: 1}}); err != nil {
		t.Fatal(err)
	}
	if m, err := c.Put(ctx, "locked", "k", bytes.NewReader([]byte("kept")), client.PutOptions{Size: 4}); err != nil || m.Retention == nil || m.Retention.Mode != cairn.LockGovernance {
		t.Errorf("a raidp put into a bucket with Object Lock: %v, retention %+v", err, m)
	}
	if m, _ := c.Stat(ctx, "warm", "large"); len(m.RAIDP.Spans) < 2 {
		t.Errorf("an object larger than a superchunk has %d spans", len(m.RAIDP.Spans))
	}

	g, err := c.RAIDPGroup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Disks) != 6 || g.Disks[0].Domain != "node1" || g.Size != size {
		t.Errorf("group %+v", g)
	}

	check := func(when string) {
		t.Helper()
		getAll(t, c, objects, when)
		for key, want := range objects {
			if len(want) < 10 {
				continue
			}
			for _, r := range [][2]int64{{1, 5}, {int64(len(want)) - 3, 3}, {int64(len(want)) / 3, int64(len(want)) / 2}} {
				_, rc, err := c.Get(ctx, "warm", key, r[0], r[1])
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || !bytes.Equal(got, want[r[0]:r[0]+r[1]]) {
					t.Fatalf("%s: get %s [%d, +%d): %v", when, key, r[0], r[1], err)
				}
			}
		}
	}
	check("all disks up")

	// Every disk's parity is the XOR of its slots.
	for _, d := range disks {
		xor := make([]byte, size)
		slot := make([]byte, size)
		for s := range 4 {
			for o := int64(0); o < size; o += 1 << 20 {
				if err := nodes.Client.ReadRAIDP(ctx, d, s, slot[o:o+1<<20], o); err != nil {
					t.Fatal(err)
				}
			}
			for i := range xor {
				xor[i] ^= slot[i]
			}
		}
		par := make([]byte, size)
		for o := int64(0); o < size; o += 1 << 20 {
			if err := nodes.Client.ReadLstor(ctx, d, par[o:o+1<<20], o); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(par, xor) {
			t.Errorf("disk %s: the Lstor is not the XOR of its slots", d)
		}
	}

	// One node down: everything reads from the mirrors.
	large, _ := c.Stat(ctx, "warm", "large")
	down := large.RAIDP.Spans[0].Disks[0]
	nodes.Stop(down)
	check(fmt.Sprintf("disk %s down", down))

	// Once the cluster map holds the disk down, PUTs keep off its
	// superchunks and succeed.
	if err := meta.SetDiskState(ctx, down, cairn.DiskDown, time.Now()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		m, err := c.Put(ctx, "warm", fmt.Sprintf("while-down-%d", i), bytes.NewReader(randomBytes(70_000, 20)), client.PutOptions{Size: 70_000})
		if err != nil {
			t.Fatalf("a put with a disk marked down: %v", err)
		}
		for _, sp := range m.RAIDP.Spans {
			if sp.Disks[0] == down || sp.Disks[1] == down {
				t.Errorf("a put wrote to disk %s, marked down: %+v", down, sp)
			}
		}
	}
	if err := meta.SetDiskState(ctx, down, cairn.DiskUp, time.Now()); err != nil { // as before the director noticed
		t.Fatal(err)
	}

	// A PUT into a superchunk on the stopped disk fails, and its chunk on
	// the live replica is zeroed again (the replicas agree).
	alloc := func() client.RAIDPAlloc {
		t.Helper()
		b, err := meta.RAIDP(ctx, "alloc/"+g.Name)
		if err != nil {
			t.Fatal(err)
		}
		var a client.RAIDPAlloc
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	// Fill the superchunks before the first with room on the stopped disk
	// (packing goes in superchunk order), then put into that one.
	a := alloc()
	var before int64
	var target *cairn.RAIDPSpan
	for _, s := range g.Layout.Superchunks {
		d0, d1 := cairn.DiskID(g.Disks[s.Replicas[0].Disk].ID), cairn.DiskID(g.Disks[s.Replicas[1].Disk].ID)
		free := size - a.End[s.ID]
		if free > 0 && (d0 == down || d1 == down) {
			live, slot := d1, s.Replicas[1].Slot
			if d1 == down {
				live, slot = d0, s.Replicas[0].Slot
			}
			target = &cairn.RAIDPSpan{Superchunk: s.ID, Offset: a.End[s.ID], Length: min(free, 5000), Disks: [2]cairn.DiskID{live}, Slots: [2]int{slot}}
			break
		}
		before += free
	}
	if target == nil {
		t.Fatal("no superchunk with room on the stopped disk")
	}
	if before > 0 {
		if _, err := c.Put(ctx, "warm", "filler", bytes.NewReader(randomBytes(int(before), 8)), client.PutOptions{Size: before}); err != nil {
			t.Fatalf("a put away from the stopped disk: %v", err)
		}
	}
	if _, err := c.Put(ctx, "warm", "doomed", bytes.NewReader(randomBytes(int(target.Length), 9)), client.PutOptions{Size: target.Length}); !errors.Is(err, cairn.ErrUnavailable) {
		t.Fatalf("a put to a stopped disk: %v, want ErrUnavailable", err)
	}
	if a := alloc(); a.End[target.Superchunk] != target.Offset+target.Length {
		t.Fatalf("the failed put did not go to superchunk %d at %d: ends %v", target.Superchunk, target.Offset, a.End)
	}
	failed := target
	got := make([]byte, failed.Length)
	if err := nodes.Client.ReadRAIDP(ctx, failed.Disks[0], failed.Slots[0], got, failed.Offset); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, make([]byte, len(got))) {
		t.Errorf("the live replica of a failed put's chunk (superchunk %d at %d on %s) was not zeroed", failed.Superchunk, failed.Offset, failed.Disks[0])
	}
	if _, err := c.Stat(ctx, "warm", "doomed"); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("a failed put is visible: %v", err)
	}

	// The failed put's bytes are dead, and so are a deleted object's.
	dead := func() (n int64) {
		for _, d := range alloc().Dead {
			n += d
		}
		return n
	}
	d0 := dead()
	if d0 != target.Length {
		t.Errorf("dead bytes after a failed put of %d: %d", target.Length, d0)
	}
	if err := c.Delete(ctx, "warm", "small"); err != nil {
		t.Fatal(err)
	}
	if d := dead(); d != d0+1000 {
		t.Errorf("dead bytes after deleting 1000 more: %d, want %d", d, d0+1000)
	}
}

// TestRAIDPRecover loses two disks of a group that share a superchunk
// holding data (each replaced by an empty disk, its Lstor kept on its
// node), recovers the group over the nodes — the shared superchunk
// rebuilt from the Lstors and the mirrors, every superchunk of the two
// re-mirrored — and reads every object back byte-exact; PUTs after the
// recovery avoid the lost disks. Then one more disk is lost and
// re-mirrored.
func TestRAIDPRecover(t *testing.T) {
	ctx := context.Background()
	const size = 1 << 20
	meta, nodes, _ := raidpCluster(t, 6, size)
	c := client.New(meta, nodes.Client, client.Config{})
	objects := map[string][]byte{}
	put := func(key string, n int, seed uint64) {
		t.Helper()
		p := randomBytes(n, seed)
		if _, err := c.Put(ctx, "warm", key, bytes.NewReader(p), client.PutOptions{Size: int64(n)}); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
		objects[key] = p
	}
	// Fill most of the group's 6 superchunks.
	for i := range 6 {
		put(fmt.Sprintf("o%d", i), 3*size/4+i*1000, uint64(i))
	}
	check := func(when string) {
		t.Helper()
		getAll(t, c, objects, when)
	}
	check("before")
	g, err := c.RAIDPGroup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Superchunk 0 holds data; its two disks are lost.
	x := g.Layout.Superchunks[0]
	a, b := cairn.DiskID(g.Disks[x.Replicas[0].Disk].ID), cairn.DiskID(g.Disks[x.Replicas[1].Disk].ID)
	nodes.Replace(t, a)
	nodes.Replace(t, b)
	after, err := c.RecoverRAIDP(ctx, []cairn.DiskID{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if after.Generation != g.Generation+1 || len(after.Out) != 2 {
		t.Fatalf("group after the recovery: generation %d, out %v", after.Generation, after.Out)
	}
	for _, s := range after.Layout.Superchunks {
		for _, p := range s.Replicas {
			if d := cairn.DiskID(after.Disks[p.Disk].ID); d == a || d == b {
				t.Fatalf("superchunk %d is still on lost disk %s", s.ID, d)
			}
		}
	}
	check(fmt.Sprintf("disks %s and %s lost and recovered", a, b))
	if again, err := c.RecoverRAIDP(ctx, []cairn.DiskID{a, b}); err != nil || again.Generation != after.Generation {
		t.Errorf("recovering again: generation %d, %v", again.Generation, err)
	}
	for i := range 3 {
		key := fmt.Sprintf("after%d", i)
		put(key, size/3, uint64(100+i))
		m, _ := c.Stat(ctx, "warm", key)
		if m.RAIDP.Generation != after.Generation {
			t.Errorf("a put after the recovery wrote generation %d", m.RAIDP.Generation)
		}
		for _, sp := range m.RAIDP.Spans {
			if sp.Disks[0] == a || sp.Disks[1] == a || sp.Disks[0] == b || sp.Disks[1] == b {
				t.Errorf("a put after the recovery wrote to a lost disk: %+v", sp)
			}
		}
	}
	check("after more puts")

}

// TestRAIDPRecoverOne loses one disk of a group (its node stopped) and
// re-mirrors its superchunks: every object reads back byte-exact, and no
// superchunk is left on the disk.
func TestRAIDPRecoverOne(t *testing.T) {
	ctx := context.Background()
	const size = 1 << 20
	meta, nodes, _ := raidpCluster(t, 6, size)
	c := client.New(meta, nodes.Client, client.Config{})
	objects := putWarm(t, c, 5, func(i int) int { return size/2 + i*999 })
	g, err := c.RAIDPGroup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lost := cairn.DiskID(g.Disks[g.Layout.Superchunks[0].Replicas[1].Disk].ID)
	nodes.Stop(lost)
	after, err := c.RecoverRAIDP(ctx, []cairn.DiskID{lost})
	if err != nil {
		t.Fatal(err)
	}
	if i := slicesIndex(after.Disks, lost); !slicesContains(after.Out, i) || len(after.Layout.OnDisk(i)) != 0 {
		t.Fatalf("group after re-mirroring %s: out %v", lost, after.Out)
	}
	getAll(t, c, objects, "after re-mirroring")
}

func slicesIndex(ds []raidp.GroupDisk, id cairn.DiskID) int {
	for i, d := range ds {
		if d.ID == string(id) {
			return i
		}
	}
	return -1
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
