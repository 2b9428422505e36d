package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn"
	"cairn/internal/vfs"
	"cairn/internal/vfs/errorfs"
	"cairn/node/volume"
	"cairn/node/wire"
)

// TestHostileNames sends names that would be dangerous as file names, both
// through the client (refused before sending) and as raw requests to the
// node, and checks that nothing is created anywhere but where it belongs.
func TestHostileNames(t *testing.T) {
	root := t.TempDir()
	d := openDisk(t, "node1/disk1", vfs.Default, filepath.Join(root, "a", "disk"))
	n := newTestNode(t, d)
	ctx := context.Background()
	hostile := []string{"../../x", "/", "", "..", ".", strings.Repeat("a", 5000), "a\x00b",
		"0123456789abcdef0123456789abcdef.1\x00", "../" + shardName(1, 0), shardName(1, 0) + "/..",
		"0123456789ABCDEF0123456789abcdef.1", "x", "~", "\\..\\..\\x", "%2e%2e"}
	for _, name := range hostile {
		if _, err := n.client.PutShard(ctx, d.id, name, strings.NewReader("evil")); !errors.Is(err, cairn.ErrInvalid) {
			t.Errorf("client put %q: %v", name, err)
		}
		if _, err := n.client.GetShard(ctx, d.id, name, 0, -1); !errors.Is(err, cairn.ErrInvalid) {
			t.Errorf("client get %q: %v", name, err)
		}
		if err := n.client.DeleteShard(ctx, d.id, name); !errors.Is(err, cairn.ErrInvalid) {
			t.Errorf("client delete %q: %v", name, err)
		}
	}
	// Raw requests, escaped and not (the server must not follow either).
	var paths []string
	for _, name := range hostile {
		paths = append(paths, "/v1/disks/node1%2Fdisk1/shards/"+url.PathEscape(name))
	}
	paths = append(paths, "/v1/disks/node1%2Fdisk1/shards/..%2F..%2F..%2Fx", "/v1/disks/node1%2Fdisk1/shards/%2e%2e%2f%2e%2e%2fx",
		"/v1/disks/node1%2Fdisk1/shards/../../../../x", "/v1/disks/..%2F..%2Fx/shards/"+shardName(1, 0),
		"/v1/disks/node1%2Fdisk1/shards/%00", "/v1/disks/node1%2Fdisk1/shards/"+strings.Repeat("%2e", 300))
	for _, p := range paths {
		for _, method := range []string{"PUT", "GET", "DELETE"} {
			var body io.Reader
			if method == "PUT" {
				body = strings.NewReader("evil")
			}
			resp, b := n.raw(t, method, p, testSecret, body)
			if resp.StatusCode < 300 {
				t.Errorf("%s %s: %d %s", method, p, resp.StatusCode, b)
			}
		}
	}
	// The only files under root are the volume's own.
	var files []string
	filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	slices.Sort(files)
	if len(files) != 2 || filepath.Base(files[0]) != volume.IdentityName || filepath.Base(files[1]) != volume.LockName {
		t.Fatalf("files under %s: %v", root, files)
	}
	if _, err := os.Stat(filepath.Join(root, "x")); err == nil {
		t.Fatal("a file escaped the disk directory")
	}
}

