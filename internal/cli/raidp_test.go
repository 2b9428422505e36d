package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cairn/internal/vfs"
	"cairn/node/lstor"
	"cairn/raidp"
	"cairn/repair/plan"
	"cairn/repair/raidprun"
)

// TestRaidpVerify builds a small group on real files, verifies it, damages
// one parity byte and one replica, and checks the command finds both and
// that --resync repairs the parity.
func TestRaidpVerify(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const n, slots, rows, size = 5, 4, 2, lstor.BlockSize
	l, err := raidp.New(n, slots, rows)
	if err != nil {
		t.Fatal(err)
	}
	specs, stores := openStores(t, dir, n, slots, size)
	for _, sc := range l.Superchunks {
		b := bytes.Repeat([]byte{byte(sc.ID + 1)}, 1000+sc.ID)
		for _, p := range sc.Replicas {
			if err := stores[p.Disk].Write(ctx, p.Slot, int64(sc.ID), b); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range stores {
		s.Close()
	}
	run := func(extra ...string) (string, error) {
		var out, errb bytes.Buffer
		args := append([]string{"verify", "--size", "64KiB", "--slots", fmt.Sprint(slots), "--rows", fmt.Sprint(rows)}, extra...)
		err := runAdminRaidp(ctx, append(args, specs...), &out, &errb)
		return out.String() + errb.String(), err
	}
	out, err := run()
	if err != nil || strings.Count(out, ": ok") != n || !strings.Contains(out, "both replicas agree") {
		t.Fatalf("healthy group: %v\n%s", err, out)
	}
	// One parity byte of disk 2, and one byte of a replica on disk 3.
	poke(t, filepath.Join(dir, "lstor", "disk2", "LSTOR"), lstor.HeaderSize+7)
	sc := l.OnDisk(3)[0]
	p, _ := sc.On(3)
	poke(t, filepath.Join(dir, "disk3", "raidp.data"), int64(p.Slot)*size+int64(sc.ID)+5)
	out, err = run()
	if err == nil || !strings.Contains(out, "disk2,lstor") || !strings.Contains(out, "1 corrupt") ||
		!strings.Contains(out, fmt.Sprintf("superchunk %d: replicas", sc.ID)) || !strings.Contains(out, "disk3,lstor") {
		t.Fatalf("damaged group: %v\n%s", err, out)
	}
	// --resync repairs the parity of disk 2 and disk 3 (now the XOR of its
	// damaged data); the replicas still differ.
	out, err = run("--resync")
	if err == nil || strings.Count(out, ": ok") != n || !strings.Contains(out, "resyncing") {
		t.Fatalf("resync: %v\n%s", err, out)
	}
	// Bad input: an Lstor on the disk's own path, and a missing Lstor.
	var o bytes.Buffer
	err = runAdminRaidp(ctx, []string{"verify", "--size", "64KiB", "--slots", "4", dir + "/disk0,lstor=" + dir + "/disk0"}, &o, &o)
	if !errors.Is(err, ErrUsage) || !errors.Is(err, lstor.ErrSamePath) {
		t.Fatalf("same path: %v", err)
	}
	err = runAdminRaidp(ctx, []string{"verify", "--size", "64KiB", "--slots", "4", dir + "/new,lstor=" + dir + "/newlstor"}, &o, &o)
	if !errors.Is(err, lstor.ErrNotFormatted) {
		t.Fatalf("missing Lstor: %v", err)
	}
}

// TestRaidpVerifyGroup: with --group the stored layout is checked, and a
// free slot holding bytes (a stray copy: consistent with its disk's
// Lstor, yet counted there by no superchunk) is a problem until zeroed;
// "-" stands only for a disk holding no superchunk.
func TestRaidpVerifyGroup(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const n, slots, rows, size = 6, 4, 2, lstor.BlockSize
	var gd []raidp.GroupDisk
	for d := range n {
		gd = append(gd, raidp.GroupDisk{ID: fmt.Sprint("disk", d), Domain: fmt.Sprint("node", d)})
	}
	g, err := raidp.NewGroup("warm", gd, size, slots, rows)
	if err != nil {
		t.Fatal(err)
	}
	specs, stores := openStores(t, dir, n, slots, size)
	for _, sc := range g.Layout.Superchunks {
		for _, p := range sc.Replicas {
			if err := stores[p.Disk].Write(ctx, p.Slot, 10, bytes.Repeat([]byte{byte(sc.ID + 1)}, 500)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A stray copy in the last slot of disk 1 (free: rows < slots).
	if err := stores[1].Write(ctx, slots-1, 0, []byte("stray")); err != nil {
		t.Fatal(err)
	}
	for _, s := range stores {
		s.Close()
	}
	gf := filepath.Join(dir, "group.json")
	b, _ := json.Marshal(g)
	if err := os.WriteFile(gf, b, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(specs []string) (string, error) {
		var out bytes.Buffer
		args := append([]string{"verify", "--size", "64KiB", "--slots", fmt.Sprint(slots), "--group", gf}, specs...)
		err := runAdminRaidp(ctx, args, &out, &out)
		return out.String(), err
	}
	out, err := run(specs)
	if err == nil || !strings.Contains(out, fmt.Sprintf("%s: free slot %d holds bytes", specs[1], slots-1)) || strings.Count(out, ": ok") != n ||
		!strings.Contains(out, "both replicas agree") {
		t.Fatalf("a stray slot: %v\n%s", err, out)
	}
	s, err := lstor.Open(ctx, lstor.Config{FS: vfs.Default, Disk: filepath.Join(dir, "disk1"), Lstor: filepath.Join(dir, "lstor", "disk1"), Size: size, Slots: slots})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Zero(ctx, slots-1, 0, size); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if out, err := run(specs); err != nil || !strings.Contains(out, "free slots: all zero") {
		t.Fatalf("the stray slot zeroed: %v\n%s", err, out)
	}
	// "-" for a disk of the layout, and a group of other disks.
	dash := append([]string{"-"}, specs[1:]...)
	if _, err := run(dash); !errors.Is(err, ErrUsage) {
		t.Fatalf("a disk holding superchunks given as -: %v", err)
	}
	if _, err := run(specs[1:]); !errors.Is(err, ErrUsage) {
		t.Fatalf("one disk fewer than the group: %v", err)
	}
}

// openStores opens n new RAIDP stores under dir (dir/diskD with its
// Lstor in dir/lstor/diskD) and returns their specs for the verify
// command, and the stores (closed when the test ends; Close twice is
// harmless).
func openStores(t *testing.T, dir string, n, slots int, size int64) ([]string, []*lstor.Store) {
	t.Helper()
	var specs []string
	var stores []*lstor.Store
	for d := range n {
		disk, lst := filepath.Join(dir, fmt.Sprint("disk", d)), filepath.Join(dir, "lstor", fmt.Sprint("disk", d))
		specs = append(specs, disk+",lstor="+lst)
		s, err := lstor.Open(context.Background(), lstor.Config{FS: vfs.Default, Disk: disk, Lstor: lst, Size: size, Slots: slots})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	return specs, stores
}

func poke(t *testing.T, name string, off int64) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestRaidpPlan: the plan command's numbers keep their order (the
// matching no slower than naive, the critical state ending before the
// whole recovery) and bad input is a usage error.
func TestRaidpPlan(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	if err := runAdminRaidp(ctx, []string{"plan", "--disks", "8", "--rows", "3", "--size", "1GiB"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"8 disks, 7 slots, 3 rows, 12 superchunks", "one disk lost, matching", "critical state ends", "rs-6-2"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	l, err := raidp.New(10, 9, 4)
	if err != nil {
		t.Fatal(err)
	}
	r := plan.Rates{Read: 150e6, Write: 150e6, Send: 117e6, Recv: 117e6}
	p, err := raidpPlan(l, 1<<30, plan.RAIDPModel{Size: 1 << 30, Disks: []plan.Rates{r}})
	if err != nil {
		t.Fatal(err)
	}
	if !(p.Single > 0 && p.Single <= p.SingleNaive && p.DualRebuild > 0 && p.DualRebuild < p.DualTotal) {
		t.Fatalf("plan out of order: %+v", p)
	}
	for _, bad := range [][]string{{"plan", "--disks", "2"}, {"plan", "--size", "0"}, {"plan", "--rows", "99"}} {
		if err := runAdminRaidp(ctx, bad, &out, &out); !errors.Is(err, ErrUsage) {
			t.Errorf("%v: %v, want ErrUsage", bad, err)
		}
	}
}

// TestRaidpVerifyRecoveredGroup: --group compares replicas where a recovered group
// places them (raidp.New's layout no longer applies once a disk is out),
// over the group's disks in its order ("-" for one out of it); a group
// that does not fit the arguments is a usage error.
func TestRaidpVerifyRecoveredGroup(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const n, slots, rows, size = 5, 4, 2, lstor.BlockSize
	var gd []raidp.GroupDisk
	var specs []string
	stores := map[int]raidprun.Disk{}
	for d := range n {
		gd = append(gd, raidp.GroupDisk{ID: fmt.Sprint("n", d, "/disk1"), Domain: fmt.Sprint("n", d)})
		disk, lst := filepath.Join(dir, fmt.Sprint("disk", d)), filepath.Join(dir, "lstor", fmt.Sprint("disk", d))
		specs = append(specs, disk+",lstor="+lst)
		s, err := lstor.Open(ctx, lstor.Config{FS: vfs.Default, Disk: disk, Lstor: lst, Size: size, Slots: slots})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[d] = s
	}
	g, err := raidp.NewGroup("warm", gd, size, slots, rows)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range g.Layout.Superchunks {
		b := bytes.Repeat([]byte{byte(sc.ID + 1)}, 3000+sc.ID)
		for _, p := range sc.Replicas {
			if err := stores[p.Disk].Write(ctx, p.Slot, 0, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Disk 0 is lost and its superchunks re-mirrored.
	plan, err := raidp.Remirror(g.Layout, []int{0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := raidprun.Remirror(ctx, plan, stores, raidprun.Config{Size: size}); err != nil {
		t.Fatal(err)
	}
	after, err := g.Recovered(plan.After, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stores {
		s.(*lstor.Store).Close()
	}
	file := filepath.Join(dir, "group.json")
	b, _ := json.Marshal(after)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(extra ...string) (string, error) {
		var out bytes.Buffer
		args := append([]string{"verify", "--size", "64KiB", "--slots", fmt.Sprint(slots)}, extra...)
		err := runAdminRaidp(ctx, args, &out, &out)
		return out.String(), err
	}
	out, err := run(append([]string{"--group", file, "-"}, specs[1:]...)...)
	if err != nil || strings.Count(out, ": ok") != n-1 || !strings.Contains(out, fmt.Sprintf("%d superchunks: both replicas agree", len(after.Layout.Superchunks))) {
		t.Fatalf("verify --group of the recovered group: %v\n%s", err, out)
	}
	// A replica the recovery wrote, damaged, is found on its disk.
	tr := plan.Transfers[0]
	poke(t, filepath.Join(dir, fmt.Sprint("disk", tr.To.Disk), "raidp.data"), int64(tr.To.Slot)*size+10)
	out, err = run(append([]string{"--group", file, "--resync", "-"}, specs[1:]...)...)
	if err == nil || !strings.Contains(out, fmt.Sprintf("superchunk %d: replicas", tr.Superchunk)) || !strings.Contains(out, fmt.Sprint("disk", tr.To.Disk, ",lstor")) {
		t.Fatalf("verify --group with a damaged replica: %v\n%s", err, out)
	}
	for name, args := range map[string][]string{
		"a disk too few":     append([]string{"--group", file}, specs[1:]...),
		"--rows and --group": append([]string{"--group", file, "--rows", "2", "-"}, specs[1:]...),
		"no such file":       append([]string{"--group", file + ".none", "-"}, specs[1:]...),
	} {
		if _, err := run(args...); !errors.Is(err, ErrUsage) {
			t.Errorf("%s: %v, want a usage error", name, err)
		}
	}
}
