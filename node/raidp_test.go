package node

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"cairn"
	"cairn/internal/vfs"
	"cairn/node/lstor"
	"cairn/node/wire"
)

// startRAIDPServer starts a node on a real socket with two disks: disk1
// with an Lstor, disk2 without. It returns the server and the disk paths.
func startRAIDPServer(t *testing.T, dir string, size int64, slots int) (*Server, [2]DiskConfig) {
	t.Helper()
	disks := [2]DiskConfig{
		{ID: "n1/disk1", Path: filepath.Join(dir, "disk1"), Lstor: filepath.Join(dir, "lstor", "disk1")},
		{ID: "n1/disk2", Path: filepath.Join(dir, "disk2")},
	}
	s, err := NewServer(Config{Node: "n1", Secret: testSecret, Disks: disks[:], RAIDPSize: size, RAIDPSlots: slots})
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
	s, disks := startRAIDPServer(t, dir, 4*lstor.BlockSize, 3)
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

// TestRAIDPWriteBlocks writes bodies of several blocks (wire.HeaderBlockCRCs)
// through a node on a real socket: every byte and the parity land. Then,
// below the wire, writeBlocks with a block that fails its CRC and with a
// body cut short: the blocks before are written, none after, and the call
// fails with ErrCorrupt and ErrUnavailable.
func TestRAIDPWriteBlocks(t *testing.T) {
	ctx := context.Background()
	const size = 4 << 20
	s, disks := startRAIDPServer(t, t.TempDir(), size, 2)
	disk := disks[0]
	fsckCleanup(t, vfs.Default, disk.Path, disk.ID)
	defer s.Close()
	addr := s.Addr()
	c := NewClient(testSecret, func(context.Context, cairn.DiskID) (string, error) { return addr, nil }, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	random := func(n int) []byte {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		return p
	}
	want := [2][]byte{make([]byte, size), make([]byte, size)}
	for _, w := range []struct {
		slot int
		off  int64
		n    int
	}{{0, 0, 3<<20 + 12345}, {1, 1000, 2 << 20}, {0, 2 << 20, 2 << 20}} {
		p := random(w.n)
		if err := c.WriteRAIDP(ctx, disk.ID, w.slot, w.off, p); err != nil {
			t.Fatalf("write %d bytes at %d of slot %d: %v", w.n, w.off, w.slot, err)
		}
		copy(want[w.slot][w.off:], p)
	}
	par := make([]byte, size)
	if err := c.ReadLstor(ctx, disk.ID, par, 0); err != nil {
		t.Fatal(err)
	}
	for slot := range want {
		got := make([]byte, size)
		if err := c.ReadRAIDP(ctx, disk.ID, slot, got, 0); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[slot]) {
			t.Fatalf("slot %d reads back different bytes", slot)
		}
	}
	for o := range par {
		if par[o] != want[0][o]^want[1][o] {
			t.Fatalf("parity byte %d is not the XOR of the slots", o)
		}
	}

	st, err := lstor.Open(ctx, lstor.Config{FS: vfs.NewMem(), Disk: "/d", Lstor: "/l", Size: size, Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 3 << 20
	body := random(n)
	crcs, err := wire.ParseBlockCRCs(wire.FormatBlockCRCs(body), n)
	if err != nil {
		t.Fatal(err)
	}
	whole := crc32.Checksum(body, castagnoli)
	check := func(name string, written int) {
		t.Helper()
		got := make([]byte, n)
		if err := st.ReadAt(0, got, 0); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[:written], body[:written]) || !bytes.Equal(got[written:], make([]byte, n-written)) {
			t.Errorf("%s: want the first %d bytes written and none after", name, written)
		}
		if rep, err := st.Verify(ctx); err != nil || !rep.OK() {
			t.Errorf("%s: verify %v %v", name, rep, err)
		}
	}
	bad := slices.Clone(crcs)
	bad[1] ^= 1
	err = writeBlocks(ctx, st, 0, 0, bytes.NewReader(body), n, whole, bad)
	if !errors.Is(err, cairn.ErrCorrupt) {
		t.Errorf("a block with a wrong CRC: %v, want ErrCorrupt", err)
	}
	check("a block with a wrong CRC", wire.RAIDPWriteBlock)
	if err := st.Zero(ctx, 0, 0, size); err != nil {
		t.Fatal(err)
	}
	err = writeBlocks(ctx, st, 0, 0, bytes.NewReader(body[:2<<20+7]), n, whole, crcs)
	if !errors.Is(err, cairn.ErrUnavailable) {
		t.Errorf("a body cut short: %v, want ErrUnavailable", err)
	}
	check("a body cut short", 2<<20)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := writeBlocks(cancelled, st, 0, 0, bytes.NewReader(body), n, whole, crcs); err == nil {
		t.Error("a write whose request was cancelled reported success")
	}
	if err := writeBlocks(ctx, st, 0, 0, bytes.NewReader(body), n, whole^1, crcs); !errors.Is(err, cairn.ErrCorrupt) {
		t.Errorf("blocks that match a whole CRC that does not: %v, want ErrCorrupt", err)
	}
	if err := writeBlocks(ctx, st, 0, 0, bytes.NewReader(body), n, whole, crcs); err != nil {
		t.Fatal(err)
	}
	check("a whole body", n)
}

func TestParseBlockCRCs(t *testing.T) {
	p := make([]byte, 2<<20+1)
	v := wire.FormatBlockCRCs(p)
	if crcs, err := wire.ParseBlockCRCs(v, int64(len(p))); err != nil || len(crcs) != 3 {
		t.Fatalf("%q: %v %v", v, crcs, err)
	}
	for _, bad := range []struct {
		v string
		n int64
	}{{v, 2 << 20}, {v, 3<<20 + 1}, {"", 1}, {"0000000g", 1}, {"00000000,", 1}, {"00000000", 0}, {"000000000", 1}} {
		if _, err := wire.ParseBlockCRCs(bad.v, bad.n); err == nil {
			t.Errorf("%q for %d bytes parsed", bad.v, bad.n)
		}
	}
}
