package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"cairn"
	"cairn/client"
	"cairn/meta/mem"
	"cairn/node"
	"cairn/node/nodetest"
	"cairn/raidp"
	"cairn/repair/raidprun"
)

// cutDisks is the node client of a recovery that is interrupted after
// a given number of slot writes (copies, rebuilt ranges, zeroes): the
// write that reaches the count lands, then the recovery's context is
// cancelled, so every boundary between two writes is a point where a
// recovery stops.
type cutDisks struct {
	*node.Client
	mu     sync.Mutex
	left   int // writes before the cut; < 0: never
	cancel context.CancelFunc
	writes int // every write landed
}

func (c *cutDisks) arm(n int, cancel context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.left, c.cancel = n, cancel
}

func (c *cutDisks) landed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	if c.left > 0 {
		if c.left--; c.left == 0 {
			c.cancel()
		}
	}
}

func (c *cutDisks) WriteRAIDP(ctx context.Context, disk cairn.DiskID, slot int, off int64, p []byte) error {
	if err := c.Client.WriteRAIDP(ctx, disk, slot, off, p); err != nil {
		return err
	}
	c.landed()
	return nil
}

func (c *cutDisks) ZeroRAIDP(ctx context.Context, disk cairn.DiskID, slot int, off, n int64) error {
	if err := c.Client.ZeroRAIDP(ctx, disk, slot, off, n); err != nil {
		return err
	}
	c.landed()
	return nil
}

// recoverCut runs the recovery of failed until it completes, run i
// (from 0) cut after first+i writes, and returns the group and the
// number of interrupted runs. Each run resumes the stored plan, redoing
// the steps in flight at the cut whole: a run must get further than the
// last to finish, hence the growing cut.
func recoverCut(t *testing.T, c *client.Client, cut *cutDisks, failed []cairn.DiskID, first int) (raidp.Group, int) {
	t.Helper()
	for runs := 0; runs < 500; runs++ {
		ctx, cancel := context.WithCancel(context.Background())
		cut.arm(first+runs, cancel)
		g, err := c.RecoverRAIDP(ctx, failed)
		cancel()
		if err == nil {
			return g, runs
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("recovering %v, run %d: %v", failed, runs+1, err)
		}
	}
	t.Fatalf("recovering %v: not done after 500 runs", failed)
	return raidp.Group{}, 0
}

// checkLstors fails the test unless every live disk's Lstor is the XOR
// of the superchunks the group's layout puts on it (no stray bytes in
// its free slots) and the two replicas of every superchunk agree.
func checkLstors(t *testing.T, nodes *nodetest.Nodes, g raidp.Group, when string) {
	t.Helper()
	ctx := context.Background()
	disks := map[int]raidprun.Disk{}
	for i, d := range g.Disks {
		if slices.Contains(g.Out, i) {
			continue
		}
		id := cairn.DiskID(d.ID)
		disks[i] = raidprun.Remote(ctx, nodes.Client, id)
		xor, b := make([]byte, g.Size), make([]byte, g.Size)
		for _, s := range g.Layout.OnDisk(i) {
			p, _ := s.On(i)
			if err := nodes.Client.ReadRAIDP(ctx, id, p.Slot, b, 0); err != nil {
				t.Fatal(err)
			}
			for j := range xor {
				xor[j] ^= b[j]
			}
		}
		if err := nodes.Client.ReadLstor(ctx, id, b, 0); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(xor, b) {
			t.Errorf("%s: the Lstor of disk %d (%s) is not the XOR of its layout's superchunks", when, i, id)
		}
	}
	div, err := raidprun.Verify(ctx, g.Layout, disks, raidprun.Config{Size: g.Size})
	if err != nil || len(div) > 0 {
		t.Errorf("%s: replicas differ: %v, %v", when, div, err)
	}
}

