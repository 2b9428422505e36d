package node

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cairn"
	"cairn/internal/vfs"
	"cairn/internal/vfs/errorfs"
	"cairn/node/volume"
)

// TestLocalReads: a client WithLocal reads the handler's disks in process
// — the same bytes and footer as over the node protocol, no request on the
// wire, the handler busy while a read is open — and other disks over the
// network.
func TestLocalReads(t *testing.T) {
	mem := vfs.NewMem()
	d := openDisk(t, "node1/disk1", mem, "/d1")
	n := newTestNode(t, d)
	other := newTestNode(t, openDisk(t, "node2/disk1", mem, "/d2"))
	name := shardName(3, 2)
	data := randBytes(3, 3*volume.BlockSize+77)
	mustPutShard(t, n.client, d.id, name, data)
	mustPutShard(t, other.client, "node2/disk1", name, data)
	<-n.done // the PUT
	<-other.done

	local := n.client.WithLocal(n.h)
	for _, r := range []struct{ off, n int64 }{{0, -1}, {0, int64(len(data))}, {volume.BlockSize - 3, 10}, {2*volume.BlockSize + 5, -1}, {int64(len(data)), 0}} {
		got, err := readAll(t, local, d.id, name, r.off, r.n)
		end := int64(len(data))
		if r.n >= 0 {
			end = r.off + r.n
		}
		if err != nil || !bytes.Equal(got, data[r.off:end]) {
			t.Fatalf("local read [%d, +%d): %d bytes, %v", r.off, r.n, len(got), err)
		}
	}
	select {
	case req := <-n.done:
		t.Fatalf("a local read went over the wire: %s", req)
	default:
	}

	rc, err := local.GetShard(context.Background(), d.id, name, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := rc.(interface {
		Footer() (int64, uint32, bool)
	})
	if !ok {
		t.Fatal("a local reader has no footer")
	}
	remote, err := n.client.GetShard(context.Background(), d.id, name, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	ws, wc, _ := remote.(interface {
		Footer() (int64, uint32, bool)
	}).Footer()
	remote.Close()
	<-n.done
	if size, crc, ok := f.Footer(); !ok || size != ws || crc != wc {
		t.Fatalf("local footer %d %08x %v, the node's %d %08x", size, crc, ok, ws, wc)
	}
	if !n.h.Busy() {
		t.Fatal("the handler is not busy while a local read is open: scrub would not yield to it")
	}
	rc.Close()
	rc.Close() // idempotent: the count goes down once
	if n.h.Busy() {
		t.Fatal("the handler is still busy after the local read closed")
	}

	// A disk the handler does not serve is read over the node protocol.
	local2 := other.client.WithLocal(n.h)
	if got, err := readAll(t, local2, "node2/disk1", name, 0, -1); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read of another node's disk: %d bytes, %v", len(got), err)
	}
	if req := <-other.done; !strings.HasPrefix(req, "GET ") {
		t.Fatalf("the other node saw %q, want its GET", req)
	}

	// Missing shard and bad range: the sentinels the data path tells apart.
	if _, err := readAll(t, local, d.id, shardName(4, 2), 0, -1); !errors.Is(err, cairn.ErrNotFound) || !strings.Contains(err.Error(), string(d.id)) {
		t.Fatalf("missing shard: %v", err)
	}
	if _, err := readAll(t, local, d.id, name, int64(len(data)), 5); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("range past the end: %v", err)
	}
	if n.h.Busy() {
		t.Fatal("a failed local open left the handler busy")
	}
	if err := n.client.DeleteShard(context.Background(), d.id, name); err != nil {
		t.Fatal(err)
	}
	if err := other.client.DeleteShard(context.Background(), "node2/disk1", name); err != nil {
		t.Fatal(err)
	}
}

