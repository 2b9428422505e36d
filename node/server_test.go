package node

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn"
	"cairn/internal/vfs"
	"cairn/meta"
	"cairn/node/volume"
)

// meta.Store is a Registry: the node needs only these three methods.
var _ Registry = meta.Store(nil)

// fakeRegistry records what a node registers (a working fake of the two
// meta.Store methods and KeepAlive).
type fakeRegistry struct {
	mu        sync.Mutex
	nodes     map[cairn.NodeID]cairn.Node
	disks     map[cairn.DiskID]cairn.Disk
	diskPuts  int
	putc      chan struct{} // a token after each PutDisk (buffered 1): waitPuts waits on it
	leaseCtx  context.Context
	holder    string
	ttl       time.Duration
	failAlive error
}

func newFakeRegistry() *fakeRegistry {
	return &fakeRegistry{nodes: map[cairn.NodeID]cairn.Node{}, disks: map[cairn.DiskID]cairn.Disk{},
		putc: make(chan struct{}, 1)}
}

func (f *fakeRegistry) PutNode(ctx context.Context, n cairn.Node) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes[n.ID] = n
	return nil
}

func (f *fakeRegistry) PutDisk(ctx context.Context, d cairn.Disk) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if old, ok := f.disks[d.ID]; ok && old.State != "" {
		d.State, d.Since = old.State, old.Since
	}
	f.disks[d.ID] = d
	f.diskPuts++
	select {
	case f.putc <- struct{}{}:
	default: // a token is already there; the waiter reads diskPuts anyway
	}
	return nil
}

func (f *fakeRegistry) KeepAlive(ctx context.Context, holder string, ttl time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failAlive != nil {
		return f.failAlive
	}
	f.leaseCtx, f.holder, f.ttl = ctx, holder, ttl
	return nil
}

func (f *fakeRegistry) puts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.diskPuts
}

// waitPuts waits until the registry has had n disk puts.
func (f *fakeRegistry) waitPuts(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for f.puts() < n {
		select {
		case <-f.putc:
		case <-deadline:
			t.Fatalf("%d disk puts, want %d", f.puts(), n)
		}
	}
}

