package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cairn"
	"cairn/codec"
	"cairn/codec/all"
	"cairn/internal/vfs"
	"cairn/internal/vfs/errorfs"
	"cairn/node/volume"
	"cairn/node/wire"
	"cairn/repair/plan"
)

// repairNode is one node of a repair test cluster: a handler over its
// disks behind a loopback HTTP server that counts the bytes it receives.
type repairNode struct {
	name      string
	disks     map[cairn.DiskID]*disk
	efs       map[cairn.DiskID]*errorfs.FS
	h         *Handler
	srv       *httptest.Server
	pushBytes atomic.Int64  // request body bytes of POST /v1/push received
	pushReqs  atomic.Int64  // POST /v1/push requests received
	putBytes  atomic.Int64  // request body bytes of PUT received
	inflight  atomic.Int64  // requests whose handler has not returned
	returned  chan struct{} // a token after each handler returns (buffered 1): waitIdle waits on it
	ctxDone   chan string   // "METHOD path" of requests whose context ended while their handler ran
}

func (n *repairNode) addr() string { return n.srv.Listener.Addr().String() }

// spare is the node's disk that holds no shard of the stripe: the target
// of rebuilt shards.
func (n *repairNode) spare() cairn.DiskID { return cairn.DiskID(n.name + "/spare") }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n.Add(int64(k))
	return k, err
}

// repairCluster is a set of test nodes and a stripe of a real code spread
// over their disks: shard i is on disk "nodeX/dI".
type repairCluster struct {
	nodes   []*repairNode
	byName  map[string]*repairNode
	disks   map[cairn.DiskID]*repairNode
	client  *Client
	code    codec.Code
	layout  [][]int // layout[x]: shard indices on node x
	shardOn map[int]cairn.DiskID
}

// newRepairCluster builds one node per entry of layout; node x holds the
// shards layout[x] (one disk each) and a spare disk.
func newRepairCluster(t *testing.T, policy string, layout [][]int, opts ...func(node string, cfg *HandlerConfig)) *repairCluster {
	t.Helper()
	code, err := all.New(policy)
	if err != nil {
		t.Fatal(err)
	}
	c := &repairCluster{byName: map[string]*repairNode{}, disks: map[cairn.DiskID]*repairNode{},
		code: code, layout: layout, shardOn: map[int]cairn.DiskID{}}
	for x, shards := range layout {
		n := &repairNode{name: fmt.Sprintf("node%d", x), disks: map[cairn.DiskID]*disk{}, efs: map[cairn.DiskID]*errorfs.FS{},
			ctxDone: make(chan string, 100), returned: make(chan struct{}, 1)}
		ids := []cairn.DiskID{n.spare()}
		for _, i := range shards {
			id := cairn.DiskID(fmt.Sprintf("%s/d%d", n.name, i))
			ids = append(ids, id)
			c.shardOn[i] = id
		}
		var vols []*volume.Volume
		for _, id := range ids {
			efs := errorfs.Wrap(vfs.NewMem(), nil)
			d := openDisk(t, id, efs, "/"+strings.ReplaceAll(string(id), "/", "_"))
			n.disks[id], n.efs[id] = d, efs
			vols = append(vols, d.v)
			c.disks[id] = n
		}
		hc := HandlerConfig{Node: cairn.NodeID(n.name), Secret: testSecret, Volumes: vols, Logger: testLogger(t, n.name)}
		for _, o := range opts {
			o(n.name, &hc)
		}
		n.h, err = NewHandler(hc)
		if err != nil {
			t.Fatal(err)
		}
		n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.inflight.Add(1)
			defer func() {
				n.inflight.Add(-1)
				select {
				case n.returned <- struct{}{}:
				default: // a token is already there; the waiter reads inflight anyway
				}
			}()
			var returned atomic.Bool // the context of a finished request ends too; that is not news
			defer returned.Store(true)
			context.AfterFunc(r.Context(), func() {
				if returned.Load() {
					return
				}
				select {
				case n.ctxDone <- r.Method + " " + r.URL.Path:
				default:
				}
			})
			r2 := r.WithContext(r.Context()) // a shallow copy: the server keeps its own view of the body
			switch {
			case r.Method == http.MethodPost && r.URL.Path == wire.PushPath:
				r2.Body = countingBody{r.Body, &n.pushBytes}
				n.pushReqs.Add(1)
			case r.Method == http.MethodPut:
				r2.Body = countingBody{r.Body, &n.putBytes}
			}
			n.h.ServeHTTP(w, r2)
		}))
		t.Cleanup(n.srv.Close)
		c.nodes = append(c.nodes, n)
		c.byName[n.name] = n
	}
	c.client = NewClient(testSecret, func(_ context.Context, d cairn.DiskID) (string, error) {
		if n := c.disks[d]; n != nil {
			return n.addr(), nil
		}
		return "", fmt.Errorf("%w: disk %s", cairn.ErrNotFound, d)
	}, nil)
	t.Cleanup(func() { c.waitIdle(t) }) // before the disks' fsck
	return c
}

// stripe encodes random data into shards of size bytes and stores shard i
// on its disk under version.
func (c *repairCluster) stripe(t *testing.T, version string, size int, seed uint64) [][]byte {
	t.Helper()
	p := c.code.Params()
	data := make([]byte, size*p.K)
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	rand.NewChaCha8(key).Read(data)
	shards := codec.Split(p, data)
	if len(shards[0]) != size {
		t.Fatalf("shard size %d, want %d", len(shards[0]), size)
	}
	if err := c.code.Encode(shards); err != nil {
		t.Fatal(err)
	}
	for i, d := range c.shardOn {
		if _, err := c.disk(d).v.Put(context.Background(), cairn.ShardName(version, i), bytes.NewReader(shards[i])); err != nil {
			t.Fatal(err)
		}
	}
	return shards
}