func TestCorruptBlockReachesClient(t *testing.T) {
	mem := vfs.NewMem()
	d := openDisk(t, "node1/disk1", mem, "/d1")
	n := newTestNode(t, d)
	name := shardName(7, 1)
	data := randBytes(7, 4*volume.BlockSize)
	mustPutShard(t, n.client, d.id, name, data)
	flipBlockBit(t, mem, "/d1", name, 2)

	// Mid-stream: the good blocks arrive, then ErrCorrupt.
	r, err := n.client.GetShard(context.Background(), d.id, name, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if !errors.Is(err, cairn.ErrCorrupt) || !contains(err.Error(), name, "block 2") {
		t.Fatalf("mid-stream corruption: %v", err)
	}
	if !bytes.Equal(got, data[:2*volume.BlockSize]) {
		t.Fatalf("got %d good bytes, want %d", len(got), 2*volume.BlockSize)
	}
	// First block bad: an error status before any byte.
	if _, err := n.client.GetShard(context.Background(), d.id, name, 2*volume.BlockSize+5, 10); !errors.Is(err, cairn.ErrCorrupt) {
		t.Fatalf("corrupt first block: %v", err)
	}
	// Ranges avoiding the bad block are fine.
	if got, err := readAll(t, n.client, d.id, name, 3*volume.BlockSize, -1); err != nil || !bytes.Equal(got, data[3*volume.BlockSize:]) {
		t.Fatalf("good range: %v", err)
	}
	if err := n.client.DeleteShard(context.Background(), d.id, name); err != nil {
		t.Fatal(err)
	}
}

// TestGarbageNode: a node (or something pretending to be one) that answers
// nonsense gives precise errors, never silent bad data.
func TestGarbageNode(t *testing.T) {
	name := shardName(1, 1)
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    error
	}{
		{"html 500", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			io.WriteString(w, "<html>oops</html>")
		}, cairn.ErrUnavailable},
		{"no length header", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "hello")
		}, cairn.ErrUnavailable},
		{"truncated, no trailer", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(wire.HeaderLength, "10")
			io.WriteString(w, "hello")
		}, cairn.ErrUnavailable},
		{"too many bytes", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(wire.HeaderLength, "2")
			io.WriteString(w, "hello")
		}, cairn.ErrUnavailable},
		{"bytes changed in transit", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", wire.TrailerStatus+", "+wire.TrailerBodyCRC)
			w.Header().Set(wire.HeaderLength, "5")
			io.WriteString(w, "hellO")
			w.Header().Set(wire.TrailerStatus, "ok")
			w.Header().Set(wire.TrailerBodyCRC, wire.FormatCRC(crc32c([]byte("hello"))))
		}, cairn.ErrCorrupt},
		{"error trailer", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", wire.TrailerStatus+", "+wire.TrailerError)
			w.Header().Set(wire.HeaderLength, "5")
			io.WriteString(w, "he")
			w.Header().Set(wire.TrailerStatus, "corrupt")
			w.Header().Set(wire.TrailerError, "block 0 bad")
		}, cairn.ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			c := NewClient("x", func(context.Context, cairn.DiskID) (string, error) { return srv.URL, nil }, nil)
			_, err := readAll(t, c, "d", name, 0, -1)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	// An unreachable node.
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	c := NewClient("x", func(context.Context, cairn.DiskID) (string, error) { return addr, nil }, nil)
	if _, err := c.DiskStat(context.Background(), "d"); !errors.Is(err, cairn.ErrUnavailable) {
		t.Fatalf("unreachable: %v", err)
	}
	// A PUT whose reply does not match what was sent.
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		writeJSON(w, 201, wire.PutResponse{Size: 3, CRC: 1})
	}))
	defer srv.Close()
	c = NewClient("x", func(context.Context, cairn.DiskID) (string, error) { return srv.URL, nil }, nil)
	if _, err := c.PutShard(context.Background(), "d", name, strings.NewReader("abc")); !errors.Is(err, cairn.ErrCorrupt) {
		t.Fatalf("mismatched put reply: %v", err)
	}
}

func crc32c(b []byte) uint32 {
	var c crcReader
	c.r = bytes.NewReader(b)
	io.Copy(io.Discard, &c)
	return c.crc
}