func TestServerLifecycle(t *testing.T) {
	reg := newFakeRegistry()
	mem := vfs.NewMem()
	ticks := make(chan time.Time)
	cfg := Config{
		Node: "node1", Secret: testSecret, Registry: reg, Labels: cairn.Labels{cairn.LabelRack: "r1"},
		Disks: []DiskConfig{
			{ID: "node1/disk1", Path: "/d1", FS: mem},
			{ID: "node1/disk2", Path: t.TempDir() + "/d2"},
		},
		RefreshTicks: ticks, LeaseTTL: 3 * time.Second,
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, d := range cfg.Disks {
		fs := d.FS
		if fs == nil {
			fs = vfs.Default
		}
		fsckCleanup(t, fs, d.Path, d.ID)
	}
	defer s.Close()

	reg.mu.Lock()
	n := reg.nodes["node1"]
	if n.Addr != s.Addr() || n.Labels[cairn.LabelRack] != "r1" {
		t.Errorf("registered node %+v, addr %s", n, s.Addr())
	}
	for _, d := range cfg.Disks {
		got := reg.disks[d.ID]
		if got.Node != "node1" || got.State != cairn.DiskUp || got.Capacity <= 0 || got.Free <= 0 || got.Path != d.Path || got.FS == "" {
			t.Errorf("registered disk %+v", got)
		}
	}
	if reg.holder != "node1" || reg.ttl != 3*time.Second || reg.leaseCtx.Err() != nil {
		t.Errorf("lease %q %v %v", reg.holder, reg.ttl, reg.leaseCtx.Err())
	}
	leaseCtx := reg.leaseCtx
	reg.mu.Unlock()

	// Start registers each disk before it returns, and each volume's check
	// registers its disk again when it ends, in the background; after
	// that, each refresh re-registers them all.
	if n := reg.puts(); n < len(cfg.Disks) {
		t.Fatalf("%d disk puts after Start, want at least %d", n, len(cfg.Disks))
	}
	for _, d := range cfg.Disks {
		reg.waitDisk(t, d.ID, func(d cairn.Disk) bool { return d.Check == cairn.CheckOK })
	}
	refresh := func() {
		t.Helper()
		n := reg.puts()
		ticks <- time.Now()
		reg.waitPuts(t, n+len(cfg.Disks))
	}
	refresh()
	refresh()

	c := NewClient(testSecret, func(context.Context, cairn.DiskID) (string, error) { return s.Addr(), nil }, nil)
	data := randBytes(9, 100000)
	for _, d := range cfg.Disks {
		mustPutShard(t, c, d.ID, shardName(9, 0), data)
		got, err := readAll(t, c, d.ID, shardName(9, 0), 0, -1)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("get: %v", err)
		}
	}

	// A volume whose identity file vanishes (the directory was wiped or the
	// device unmounted) is reported as a fault, which the director turns
	// suspect, then down; the other disk stays healthy; the fault clears
	// when the file is back.
	idPath := "/d1/" + volume.IdentityName
	f, err := mem.Open(idPath)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	ident := make([]byte, st.Size())
	if _, err := f.ReadAt(ident, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := mem.Remove(idPath); err != nil {
		t.Fatal(err)
	}
	waitFault := func(want bool) { // at the next refresh
		t.Helper()
		refresh()
		reg.mu.Lock()
		bad, good := reg.disks["node1/disk1"], reg.disks["node1/disk2"]
		reg.mu.Unlock()
		if good.Fault != "" {
			t.Fatalf("healthy disk reported faulty: %s", good.Fault)
		}
		if (bad.Fault != "") != want {
			t.Fatalf("fault reported: %q, want a fault: %v", bad.Fault, want)
		}
	}
	waitFault(true)
	f, err = mem.Create(idPath)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(ident)
	f.Close()
	waitFault(false)

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if leaseCtx.Err() == nil {
		t.Error("lease still renewed after Close")
	}
	puts := reg.puts()
	select {
	case ticks <- time.Now():
		t.Error("refresh loop still running after Close")
	default:
	}
	if reg.puts() != puts {
		t.Error("disks registered after Close")
	}
	if _, err := c.DiskStat(context.Background(), "node1/disk1"); !errors.Is(err, cairn.ErrUnavailable) {
		t.Errorf("stat after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestServerStartFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no node", Config{Secret: "x", Disks: []DiskConfig{{ID: "d", Path: "/d", FS: vfs.NewMem()}}}},
		{"no secret", Config{Node: "n", Disks: []DiskConfig{{ID: "d", Path: "/d", FS: vfs.NewMem()}}}},
		{"no disks", Config{Node: "n", Secret: "x"}},
		{"duplicate disk", Config{Node: "n", Secret: "x", Disks: []DiskConfig{{ID: "d", Path: "/a"}, {ID: "d", Path: "/b"}}}},
	} {
		if _, err := NewServer(tc.cfg); !errors.Is(err, cairn.ErrInvalid) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// A lease that cannot be taken fails Start and stops everything.
	reg := newFakeRegistry()
	reg.failAlive = cairn.ErrUnavailable
	mem := vfs.NewMem()
	s, err := NewServer(Config{Node: "n", Secret: "x", Registry: reg, Disks: []DiskConfig{{ID: "n/d", Path: "/d", FS: mem}}})
	if err != nil {
		t.Fatal(err)
	}
	fsckCleanup(t, mem, "/d", "n/d")
	if err := s.Start(context.Background()); !errors.Is(err, cairn.ErrUnavailable) {
		t.Fatalf("start with a failing lease: %v", err)
	}
	if err := s.Start(context.Background()); err == nil {
		t.Fatal("restart after a failed Start")
	}
	// NoFormat refuses an empty directory.
	s, _ = NewServer(Config{Node: "n", Secret: "x", Disks: []DiskConfig{{ID: "n/e", Path: "/empty", FS: mem, NoFormat: true}}})
	if err := s.Start(context.Background()); !errors.Is(err, volume.ErrNotVolume) {
		t.Fatalf("start on an unformatted disk with NoFormat: %v", err)
	}
	// A disk that belongs to another disk ID is refused.
	s, _ = NewServer(Config{Node: "n", Secret: "x", Disks: []DiskConfig{{ID: "n/other", Path: "/d", FS: mem}}})
	if err := s.Start(context.Background()); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("start on a foreign disk: %v", err)
	}
}

// disk returns what the registry holds for disk id.
func (f *fakeRegistry) disk(id cairn.DiskID) cairn.Disk {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.disks[id]
}

// waitDisk waits until the registry's record of disk id satisfies ok.
func (f *fakeRegistry) waitDisk(t *testing.T, id cairn.DiskID, ok func(cairn.Disk) bool) cairn.Disk {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if d := f.disk(id); ok(d) {
			return d
		}
		select {
		case <-f.putc:
		case <-deadline:
			t.Fatalf("disk %s registered as %+v", id, f.disk(id))
		}
	}
}

