package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/client/clienttest"
	"cairn/director"
	"cairn/meta/mem"
)

// diskCluster is 4 live nodes of 2 disks each (volume and check
// registered) and rs-2-2 objects on them, in memory.
func diskCluster(t *testing.T) (*mem.Store, []*cairn.Manifest) {
	t.Helper()
	ctx := t.Context()
	st := mem.New()
	t.Cleanup(func() { st.Close() })
	for n := 1; n <= 4; n++ {
		id := cairn.NodeID(fmt.Sprintf("n%d", n))
		if err := st.PutNode(ctx, cairn.Node{ID: id, Addr: "addr-" + string(id)}); err != nil {
			t.Fatal(err)
		}
		for d := 1; d <= 2; d++ {
			disk := cairn.Disk{ID: cairn.DiskID(fmt.Sprintf("%s/d%d", id, d)), Node: id, Capacity: 1 << 30, State: cairn.DiskUp,
				Volume: fmt.Sprintf("vol-%d-%d", n, d), Check: cairn.CheckOK}
			if err := st.PutDisk(ctx, disk); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.KeepAlive(ctx, string(id), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CreateBucket(ctx, cairn.Bucket{Name: "bkt", Policy: "rs-2-2"}); err != nil {
		t.Fatal(err)
	}
	c := client.New(st, clienttest.NewMemShards(), client.Config{BlockSize: 4096})
	var ms []*cairn.Manifest
	for i := range 10 {
		key := fmt.Sprintf("obj-%d", i)
		if _, err := c.Put(ctx, "bkt", key, bytes.NewReader(make([]byte, 1000+i)), client.PutOptions{Size: int64(1000 + i)}); err != nil {
			t.Fatal(err)
		}
		m, err := st.Manifest(ctx, "bkt", key)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	return st, ms
}

func diskState(t *testing.T, st *mem.Store, id cairn.DiskID) cairn.Disk {
	t.Helper()
	ds, err := st.Disks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.ID == id {
			return d
		}
	}
	t.Fatalf("no disk %s", id)
	return cairn.Disk{}
}

func TestDiskCommands(t *testing.T) {
	ctx := context.Background()
	st, ms := diskCluster(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	do := func(op director.Op, id string) (string, error) {
		var out bytes.Buffer
		err := diskCommand(ctx, st, op, id, now, &out)
		return out.String(), err
	}
	// An unknown disk is a usage error that lists the disks.
	if _, err := do(director.OpOut, "n9/d1"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "n1/d1, n1/d2") {
		t.Fatalf("out of an unknown disk: %v", err)
	}
	// Drain an up disk: draining, with what it holds.
	victim := ms[0].Shards[0].Disk
	out, err := do(director.OpDrain, string(victim))
	if err != nil || !strings.Contains(out, "→ draining") || !strings.Contains(out, "shards on it are moved off") {
		t.Fatalf("drain: %v\n%s", err, out)
	}
	if d := diskState(t, st, victim); d.State != cairn.DiskDraining || !d.Since.Equal(now) || d.Reason == "" {
		t.Fatalf("drained disk %+v", d)
	}
	if _, err := do(director.OpDrain, string(victim)); !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), "already draining") {
		t.Fatalf("second drain: %v", err)
	}
	// In ends the drain.
	if out, err := do(director.OpIn, string(victim)); err != nil || !strings.Contains(out, "draining → up") {
		t.Fatalf("in: %v\n%s", err, out)
	}
	// With two of ms[0]'s other shards' disks down, rs-2-2 has exactly 2
	// left; taking a third out would lose data, and the command says which
	// object.
	for _, s := range ms[0].Shards[1:3] {
		if err := st.SetDiskState(ctx, s.Disk, cairn.DiskDown, now); err != nil {
			t.Fatal(err)
		}
	}
	_, err = do(director.OpOut, string(victim))
	if !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), "would lose data") || !strings.Contains(err.Error(), "bkt/") {
		t.Fatalf("out that loses data: %v", err)
	}
	if d := diskState(t, st, victim); d.State != cairn.DiskUp {
		t.Fatalf("a refused out changed the disk: %+v", d)
	}
	for _, s := range ms[0].Shards[1:3] {
		if err := st.SetDiskState(ctx, s.Disk, cairn.DiskUp, now); err != nil {
			t.Fatal(err)
		}
	}
	out, err = do(director.OpOut, string(victim))
	if err != nil || !strings.Contains(out, "up → out") || !strings.Contains(out, "rebuilt elsewhere") {
		t.Fatalf("out: %v\n%s", err, out)
	}
	// Back in: the same volume, checked.
	if out, err := do(director.OpIn, string(victim)); err != nil || !strings.Contains(out, "out → up") {
		t.Fatalf("in after out: %v\n%s", err, out)
	}
	// A down disk returns by itself; in says what it waits for.
	if err := st.SetDiskState(ctx, victim, cairn.DiskDown, now); err != nil {
		t.Fatal(err)
	}
	reg := diskState(t, st, victim)
	reg.Check = ""
	if err := st.PutDisk(ctx, reg); err != nil {
		t.Fatal(err)
	}
	if _, err := do(director.OpIn, string(victim)); !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), "check") {
		t.Fatalf("in of a down disk: %v", err)
	}
}

