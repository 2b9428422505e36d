package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/internal/vfs"
	"cairn/node/volume"
)

const testSecret = "s3cret-for-tests"

// disk is one test disk: a volume and the FS under it.
type disk struct {
	id  cairn.DiskID
	fs  vfs.FS
	dir string
	v   *volume.Volume
}

// openDisk opens a volume and registers the fsck cleanup that every test
// opening a volume has (fsckCleanup).
func openDisk(t testing.TB, id cairn.DiskID, fsys vfs.FS, dir string) *disk {
	t.Helper()
	v, err := volume.Open(dir, volume.Options{FS: fsys, DiskID: id, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	fsckCleanup(t, fsys, dir, id)
	t.Cleanup(func() { v.Close() }) // runs first: fsck reopens the disk, which needs its lock
	return &disk{id: id, fs: fsys, dir: dir, v: v}
}

// fsckCleanup checks at the end of the test that the volume in dir has no
// temporary file, no stray file and no corrupt shard.
func fsckCleanup(t testing.TB, fsys vfs.FS, dir string, id cairn.DiskID) {
	t.Cleanup(func() {
		if tmps, err := fsys.List(path.Join(dir, volume.TmpDir)); err != nil || len(tmps) > 0 {
			t.Errorf("fsck %s: temporary files left: %v %v", id, tmps, err)
		}
		v, err := volume.Open(dir, volume.Options{FS: fsys, DiskID: id})
		if err != nil {
			t.Errorf("fsck %s: open: %v", id, err)
			return
		}
		defer v.Close()
		rep, err := v.Fsck(context.Background(), volume.FsckOptions{})
		if err != nil || !rep.OK() {
			t.Errorf("fsck %s: %v\n%s", id, err, rep.Problems())
		}
	})
}

// testNode is a handler over some disks behind a real loopback HTTP
// server, and a client for it. done receives "METHOD path" when a request's
// handler has returned.
type testNode struct {
	disks  []*disk
	h      *Handler
	srv    *httptest.Server
	client *Client
	done   chan string
}

func newTestNode(t testing.TB, disks ...*disk) *testNode {
	t.Helper()
	var vols []*volume.Volume
	for _, d := range disks {
		vols = append(vols, d.v)
	}
	h, err := NewHandler(HandlerConfig{Node: "node1", Secret: testSecret, Volumes: vols})
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{disks: disks, h: h, done: make(chan string, 100)}
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		select {
		case n.done <- r.Method + " " + r.URL.Path:
		default:
		}
	}))
	t.Cleanup(n.srv.Close)
	n.client = NewClient(testSecret, n.resolve, nil)
	return n
}

func (n *testNode) resolve(_ context.Context, id cairn.DiskID) (string, error) {
	for _, d := range n.disks {
		if d.id == id {
			return n.srv.Listener.Addr().String(), nil
		}
	}
	return "", fmt.Errorf("%w: disk %s", cairn.ErrNotFound, id)
}

// raw sends an arbitrary request (path not escaped by us).
func (n *testNode) raw(t testing.TB, method, rawPath, secret string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, n.srv.URL+"/", body)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = rawPath // sent verbatim
	if secret != "" {
		u, err := url.ParseRequestURI(rawPath)
		if err != nil {
			t.Fatal(err)
		}
		key := testKey(secret)
		signPath(req, u.EscapedPath(), &key, time.Now(), newNonce(), bodyDigest(t, req))
	}
	return do(t, req)
}

// do sends req as is (no redirects, no retries of ours) and returns the
// response with its body read.
func do(t testing.TB, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func shardName(n, i int) string { return cairn.ShardName(fmt.Sprintf("%032x", n*104729+3), i) }

func randBytes(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func readAll(t testing.TB, c *Client, disk cairn.DiskID, name string, off, n int64) ([]byte, error) {
	t.Helper()
	r, err := c.GetShard(context.Background(), disk, name, off, n)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func mustPutShard(t testing.TB, c *Client, disk cairn.DiskID, name string, data []byte) {
	t.Helper()
	info, err := c.PutShard(context.Background(), disk, name, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("put %s: %v", name, err)
	}
	if info.Size != int64(len(data)) {
		t.Fatalf("put %s: size %d, want %d", name, info.Size, len(data))
	}
}

func contains(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// testKey is the key NewClient(secret) signs with.
func testKey(secret string) Key { return Key{ID: AdminKeyID, key: deriveKey(secret, AdminKeyID)} }

// signTest signs req as a Client with secret would, but with the body's
// digest when it has a body that can be read again (GetBody).
func signTest(t testing.TB, req *http.Request, secret string) {
	t.Helper()
	key := testKey(secret)
	sign(req, &key, time.Now(), newNonce(), bodyDigest(t, req))
}

// bodyDigest is the SHA-256 of req's body, read through GetBody (empty
// if none).
func bodyDigest(t testing.TB, req *http.Request) string {
	t.Helper()
	if req.GetBody == nil {
		return emptySHA256
	}
	rc, err := req.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// flipBlockBit flips a bit in block b of shard name of the volume in dir
// on fsys, so that the block fails its CRC.
func flipBlockBit(t testing.TB, fsys vfs.FS, dir, name string, b int) {
	t.Helper()
	p := path.Join(dir, volume.ShardsDir, name[:2], name)
	f, err := fsys.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, fi.Size())
	_, err = f.ReadAt(raw, 0)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	raw[b*(volume.BlockSize+4)+9] ^= 0x80
	w, err := fsys.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