func TestNoSpace(t *testing.T) {
	for _, how := range []string{"capacity", "injected"} {
		t.Run(how, func(t *testing.T) {
			mem := vfs.NewMem()
			efs := errorfs.Wrap(mem, nil)
			d := openDisk(t, "node1/disk1", efs, "/d1")
			n := newTestNode(t, d)
			if how == "capacity" {
				mem.SetCapacity(4 * volume.BlockSize)
			} else {
				efs.SetInjector(errorfs.NewFailNth(errorfs.OnKinds(errorfs.OpFileWrite), 3, syscall.ENOSPC))
			}
			name := shardName(3, 0)
			// A large chunked body: the node fails while the client still sends.
			_, err := n.client.PutShard(context.Background(), d.id, name, io.LimitReader(zeros{}, 64<<20))
			if !errors.Is(err, cairn.ErrNoSpace) {
				t.Fatalf("put on a full disk: %v", err)
			}
			var ne *wire.Error
			if !errors.As(err, &ne) || ne.Status != http.StatusInsufficientStorage || ne.Code != "no_space" {
				t.Fatalf("error %#v", err)
			}
			if err := probe(context.Background(), n.client, d.id, name); !errors.Is(err, cairn.ErrNotFound) {
				t.Fatalf("partial shard visible: %v", err)
			}
			// A shard that fits still goes in.
			mustPutShard(t, n.client, d.id, shardName(4, 0), make([]byte, 1000))
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func waitDone(t *testing.T, n *testNode, method string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-n.done:
			if strings.HasPrefix(got, method+" ") {
				return
			}
		case <-timeout:
			t.Fatalf("the %s handler did not return", method)
		}
	}
}

// TestCancelledPut: the client cancels mid-body; the node stops writing
// and leaves neither a shard nor a temporary file.
func TestCancelledPut(t *testing.T) {
	mem := vfs.NewMem()
	log := &errorfs.Log{}
	efs := errorfs.Wrap(mem, log)
	d := openDisk(t, "node1/disk1", efs, "/d1")
	n := newTestNode(t, d)
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	name := shardName(5, 0)
	writes := func() int { return log.Count(errorfs.OnKinds(errorfs.OpFileWrite)) }
	base := writes() // formatting the disk wrote files too
	wrote := errorfs.NewSignal(errorfs.OnKinds(errorfs.OpFileWrite), log)
	efs.SetInjector(wrote)
	go func() {
		_, err := n.client.PutShard(ctx, d.id, name, pr)
		errc <- err
	}()
	// Two and a half write batches of blocks, then the body stalls.
	go func() {
		block := make([]byte, volume.BlockSize)
		for range 40 {
			if _, err := pw.Write(block); err != nil {
				return
			}
		}
	}()
	// Wait until the node has written a batch to its temporary file.
	select {
	case <-wrote.C():
	case <-time.After(10 * time.Second):
		t.Fatal("the node never wrote")
	}
	cancel()
	pw.CloseWithError(errors.New("writer gone")) // unblocks the transport's body copy
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled put: %v", err)
	}
	waitDone(t, n, "PUT")
	if tmps, _ := mem.List("/d1/tmp"); len(tmps) != 0 {
		t.Fatalf("temporary files after a cancelled put: %v", tmps)
	}
	if err := probe(context.Background(), n.client, d.id, name); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("cancelled shard visible: %v", err)
	}
	if w := writes() - base; w > 2 { // the half batch received before the cancel is never written
		t.Fatalf("node made %d writes of a cancelled put", w)
	}
}

// TestCancelledGet: the client cancels after the first bytes; the node
// stops reading the disk long before the end of the shard.
func TestCancelledGet(t *testing.T) {
	mem := vfs.NewMem()
	log := &errorfs.Log{}
	efs := errorfs.Wrap(mem, nil)
	d := openDisk(t, "node1/disk1", efs, "/d1")
	n := newTestNode(t, d)
	const blocks = 512 // 32 MiB: more than loopback socket buffers hold
	name := shardName(6, 0)
	mustPutShard(t, n.client, d.id, name, make([]byte, blocks*volume.BlockSize))
	efs.SetInjector(log)
	ctx, cancel := context.WithCancel(context.Background())
	r, err := n.client.GetShard(ctx, d.id, name, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(r, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(r); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel: %v", err)
	}
	r.Close()
	waitDone(t, n, "GET")
	reads := log.Count(errorfs.OnKinds(errorfs.OpFileReadAt))
	t.Logf("node read %d of %d blocks", reads, blocks)
	if reads >= blocks/2 {
		t.Fatalf("node read %d of %d blocks after the client cancelled", reads, blocks)
	}
}

func TestMaxShardSize(t *testing.T) {
	d := openDisk(t, "node1/disk1", vfs.NewMem(), "/d1")
	h, err := NewHandler(HandlerConfig{Secret: testSecret, Volumes: []*volume.Volume{d.v}, MaxShardSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest("PUT", srv.URL+wire.ShardPath(d.id, shardName(1, 0)), bytes.NewReader(make([]byte, 101)))
	signTest(t, req, testSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized put: %d", resp.StatusCode)
	}
	c := NewClient(testSecret, func(context.Context, cairn.DiskID) (string, error) { return srv.URL, nil }, nil)
	if _, err := c.PutShard(context.Background(), d.id, shardName(1, 0), bytes.NewReader(make([]byte, 101))); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("client put of an oversized shard: %v", err)
	}
}

var _ = fmt.Sprintf
