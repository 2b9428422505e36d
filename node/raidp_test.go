package node

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"cairn"
	"cairn/internal/vfs"
	"cairn/node/lstor"
)

// startRAIDPServer starts a node on a real socket with two disks: disk1
// with an Lstor, disk2 without. It returns the server and the disk paths.
func startRAIDPServer(t *testing.T, dir string) (*Server, [2]DiskConfig) {
	t.Helper()
	disks := [2]DiskConfig{
		{ID: "n1/disk1", Path: filepath.Join(dir, "disk1"), Lstor: filepath.Join(dir, "lstor", "disk1")},
		{ID: "n1/disk2", Path: filepath.Join(dir, "disk2")},
	}
	s, err := NewServer(Config{Node: "n1", Secret: testSecret, Disks: disks[:], RAIDPSize: 4 * lstor.BlockSize, RAIDPSlots: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, disks
}

// TestRAIDPCalls writes, reads, zeroes and reads the parity of a disk's
// RAIDP space through a node on a real socket, then restarts the node and
// checks the Lstor on disk: the XOR of the slots, verified clean.
func TestRAIDPCalls(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, disks := startRAIDPServer(t, dir)
	fsckCleanup(t, vfs.Default, disks[0].Path, disks[0].ID) // raidp.data beside the volume is no stray
	defer func() { s.Close() }()
	addr := s.Addr()
	c := NewClient(testSecret, func(context.Context, cairn.DiskID) (string, error) { return addr, nil }, nil)
	d := disks[0].ID
	size := int64(4 * lstor.BlockSize)

	rng := rand.New(rand.NewPCG(1, 2))
	want := make([][]byte, 3) // the slots' expected contents
	for i := range want {
		want[i] = make([]byte, size)
	}
	write := func(slot int, off int64, n int) {
		t.Helper()
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		if err := c.WriteRAIDP(ctx, d, slot, off, p); err != nil {
			t.Fatalf("write slot %d at %d: %v", slot, off, err)
		}
		copy(want[slot][off:], p)
	}
	write(0, 0, 100_000)
	write(1, 5, 70_000)
	write(2, 65_000, 150_000)
	write(0, 50_000, 10) // an overwrite: read-modify-write on the node
	if err := c.ZeroRAIDP(ctx, d, 1, 1000, 2000); err != nil {
		t.Fatal(err)
	}
	clear(want[1][1000:3000])

	for slot := range want {
		got := make([]byte, size)
		if err := c.ReadRAIDP(ctx, d, slot, got, 0); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[slot]) {
			t.Errorf("slot %d reads back different bytes", slot)
		}
	}
	par := make([]byte, size)
	if err := c.ReadLstor(ctx, d, par, 0); err != nil {
		t.Fatal(err)
	}
	for o := range par {
		if par[o] != want[0][o]^want[1][o]^want[2][o] {
			t.Fatalf("parity byte %d is %#x, want the XOR of the slots %#x", o, par[o], want[0][o]^want[1][o]^want[2][o])
		}
	}
	part := make([]byte, 10)
	if err := c.ReadRAIDP(ctx, d, 0, part, 49_995); err != nil || !bytes.Equal(part, want[0][49_995:50_005]) {
		t.Errorf("a part of slot 0: %v", err)
	}

	// Bad requests get precise errors.
	for name, err := range map[string]error{
		"slot out of range":   c.WriteRAIDP(ctx, d, 3, 0, []byte{1}),
		"past the superchunk": c.ReadRAIDP(ctx, d, 0, make([]byte, 2), size-1),
		"negative offset":     c.ZeroRAIDP(ctx, d, 0, -1, 1),
	} {
		if !errors.Is(err, cairn.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if err := c.WriteRAIDP(ctx, disks[1].ID, 0, 0, []byte{1}); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("a disk without an Lstor: %v, want ErrNotFound", err)
	}
	if err := c.ReadLstor(ctx, "n1/disk9", par, 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("a disk not served: %v, want ErrNotFound", err)
	}
	reader, err := DeriveKey(testSecret, KeyID{Role: RoleReader, Name: "r"})
	if err != nil {
		t.Fatal(err)
	}
	rc := NewKeyClient(reader, func(context.Context, cairn.DiskID) (string, error) { return addr, nil }, nil)
	if err := rc.WriteRAIDP(ctx, d, 0, 0, []byte{1}); !errors.Is(err, cairn.ErrAuth) {
		t.Errorf("a reader's write: %v, want ErrAuth", err)
	}
	if err := rc.ReadRAIDP(ctx, d, 0, part, 0); err != nil {
		t.Errorf("a reader's read: %v", err)
	}

	// The Lstor on disk is consistent after the node stops.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := lstor.Open(ctx, lstor.Config{Disk: disks[0].Path, Lstor: disks[0].Lstor, Size: size, Slots: 3, MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rep, err := st.Verify(ctx)
	if err != nil || !rep.OK() {
		t.Errorf("verify after the node stopped: %v %v", rep, err)
	}

	// A node started with another geometry refuses the Lstor.
	s2, err := NewServer(Config{Node: "n1", Secret: testSecret, Disks: []DiskConfig{disks[0]}, RAIDPSize: size, RAIDPSlots: 4})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if err := s2.Start(ctx); !errors.Is(err, lstor.ErrMismatch) {
		t.Errorf("start with another geometry: %v, want lstor.ErrMismatch", err)
	}
	s2.Close()
}