// TestRAIDPRecoverResumes interrupts RAIDP recoveries at every write
// boundary and resumes them from their stored plan (docs/design/raidp.md,
// "Stored plan"): disk A is lost and its re-mirroring interrupted
// half-way; then disk B is lost too, so that plan is given up for a dual
// plan whose first phase zeroes what the abandoned copies left; that one
// is interrupted after every write until it completes. Then two more
// disks fail, one of them a receiver of the abandoned plan, sharing a
// superchunk: their rebuild reads an Lstor the first recovery touched.
// After each recovery every object reads back byte-exact, every Lstor is
// the XOR of its layout's superchunks and the replicas agree.
func TestRAIDPRecoverResumes(t *testing.T) {
	ctx := context.Background()
	const size, n, slots, rows = 1 << 20, 10, 6, 2
	meta, nodes := mem.New(), nodetest.New()
	var gd []raidp.GroupDisk
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("node%d", i)
		disk := nodes.StartRAIDP(t, id, size, slots)
		if err := meta.PutNode(ctx, cairn.Node{ID: cairn.NodeID(id), Addr: "nodetest"}); err != nil {
			t.Fatal(err)
		}
		if err := meta.PutDisk(ctx, cairn.Disk{ID: disk, Node: cairn.NodeID(id), Capacity: 1 << 40, State: cairn.DiskUp,
			RAIDPSize: size, RAIDPSlots: slots}); err != nil {
			t.Fatal(err)
		}
		gd = append(gd, raidp.GroupDisk{ID: string(disk), Domain: id})
	}
	if err := meta.CreateBucket(ctx, cairn.Bucket{Name: "warm", Policy: cairn.RAIDPPolicy}); err != nil {
		t.Fatal(err)
	}
	g0, err := raidp.NewGroup(client.DefaultRAIDPGroup, gd, size, slots, rows)
	if err != nil {
		t.Fatal(err)
	}
	if err := meta.UpdateRAIDP(ctx, "groups/"+g0.Name, func([]byte) ([]byte, error) { return jsonOf(t, g0), nil }); err != nil {
		t.Fatal(err)
	}
	c := client.New(meta, nodes.Client, client.Config{})
	cut := &cutDisks{Client: nodes.Client, left: -1}
	rc := client.New(meta, cut, client.Config{RAIDPRecoveryChunk: size / 4})

	// Fill every superchunk, most of it.
	objects := map[string][]byte{}
	for i := range len(g0.Layout.Superchunks) {
		p := randomBytes(3*size/4+i*777, uint64(i))
		key := fmt.Sprintf("o%d", i)
		if _, err := c.Put(ctx, "warm", key, bytes.NewReader(p), client.PutOptions{Size: int64(len(p))}); err != nil {
			t.Fatal(err)
		}
		objects[key] = p
	}
	id := func(g raidp.Group, d int) cairn.DiskID { return cairn.DiskID(g.Disks[d].ID) }

	// Disks A and B: A's re-mirroring is interrupted, then B is lost
	// too and that plan is given up for a dual one that leaves a slot the
	// first plan wrote to unused: it must be zeroed.
	a, b, stray := -1, -1, raidp.Place{}
	for x := range n {
		p1, err := raidp.PlanRecovery(g0, []int{x}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for y := range n {
			p2, err := raidp.PlanRecovery(g0, []int{x, y}, map[int]bool{x: true, y: true}, &p1)
			if i := slices.IndexFunc(p2.Steps, func(s raidp.Step) bool { return s.Kind == raidp.StepZero }); err == nil && i >= 0 && a < 0 {
				a, b, stray = x, y, p2.Steps[i].To
			}
		}
	}
	if a < 0 {
		t.Fatalf("no dual failure gives up a slot of a single failure's plan in %v", g0.Layout)
	}
	// A lost; its re-mirroring (4 chunks per superchunk, the superchunks
	// in parallel) stops after 6 writes.
	nodes.Replace(t, id(g0, a))
	actx, cancel := context.WithCancel(ctx)
	cut.arm(6, cancel)
	if _, err := rc.RecoverRAIDP(actx, []cairn.DiskID{id(g0, a)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted re-mirroring of disk %d: %v (%d writes)", a, err, cut.writes)
	}
	cancel()
	p1, err := rc.RAIDPRecovery(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p1.Generation != g0.Generation || !slices.Equal(p1.Failed, []int{a}) || len(p1.Steps) == 0 {
		t.Fatalf("stored plan after the interruption: %+v", p1)
	}
	// Resumed once more (one more write): the same plan, not a new one.
	actx, cancel = context.WithCancel(ctx)
	cut.arm(1, cancel)
	if _, err := rc.RecoverRAIDP(actx, []cairn.DiskID{id(g0, a)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("the resumed re-mirroring of disk %d: %v", a, err)
	}
	cancel()
	if again, err := rc.RAIDPRecovery(ctx); err != nil || again.Attempt != p1.Attempt || !samePlaces(again, p1) {
		t.Fatalf("the resumed plan changed: %+v, %v; was %+v", again, err, p1)
	}
	buf := make([]byte, size)
	if err := nodes.Client.ReadRAIDP(ctx, id(g0, stray.Disk), stray.Slot, buf, 0); err != nil || !slices.ContainsFunc(buf, func(x byte) bool { return x != 0 }) {
		t.Fatalf("slot %+v, to be abandoned, holds no copied bytes (%v): the test would not exercise its zeroing", stray, err)
	}
	nodes.Replace(t, id(g0, b))
	g1, runs := recoverCut(t, rc, cut, []cairn.DiskID{id(g0, a), id(g0, b)}, 1)
	p2, err := rc.RAIDPRecovery(ctx)
	if err != nil {
		t.Fatal(err)
	}
	zeroes := 0
	for _, s := range p2.Steps {
		if s.Kind == raidp.StepZero {
			zeroes++
		}
	}
	t.Logf("dual recovery of disks %d and %d: %d steps (%d zeroes of the abandoned plan), %d interrupted runs", a, b, len(p2.Steps), zeroes, runs)
	if p2.Attempt != p1.Attempt+1 || zeroes == 0 || !p2.Complete() || g1.Generation != g0.Generation+1 || runs < 2 {
		t.Fatalf("the dual recovery: plan attempt %d complete %v, group generation %d, %d runs", p2.Attempt, p2.Complete(), g1.Generation, runs)
	}
	getAll(t, c, objects, fmt.Sprintf("disks %d and %d recovered", a, b))
	checkLstors(t, nodes, g1, "after the first recovery")

	// Two more disks fail, sharing a superchunk: C the disk whose slot
	// was abandoned and zeroed, so their rebuild reads its Lstor.
	cd := [2]int{stray.Disk, -1}
	for d := range n {
		if _, ok := g1.Layout.Shared(cd[0], d); ok && d != cd[0] && !slices.Contains(g1.Out, d) && cd[1] < 0 {
			cd[1] = d
		}
	}
	if cd[1] < 0 {
		t.Fatalf("disk %d shares no superchunk after the first recovery", cd[0])
	}
	nodes.Replace(t, id(g1, cd[0]))
	nodes.Replace(t, id(g1, cd[1]))
	g2, runs := recoverCut(t, rc, cut, []cairn.DiskID{id(g1, cd[0]), id(g1, cd[1])}, 2)
	p3, err := rc.RAIDPRecovery(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(p3.Steps, func(s raidp.Step) bool { return s.Kind == raidp.StepRebuild && s.Rebuild.Lstor == cd[0] }) {
		t.Fatalf("the second dual rebuild does not read the Lstor of disk %d: %+v", cd[0], p3.Steps)
	}
	t.Logf("second dual recovery of disks %v: %d steps, %d interrupted runs", cd, len(p3.Steps), runs)
	if g2.Generation != g1.Generation+1 || len(g2.Out) != 4 {
		t.Fatalf("group after the second recovery: generation %d, out %v", g2.Generation, g2.Out)
	}
	getAll(t, c, objects, fmt.Sprintf("disks %v recovered too", cd))
	checkLstors(t, nodes, g2, "after the second recovery")
}

// samePlaces reports whether two plans have the same steps, progress
// aside.
func samePlaces(x, y raidp.Recovery) bool {
	return slices.EqualFunc(x.Steps, y.Steps, func(a, b raidp.Step) bool {
		a.Done, b.Done = false, false
		return a.Kind == b.Kind && a.To == b.To && fmt.Sprint(a.From, a.Rebuild) == fmt.Sprint(b.From, b.Rebuild) && a.Superchunk == b.Superchunk
	})
}

func jsonOf(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