// TestDiskOutCountsOpenUploads: the parts of an upload in progress are
// stripes repair rebuilds too, so taking a disk out that one of them
// cannot lose is refused, naming the upload, and a drain counts their
// shards.
func TestDiskOutCountsOpenUploads(t *testing.T) {
	ctx := context.Background()
	st, _ := diskCluster(t)
	c := client.New(st, clienttest.NewMemShards(), client.Config{BlockSize: 4096, MinPartSize: 1})
	u, err := c.CreateUpload(ctx, "bkt", "open", client.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.UploadPart(ctx, "bkt", "open", u.ID, 1, bytes.NewReader(make([]byte, 3000)), client.PutOptions{Size: 3000})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	victim := p.Shards[0].Disk
	drained := func() int {
		t.Helper()
		var out bytes.Buffer
		if err := diskCommand(ctx, st, director.OpDrain, string(victim), now, &out); err != nil {
			t.Fatal(err)
		}
		if err := diskCommand(ctx, st, director.OpIn, string(victim), now, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		n := 0
		fmt.Sscanf(out.String()[strings.Index(out.String(), "\n")+1:], "%d shards", &n)
		return n
	}
	// With two of the part's other disks down, taking the victim out
	// loses the part's stripe (and perhaps objects').
	lost := func() int {
		t.Helper()
		for _, s := range p.Shards[1:3] {
			if err := st.SetDiskState(ctx, s.Disk, cairn.DiskDown, now); err != nil {
				t.Fatal(err)
			}
		}
		err := diskCommand(ctx, st, director.OpOut, string(victim), now, &bytes.Buffer{})
		for _, s := range p.Shards[1:3] {
			if err := st.SetDiskState(ctx, s.Disk, cairn.DiskUp, now); err != nil {
				t.Fatal(err)
			}
		}
		if err == nil {
			if err := diskCommand(ctx, st, director.OpIn, string(victim), now, &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			return 0
		}
		n := 0
		if i := strings.Index(err.Error(), "would lose data: "); i < 0 || !errors.Is(err, cairn.ErrInvalid) {
			t.Fatalf("out: %v", err)
		} else {
			fmt.Sscanf(err.Error()[i+len("would lose data: "):], "%d stripe", &n)
		}
		return n
	}
	withShards, withLost := drained(), lost()
	if _, err := st.DeleteUpload(ctx, "bkt", u.ID); err != nil {
		t.Fatal(err)
	}
	withoutShards, withoutLost := drained(), lost()
	if withShards != withoutShards+1 || withLost != withoutLost+1 {
		t.Fatalf("with the open part: a drain moves %d shards and out loses %d stripes; without: %d and %d",
			withShards, withLost, withoutShards, withoutLost)
	}
}

// The disk table shows each disk's state, since when and why; the
// warnings too.
func TestStatusShowsStateReasonSince(t *testing.T) {
	since := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	st := &Status{Disks: []cairn.Disk{
		{ID: "n1/d1", Node: "n1", State: cairn.DiskUp, Since: since},
		{ID: "n1/d2", Node: "n1", State: cairn.DiskDown, Since: since, Reason: "suspect for longer than 30s (node n1 reports: gone)"},
	}}
	var b bytes.Buffer
	printStatus(&b, st)
	for _, want := range []string{"STATE", "SINCE", "REASON", "2026-03-04 05:06:07Z", "suspect for longer than 30s (node n1 reports: gone)"} {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("status does not show %q:\n%s", want, b.String())
		}
	}
}

func TestDiskUsage(t *testing.T) {
	for _, args := range [][]string{{"admin", "disk"}, {"admin", "disk", "out"}, {"admin", "disk", "in", "a/1", "b/1"}, {"admin", "disk", "melt", "a/1"}} {
		if _, _, err := run(t, args...); !errors.Is(err, ErrUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	for _, cmd := range []string{"out", "drain", "in"} {
		out, _, err := run(t, "admin", "disk", cmd, "--help")
		if err != nil || !strings.Contains(out, "Usage: cairn admin disk "+cmd+" DISK") {
			t.Errorf("admin disk %s --help: %v\n%s", cmd, err, out)
		}
	}
}

// TestDiskOutSkipsColdObjects: an exported cold object keeps no shard in
// its manifest (its bytes are its cold group's slots, which the export job
// rebuilds when a group disk is lost), so taking a disk out with one in
// the bucket works instead of failing on its policy as a warm code.
func TestDiskOutSkipsColdObjects(t *testing.T) {
	ctx := t.Context()
	st, ms := diskCluster(t)
	m := &cairn.Manifest{Bucket: "bkt", Key: "frozen", Version: "v-cold", Policy: "clay-2-2-3/gp=16KiB:2", Size: 5,
		Created: time.Now(), Cold: &cairn.ColdRef{Group: "g-0", Record: []byte{1, 0, 5}}}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := st.CommitManifest(ctx, m, ""); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	victim := ms[0].Shards[0].Disk
	if err := diskCommand(ctx, st, director.OpOut, string(victim), time.Now(), &out); err != nil || !strings.Contains(out.String(), "up → out") {
		t.Fatalf("out with a cold object in the bucket: %v\n%s", err, out.String())
	}
}