func (c *repairCluster) disk(id cairn.DiskID) *disk { return c.disks[id].disks[id] }

// nodesOf returns plan.Input.Nodes: the node of every shard, "" for lost.
func (c *repairCluster) nodesOf(lost []int) []string {
	nodes := make([]string, c.code.Params().N())
	for i, d := range c.shardOn {
		nodes[i] = c.disks[d].name
	}
	for _, i := range lost {
		nodes[i] = ""
	}
	return nodes
}

// spec turns a one-task plan into a RepairSpec: helpers by shard, targets
// on the Store nodes' spare disks.
func (c *repairCluster) spec(t *testing.T, version string, p *plan.Plan) (wire.RepairSpec, string) {
	t.Helper()
	if len(p.Tasks) != 1 {
		t.Fatalf("plan has %d tasks", len(p.Tasks))
	}
	task := p.Tasks[0]
	s := wire.RepairSpec{Size: p.ShardSize, Unit: p.Unit}
	for _, h := range task.Helpers {
		d := c.shardOn[h.Shard]
		s.Hops = append(s.Hops, wire.Hop{Addr: c.disks[d].addr(), Disk: d, Shard: cairn.ShardName(version, h.Shard), Coeffs: h.Coeffs})
	}
	for j, i := range task.Lost {
		n := c.byName[task.Store[j]]
		tg := wire.Target{Addr: n.addr(), Disk: n.spare(), Shard: cairn.ShardName(version, i)}
		if j%2 == 0 { // the others are written without an identity (format 1), as before identities
			tg.Identity = identOf(t, tg.Shard)
		}
		s.Store = append(s.Store, tg)
	}
	puller := ""
	if task.Puller != "" {
		puller = c.byName[task.Puller].addr()
	}
	return s, puller
}

func (c *repairCluster) resetCounters() {
	for _, n := range c.nodes {
		n.pushBytes.Store(0)
		n.pushReqs.Store(0)
		n.putBytes.Store(0)
	}
}

// waitIdle waits until no node runs a handler.
func (c *repairCluster) waitIdle(t *testing.T) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for _, n := range c.nodes {
		for n.inflight.Load() != 0 {
			select {
			case <-n.returned:
			case <-deadline:
				t.Fatalf("%s: %d handlers still running", n.name, n.inflight.Load())
			}
		}
	}
}

// checkStored checks every target holds its lost shard byte for byte and
// the returned infos match.
func (c *repairCluster) checkStored(t *testing.T, spec wire.RepairSpec, lost []int, shards [][]byte, infos []wire.ShardInfo) {
	t.Helper()
	if len(infos) != len(spec.Store) {
		t.Fatalf("%d infos for %d targets", len(infos), len(spec.Store))
	}
	for j, tg := range spec.Store {
		want := shards[lost[j]]
		if infos[j].Size != int64(len(want)) || infos[j].CRC != crc32.Checksum(want, castagnoli) {
			t.Errorf("target %d: info %+v, want size %d crc %08x", j, infos[j], len(want), crc32.Checksum(want, castagnoli))
		}
		got, err := readAll(t, c.client, tg.Disk, tg.Shard, 0, -1)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("target %d (%s %s): %d bytes, equal %v, err %v", j, tg.Disk, tg.Shard, len(got), bytes.Equal(got, want), err)
		}
		id, info, ok, err := c.disk(tg.Disk).v.Identity(context.Background(), tg.Shard)
		if err != nil || ok != (tg.Identity != nil) || info.Ident != len(tg.Identity) || infos[j].Ident != len(tg.Identity) {
			t.Errorf("target %d (%s %s): identity %+v %v %v, reply %+v, sent %d bytes", j, tg.Disk, tg.Shard, id, ok, err, infos[j], len(tg.Identity))
		}
	}
}

// identOf returns an encoded identity naming shard file name.
func identOf(t testing.TB, name string) []byte {
	t.Helper()
	version, row, _ := strings.Cut(name, ".")
	r, err := strconv.Atoi(row)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cairn.ShardIdentity{Bucket: "b", Key: "k", Version: version, Row: r, Policy: "rs-6-3", BlockSize: 1 << 20}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkNothingStored checks no target holds its shard.
func (c *repairCluster) checkNothingStored(t *testing.T, spec wire.RepairSpec) {
	t.Helper()
	c.waitIdle(t)
	for _, tg := range spec.Store {
		if err := probe(context.Background(), c.client, tg.Disk, tg.Shard); !errors.Is(err, cairn.ErrNotFound) {
			t.Errorf("target %s %s after a failed repair: %v", tg.Disk, tg.Shard, err)
		}
		d := c.disk(tg.Disk)
		if tmps, err := d.fs.List(path.Join(d.dir, volume.TmpDir)); err != nil || len(tmps) > 0 {
			t.Errorf("target %s: temporary files %v %v", tg.Disk, tmps, err)
		}
	}
}

// testLayout: rs-6-3 over 7 nodes; node0 and node6 hold two shards each.
var testLayout = [][]int{{0, 1}, {2}, {3}, {4}, {5}, {6}, {7, 8}}

const testShardSize = 1<<20 + 123

// testLogger logs to t when -v and CAIRN_TEST_LOG is set.
func testLogger(t *testing.T, node string) *slog.Logger {
	if os.Getenv("CAIRN_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", node)
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
