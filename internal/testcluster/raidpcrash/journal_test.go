package raidpcrash_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cairn"
	"cairn/internal/proc"
	"cairn/internal/testcluster"
	etcdmeta "cairn/meta/etcd"
	"cairn/node"
	"cairn/node/lstor"
)

// TestRAIDPCorruptJournal is issue 17's bad input on a real node: a
// journal record that fails its CRC (here a durable-looking header whose
// CRC does not match, written while the node was down) is never replayed.
// The restarted node marks the disk for verification: it reports it in
// the cluster map (cairn admin raidp group shows it), refuses RAIDP
// writes and zeroes to it with a precise, permanent error, and still
// serves reads; `cairn admin raidp verify` fails on it until --resync
// recomputes the parity, after which the node takes writes again.
func TestRAIDPCorruptJournal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of processes")
	}
	ctx := context.Background()
	c := testcluster.Start(t, testcluster.Config{Nodes: 3, Lstor: true,
		NodeArgs: []string{"--raidp-size", "1MiB", "--raidp-slots", "2"}})
	c.CLI(t, "mb", "bkt")
	body := bytes.Repeat([]byte("journal "), 40_000)
	file := filepath.Join(t.TempDir(), "obj")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	c.CLI(t, "put", "--policy", cairn.RAIDPPolicy, file, "bkt/k")
	store, err := etcdmeta.Open(ctx, c.MetaEndpoints(), etcdmeta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	disk := cairn.DiskID("node1/disk1")
	fault := func() string {
		t.Helper()
		ds, err := store.Disks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.ID == disk {
				return d.RAIDPFault
			}
		}
		t.Fatalf("no disk %s in the cluster map", disk)
		return ""
	}

	// A record header with its magic and plausible fields but a CRC that
	// does not match: what a torn or bit-rotted record looks like.
	n1 := c.Nodes[0]
	n1.Kill()
	lst := filepath.Join(c.LstorDir(1, 1), "LSTOR")
	f, err := os.OpenFile(lst, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := make([]byte, lstor.RecordHeaderSize)
	le := binary.LittleEndian
	le.PutUint32(h[0:], 0x4345524a) // "JREC"
	le.PutUint32(h[4:], 0xdeadbeef) // the CRC
	le.PutUint64(h[8:], 99)         // sequence
	le.PutUint32(h[16:], 1)         // slot 1 (free: the group has one row)
	le.PutUint32(h[28:], 10)        // 10 bytes at offset 0
	le.PutUint32(h[40:], lstor.BlockSize)
	le.PutUint64(h[44:], 10) // high-water mark
	le.PutUint32(h[52:], 1)  // old data elided
	if _, err := f.WriteAt(h, lstor.JournalOffset(1<<20, 2)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := n1.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fault(); !strings.Contains(got, "marked for verification") {
		t.Fatalf("the restarted node reports %q for %s, want its Lstor marked for verification", got, disk)
	}
	if g := c.CLI(t, "admin", "raidp", "group"); !strings.Contains(g, "marked for verification") {
		t.Errorf("cairn admin raidp group does not show the mark:\n%s", g)
	}
	nc := node.NewClient(c.Secret(), func(context.Context, cairn.DiskID) (string, error) { return n1.Addr(proc.Node), nil }, nil)
	for name, err := range map[string]error{
		"write": nc.WriteRAIDP(ctx, disk, 1, 0, []byte("new data")),
		"zero":  nc.ZeroRAIDP(ctx, disk, 1, 0, 10),
	} {
		if !errors.Is(err, cairn.ErrCorrupt) || !cairn.IsPermanent(err) ||
			!strings.Contains(err.Error(), "marked for verification") || !strings.Contains(err.Error(), "verify --resync") {
			t.Errorf("a RAIDP %s to the marked disk: %v, want a permanent ErrCorrupt naming the mark and the resync", name, err)
		}
	}
	got := make([]byte, 10)
	if err := nc.ReadRAIDP(ctx, disk, 1, got, 0); err != nil || !bytes.Equal(got, make([]byte, 10)) {
		t.Errorf("read of the slot the corrupt record named: %q, %v; want zeros (never replayed)", got, err)
	}
	gotFile := filepath.Join(t.TempDir(), "got")
	c.CLI(t, "get", "bkt/k", gotFile)
	if b, err := os.ReadFile(gotFile); err != nil || !bytes.Equal(b, body) {
		t.Errorf("cairn get of the object with a marked disk: %d bytes, %v", len(b), err)
	}

	// The checker fails on the disk until --resync.
	n1.Kill()
	verify := func(extra ...string) (string, error) {
		args := append([]string{"admin", "raidp", "verify", "--size", "1MiB", "--slots", "2"}, extra...)
		out, err := exec.CommandContext(ctx, testcluster.Binary(t), append(args, c.NodeDir(1, 1)+",lstor="+c.LstorDir(1, 1))...).CombinedOutput()
		return string(out), err
	}
	if out, err := verify(); err == nil || !strings.Contains(out, "marked for verification true") {
		t.Fatalf("verify of the marked disk: %v\n%s", err, out)
	}
	if out, err := verify("--resync"); err != nil || !strings.Contains(out, "resyncing") || !strings.Contains(out, ": ok (") {
		t.Fatalf("verify --resync: %v\n%s", err, out)
	}
	if err := n1.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fault(); got != "" {
		t.Fatalf("after the resync the node reports %q", got)
	}
	if err := nc.ZeroRAIDP(ctx, disk, 1, 0, 10); err != nil {
		t.Fatalf("a RAIDP zero after the resync: %v", err)
	}
}