// A node registers each disk's volume ID and, once it passed, its check.
// A disk whose directory vanishes (rm -rf) is formatted again at the next
// refresh: a new, empty volume with a new volume ID, served in place of
// the old one and checked again. A directory that only lost its identity
// is left alone (reported as a fault).
func TestServerReformatsVanishedDisk(t *testing.T) {
	reg := newFakeRegistry()
	mem := vfs.NewMem()
	ticks := make(chan time.Time)
	const id cairn.DiskID = "node1/disk1"
	s, err := NewServer(Config{Node: "node1", Secret: testSecret, Registry: reg, RefreshTicks: ticks,
		Disks: []DiskConfig{{ID: id, Path: "/data/d1", FS: mem}, {ID: "node1/disk2", Path: "/data/d2", FS: mem, NoFormat: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := volumeAt(mem, "/data/d2", "node1/disk2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fsckCleanup(t, mem, "/data/d1", id)
	first := reg.waitDisk(t, id, func(d cairn.Disk) bool { return d.Check == cairn.CheckOK })
	if first.Volume == "" || first.Volume != s.Volumes()[0].VolumeID() || first.Trusted != "" {
		t.Fatalf("first registration %+v", first) // the fake keeps what it is given: the store sets Trusted
	}
	c := NewClient(testSecret, func(context.Context, cairn.DiskID) (string, error) { return s.Addr(), nil }, nil)
	mustPutShard(t, c, id, shardName(1, 0), []byte("old"))

	mustRemoveAll(t, mem, "/data/d1")
	mustRemoveAll(t, mem, "/data/d2")
	// A write into the vanished directory (the README tour puts right
	// after its rm -rf) fails and does not make the directory again,
	// which would keep it from being formatted.
	// (A fan-out directory the old volume never made: shards/ff.)
	lost := cairn.ShardName(strings.Repeat("f", 32), 0)
	if _, err := c.PutShard(context.Background(), id, lost, bytes.NewReader([]byte("lost"))); err == nil {
		t.Fatal("a put into a vanished directory succeeded")
	}
	if _, err := mem.Stat("/data/d1"); err == nil {
		t.Fatal("a put into a vanished directory made it again")
	}
	ticks <- time.Now()
	again := reg.waitDisk(t, id, func(d cairn.Disk) bool { return d.Volume != first.Volume && d.Check == cairn.CheckOK })
	if again.Fault != "" {
		t.Fatalf("re-formatted disk reports a fault: %+v", again)
	}
	if _, err := readAll(t, c, id, shardName(1, 0), 0, -1); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("a shard of the old volume on the new one: %v", err)
	}
	mustPutShard(t, c, id, shardName(2, 0), []byte("new"))
	if got, err := readAll(t, c, id, shardName(2, 0), 0, -1); err != nil || string(got) != "new" {
		t.Fatalf("read from the new volume: %q %v", got, err)
	}
	// NoFormat: the vanished disk stays a fault, never formatted. (The
	// refresh may still be on its way to disk2 when disk1's new volume
	// has registered its check: wait for disk2's registration.)
	if d := reg.waitDisk(t, "node1/disk2", func(d cairn.Disk) bool { return d.Fault != "" }); d.Check != "" {
		t.Fatalf("vanished NoFormat disk registered as %+v", d)
	}
	if _, err := mem.Stat("/data/d2"); err == nil {
		t.Fatal("a NoFormat disk's directory was made again")
	}
}

// volumeAt formats a volume for disk id in dir.
func volumeAt(fsys vfs.FS, dir string, id cairn.DiskID) error {
	v, err := volume.Open(dir, volume.Options{FS: fsys, DiskID: id, Create: true})
	if err != nil {
		return err
	}
	return v.Close()
}

func mustRemoveAll(t *testing.T, fsys vfs.FS, dir string) {
	t.Helper()
	if err := vfs.RemoveAll(fsys, dir); err != nil {
		t.Fatal(err)
	}
}