// TestLocalReadCorrupt: a block that fails its CRC on a local read is
// cairn.ErrCorrupt naming the disk, the shard and the block, after the
// good blocks before it, as over the node protocol.
func TestLocalReadCorrupt(t *testing.T) {
	mem := vfs.NewMem()
	d := openDisk(t, "node1/disk1", mem, "/d1")
	n := newTestNode(t, d)
	name := shardName(8, 1)
	data := randBytes(8, 4*volume.BlockSize)
	mustPutShard(t, n.client, d.id, name, data)
	flipBlockBit(t, mem, "/d1", name, 2)

	local := n.client.WithLocal(n.h)
	r, err := local.GetShard(context.Background(), d.id, name, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if !errors.Is(err, cairn.ErrCorrupt) || !contains(err.Error(), name, "block 2", string(d.id)) {
		t.Fatalf("mid-stream corruption: %v", err)
	}
	if !bytes.Equal(got, data[:2*volume.BlockSize]) {
		t.Fatalf("got %d good bytes, want %d", len(got), 2*volume.BlockSize)
	}
	if got, err := readAll(t, local, d.id, name, 3*volume.BlockSize, -1); err != nil || !bytes.Equal(got, data[3*volume.BlockSize:]) {
		t.Fatalf("good range: %v", err)
	}
	if err := n.client.DeleteShard(context.Background(), d.id, name); err != nil {
		t.Fatal(err)
	}
}

// TestLocalFill: Fill, the in-process GET's one-goroutine read of a whole
// range, returns the bytes Read would, io.ErrUnexpectedEOF for a buffer
// longer than the range, and cairn.ErrCorrupt naming the bad block.
func TestLocalFill(t *testing.T) {
	mem := vfs.NewMem()
	d := openDisk(t, "node1/disk1", mem, "/d1")
	n := newTestNode(t, d)
	local := n.client.WithLocal(n.h)
	name, bad := shardName(11, 0), shardName(11, 1)
	data := randBytes(11, 4*volume.BlockSize+123)
	mustPutShard(t, local, d.id, name, data)
	mustPutShard(t, local, d.id, bad, data)
	flipBlockBit(t, mem, "/d1", bad, 2)
	fill := func(name string, off, n int64, buf []byte) error {
		t.Helper()
		rc, err := local.GetShard(context.Background(), d.id, name, off, n)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		return rc.(interface{ Fill([]byte) error }).Fill(buf)
	}
	for _, r := range []struct{ off, n int64 }{{0, int64(len(data))}, {volume.BlockSize - 3, 10}, {2*volume.BlockSize + 5, 2*volume.BlockSize + 118}, {7, volume.BlockSize}} {
		buf := bytes.Repeat([]byte{0xa5}, int(r.n))
		if err := fill(name, r.off, r.n, buf); err != nil || !bytes.Equal(buf, data[r.off:r.off+r.n]) {
			t.Fatalf("fill [%d, +%d): %v, bytes equal %v", r.off, r.n, err, bytes.Equal(buf, data[r.off:r.off+r.n]))
		}
	}
	if err := fill(name, 0, 100, make([]byte, 101)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a buffer longer than the range: %v, want io.ErrUnexpectedEOF", err)
	}
	if err := fill(bad, 0, int64(len(data)), make([]byte, len(data))); !errors.Is(err, cairn.ErrCorrupt) || !contains(err.Error(), bad, "block 2", string(d.id)) {
		t.Fatalf("fill over a corrupt block: %v", err)
	}
	if err := fill(bad, 0, 2*volume.BlockSize, make([]byte, 2*volume.BlockSize)); err != nil {
		t.Fatalf("fill of the good blocks before the corrupt one: %v", err)
	}
	for _, nm := range []string{name, bad} {
		if err := local.DeleteShard(context.Background(), d.id, nm); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLocalWrites: a client WithLocal stores shards of the handler's
// disks in process — durable and readable over the node protocol, no
// request on the wire — under the node's size limit.
func TestLocalWrites(t *testing.T) {
	mem := vfs.NewMem()
	d := openDisk(t, "node1/disk1", mem, "/d1")
	n := newTestNode(t, d)
	local := n.client.WithLocal(n.h)
	name := shardName(5, 0)
	data := randBytes(5, 2*volume.BlockSize+11)
	ident := identOf(t, name)
	info, err := local.PutShardIdentified(context.Background(), d.id, name, ident, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != int64(len(data)) || info.Ident != len(ident) {
		t.Fatalf("local put answered %+v for %d bytes and a %d-byte identity", info, len(data), len(ident))
	}
	select {
	case req := <-n.done:
		t.Fatalf("a local write went over the wire: %s", req)
	default:
	}
	if n.h.Busy() {
		t.Fatal("the handler is still busy after the local write")
	}
	got, err := readAll(t, n.client, d.id, name, 0, -1)
	<-n.done
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back over the protocol: %d bytes, %v", len(got), err)
	}
	rc, err := n.client.GetShard(context.Background(), d.id, name, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, crc, _ := rc.(interface {
		Footer() (int64, uint32, bool)
	}).Footer()
	rc.Close()
	<-n.done
	if crc != info.CRC {
		t.Fatalf("local put answered CRC %08x, the file's footer says %08x", info.CRC, crc)
	}

	// The node's size limit holds in process too, declared or not.
	h, err := NewHandler(HandlerConfig{Node: "node1", Secret: testSecret, Volumes: []*volume.Volume{d.v}, MaxShardSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	small := n.client.WithLocal(h)
	if _, err := small.PutShard(context.Background(), d.id, shardName(6, 0), bytes.NewReader(make([]byte, 101))); !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), "larger than 100") {
		t.Fatalf("declared oversize shard: %v", err)
	}
	if _, err := small.PutShard(context.Background(), d.id, shardName(6, 0), io.MultiReader(bytes.NewReader(make([]byte, 101)))); !errors.Is(err, cairn.ErrInvalid) || !strings.Contains(err.Error(), "longer than 100") {
		t.Fatalf("undeclared oversize shard: %v", err)
	}
	if err := n.client.DeleteShard(context.Background(), d.id, name); err != nil {
		t.Fatal(err)
	}
}

// TestLocalCallsReturnOnCancel: a local read or write whose disk I/O is
// stuck returns as soon as its context ends — as a call over the network
// does — so a data path that gives up on a straggler is not held by its
// disk; the I/O finishes on its own and then releases the handler.
func TestLocalCallsReturnOnCancel(t *testing.T) {
	mem := vfs.NewMem()
	var gate struct {
		kind    atomic.Int32 // the op kind to hold (-1: none)
		held    chan struct{}
		release chan struct{}
	}
	gate.kind.Store(-1)
	fsys := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if int32(op.Kind) == gate.kind.Load() && (strings.Contains(op.Path, "/shards/") || strings.Contains(op.Path, "/tmp/")) {
			gate.held <- struct{}{}
			<-gate.release
		}
		return nil
	}))
	d := openDisk(t, "node1/disk1", fsys, "/d1")
	n := newTestNode(t, d)
	local := n.client.WithLocal(n.h)
	name := shardName(9, 0)
	data := randBytes(9, 3*volume.BlockSize)
	mustPutShard(t, local, d.id, name, data)
	hold := func(k errorfs.OpKind) {
		gate.held, gate.release = make(chan struct{}, 1), make(chan struct{})
		gate.kind.Store(int32(k))
	}
	within := func(what string, c <-chan error) error {
		t.Helper()
		select {
		case err := <-c:
			return err
		case <-time.After(30 * time.Second): // a deadline for a hang, not a wait
			t.Fatalf("%s did not return", what)
			return nil
		}
	}
	idle := func() {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for n.h.Busy() {
			if time.Now().After(deadline) {
				t.Fatal("the handler stayed busy after the held I/O ended")
			}
			time.Sleep(time.Millisecond) // real time: the released I/O ends on its own goroutine
		}
	}

	// An open held in the disk (it reads the footer).
	hold(errorfs.OpFileReadAt)
	ctx, cancel := context.WithCancel(context.Background())
	opened := make(chan error, 1)
	go func() {
		rc, err := local.GetShard(ctx, d.id, name, 0, -1)
		if err == nil {
			rc.Close()
		}
		opened <- err
	}()
	<-gate.held
	cancel()
	if err := within("a cancelled local open", opened); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled open: %v", err)
	}
	if !n.h.Busy() {
		t.Fatal("the handler is not busy while the abandoned open runs")
	}
	gate.kind.Store(-1)
	close(gate.release)
	idle()

	// A read held in the disk, after the open.
	ctx, cancel = context.WithCancel(context.Background())
	rc, err := local.GetShard(ctx, d.id, name, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	hold(errorfs.OpFileReadAt)
	read := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(rc)
		read <- err
	}()
	<-gate.held // the read is in the disk
	cancel()
	if err := within("a cancelled local read", read); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}
	rc.Close() // while the disk read still runs
	if !n.h.Busy() {
		t.Fatal("the handler is not busy while the abandoned disk read runs")
	}
	gate.kind.Store(-1)
	close(gate.release)
	idle()

	// A Fill held in the disk: it returns at once, and its goroutine goes
	// on until the disk read ends (Close waits for it).
	ctx, cancel = context.WithCancel(context.Background())
	rc, err = local.GetShard(ctx, d.id, name, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	hold(errorfs.OpFileReadAt)
	filled := make(chan error, 1)
	go func() { filled <- rc.(interface{ Fill([]byte) error }).Fill(make([]byte, len(data))) }()
	<-gate.held
	cancel()
	if err := within("a cancelled local fill", filled); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled fill: %v", err)
	}
	rc.Close()
	if !n.h.Busy() {
		t.Fatal("the handler is not busy while the abandoned fill runs")
	}
	gate.kind.Store(-1)
	close(gate.release)
	idle()

	// A write held in the disk.
	hold(errorfs.OpFileWrite)
	ctx, cancel = context.WithCancel(context.Background())
	wrote := make(chan error, 1)
	go func() {
		_, err := local.PutShard(ctx, d.id, shardName(10, 0), bytes.NewReader(data))
		wrote <- err
	}()
	<-gate.held
	cancel()
	if err := within("a cancelled local write", wrote); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled write: %v", err)
	}
	gate.kind.Store(-1)
	close(gate.release)
	idle()
	// The abandoned write either finished or was undone; no temporary file
	// is left (the fsck at cleanup checks), and the first shard is intact.
	if got, err := readAll(t, local, d.id, name, 0, -1); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the first shard after the abandoned calls: %v", err)
	}
	for _, nm := range []string{name, shardName(10, 0)} {
		if err := local.DeleteShard(context.Background(), d.id, nm); err != nil && !errors.Is(err, cairn.ErrNotFound) {
			t.Fatal(err)
		}
	}
}
