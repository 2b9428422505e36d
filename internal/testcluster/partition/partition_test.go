package partition_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"cairn"
	"cairn/internal/proc"
	"cairn/internal/testcluster"
	"cairn/meta"
	etcdmeta "cairn/meta/etcd"
)

// lab is the bridge and namespaces of one run (see the package doc).
type lab struct {
	t      *testing.T
	run    string // random, in every name
	bridge string
	prefix string // "10.A.B."
	hosts  int    // hosts made so far
}

// host is one namespace on the bridge.
type host struct {
	name string // the process it holds (meta1, node2, ...)
	ns   string
	veth string // its end on the bridge
	ip   string
}

// newLab makes the bridge, or skips the test where it cannot.
func newLab(t *testing.T) *lab {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make network namespaces (ip netns); run as root for the partition test")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip for network namespaces")
	}
	l := &lab{t: t, run: fmt.Sprintf("%06x", rand.Uint32()&0xffffff),
		prefix: fmt.Sprintf("10.%d.%d.", 200+rand.IntN(50), rand.IntN(256))}
	l.bridge = "cb" + l.run
	l.ip("link", "add", l.bridge, "type", "bridge")
	t.Cleanup(func() { l.tryIP("link", "del", l.bridge) })
	l.ip("addr", "add", l.prefix+"1/24", "dev", l.bridge)
	l.ip("link", "set", l.bridge, "up")
	return l
}

func (l *lab) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// tryIP runs ip for a cleanup: a failure is logged, not fatal.
func (l *lab) tryIP(args ...string) {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Logf("cleanup: ip %s: %v %s", strings.Join(args, " "), err, out)
	}
}

// host makes a namespace with a link to the bridge and its own address.
func (l *lab) host(name string) host {
	l.hosts++
	h := host{name: name, ns: fmt.Sprintf("cairn-%s-%s", l.run, name), veth: fmt.Sprintf("cv%s-%d", l.run, l.hosts),
		ip: fmt.Sprintf("%s%d", l.prefix, 1+l.hosts)}
	l.ip("netns", "add", h.ns)
	l.t.Cleanup(func() { l.tryIP("netns", "del", h.ns) })
	l.ip("link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns", h.ns)
	// Both ends at once, before the namespace goes (whose teardown the
	// kernel may finish late).
	l.t.Cleanup(func() { l.tryIP("link", "del", h.veth) })
	l.ip("link", "set", h.veth, "master", l.bridge, "up")
	l.ip("-n", h.ns, "addr", "add", h.ip+"/24", "dev", "eth0")
	l.ip("-n", h.ns, "link", "set", "eth0", "up")
	l.ip("-n", h.ns, "link", "set", "lo", "up")
	return h
}

// cut isolates h: its link to the bridge goes down.
func (l *lab) cut(h host) { l.ip("link", "set", h.veth, "down") }

// heal joins h to the bridge again.
func (l *lab) heal(h host) { l.ip("link", "set", h.veth, "up") }

// start starts `cairn args...` inside h and kills it when the test ends.
func (l *lab) start(h host, dir string, args ...string) *proc.Proc {
	l.t.Helper()
	p, err := proc.Start(l.t.Context(), proc.Config{Name: h.name, Bin: "ip",
		Args: append([]string{"netns", "exec", h.ns, testcluster.Binary(l.t)}, args...), Dir: dir})
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(p.Kill)
	return p
}

const (
	metas    = 3
	nodes    = 5 // × 2 disks: rs-4-2 stripes take 6 of 10
	grace    = 3 * time.Second
	lease    = 10 * time.Second // node.Config.LeaseTTL's default
	deadline = 20 * time.Second // the longest a request may take: the gateway's deadlines (--meta-timeout 3s, --node-timeout 5s) and a few retries of them
)

// TestPartition is issue 14's partition test (see the package doc): three
// metadata members and five nodes, each on its own host, and a gateway
// outside them. First a node is cut off, then the metadata member that
// leads the raft group. While each is cut off, a writer and a reader keep
// going: every request answers within deadline, and once the cluster has
// noticed (the node's lease and the grace period, or an election) new
// objects are acknowledged and every acknowledged object reads back.
// After each heal the cluster settles — every disk up, the repair queue
// empty — and at the end every acknowledged object reads back byte-exact.
func TestPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a network of namespaces and waits out leases")
	}
	l := newLab(t)
	dir := t.TempDir()
	var metaHosts, nodeHosts []host
	var initial []string
	for i := 1; i <= metas; i++ {
		h := l.host(fmt.Sprintf("meta%d", i))
		metaHosts = append(metaHosts, h)
		initial = append(initial, fmt.Sprintf("%s=http://%s:2380", h.name, h.ip))
	}
	for i := 1; i <= nodes; i++ {
		nodeHosts = append(nodeHosts, l.host(fmt.Sprintf("node%d", i)))
	}
	// The members of a new cluster wait for each other: start them together.
	var wg sync.WaitGroup
	errs := make([]error, metas)
	var endpoints []string
	for i, h := range metaHosts {
		endpoints = append(endpoints, fmt.Sprintf("http://%s:2379", h.ip))
		wg.Go(func() {
			p, err := proc.Start(t.Context(), proc.Config{Name: h.name, Bin: "ip", Dir: dir, Args: []string{"netns", "exec", h.ns,
				testcluster.Binary(t), "meta", "--name", h.name, "--data", filepath.Join(dir, h.name),
				"--client-addr", h.ip + ":2379", "--peer-addr", h.ip + ":2380", "--initial-cluster", strings.Join(initial, ",")}})
			if p != nil {
				t.Cleanup(p.Kill)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	secret := fmt.Sprintf("partition-secret-%d", rand.Uint64())
	secretFile, conf := filepath.Join(dir, "secret"), filepath.Join(dir, "client.conf")
	confJSON, _ := json.Marshal(map[string]any{"meta": endpoints, "secret": secret})
	if err := errors.Join(os.WriteFile(secretFile, []byte(secret), 0o600), os.WriteFile(conf, confJSON, 0o600)); err != nil {
		t.Fatal(err)
	}
	for _, h := range nodeHosts {
		disks := []string{filepath.Join(dir, h.name, "disk1"), filepath.Join(dir, h.name, "disk2")}
		l.start(h, dir, append(proc.NodeArgs(h.name, endpoints, secretFile, disks), "--addr", h.ip+":0", "--grace", grace.String(),
			"--repair-scan", "1s", "--cleanup-grace", "1s", "--cleanup-every", "1s")...)
	}
	gw := testcluster.StartProc(t, "gateway", "gateway", "--config", conf, "--s3-addr", "127.0.0.1:0",
		"--access-key", testcluster.TestAccessKey, "--secret-key", testcluster.TestSecretKey,
		"--meta-timeout", "3s", "--node-timeout", "5s")
	store, err := etcdmeta.Open(t.Context(), endpoints, etcdmeta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	w := &workload{t: t, s3: testcluster.S3Client(gw.Addr(proc.S3)), acked: map[string][]byte{}}
	ctx := t.Context()
	if _, err := w.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, time.Minute, "every disk up", func() bool { return settled(ctx, store) })
	for range 20 {
		w.mustPut(ctx)
	}

	// A node cut off: its lease lapses, its disks turn suspect, then
	// down, and repair rebuilds their shards on the others.
	victim := nodeHosts[rand.IntN(nodes)]
	w.partitioned(l, victim, lease+grace+2*time.Second)
	testcluster.WaitFor(t, 3*time.Minute, "every disk up and the repair queue empty after the node's heal", func() bool { return settled(ctx, store) })

	// The raft leader's member cut off: the other two elect a leader.
	m, err := store.Members(ctx, 5*time.Second)
	if err != nil || m.Leader == "" {
		t.Fatalf("who leads the metadata members: %+v, %v", m, err)
	}
	var leader host
	for _, h := range metaHosts {
		if h.name == m.Leader {
			leader = h
		}
	}
	if leader.name == "" {
		t.Fatalf("the leader %q is no member of the test", m.Leader)
	}
	w.partitioned(l, leader, lease+grace+2*time.Second)
	testcluster.WaitFor(t, 3*time.Minute, "every disk up and the repair queue empty after the member's heal", func() bool { return settled(ctx, store) })
	w.readAll(ctx, "after healing")
	t.Logf("%d objects acknowledged, every one read back after healing", len(w.acked))
}

const bucket = "part"

// workload writes new objects and reads acknowledged ones through the
// gateway, timing every request.
type workload struct {
	t  *testing.T
	s3 *s3.Client

	mu               sync.Mutex
	acked            map[string][]byte // guarded by mu
	n                int               // guarded by mu; objects attempted
	slowest          time.Duration     // guarded by mu
	requests, failed int               // guarded by mu; while cut off
	firstErr         error             // guarded by mu; the first failure while cut off
}

// timed runs one request, bounded by deadline, and records how long it
// took; a request over deadline fails the test.
func (w *workload) timed(ctx context.Context, what string, do func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, deadline+5*time.Second)
	defer cancel()
	start := time.Now()
	err := do(ctx)
	took := time.Since(start)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.slowest = max(w.slowest, took)
	if took > deadline {
		w.t.Errorf("%s took %v (over the %v deadline): %v", what, took, deadline, err)
	}
	return err
}

func (w *workload) put(ctx context.Context) (string, error) {
	w.mu.Lock()
	w.n++
	key := fmt.Sprintf("obj%05d", w.n)
	w.mu.Unlock()
	data := make([]byte, 1+rand.IntN(200<<10))
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	err := w.timed(ctx, "PUT "+key, func(ctx context.Context) error {
		_, err := w.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)})
		return err
	})
	if err == nil {
		w.mu.Lock()
		w.acked[key] = data
		w.mu.Unlock()
	}
	return key, err
}

// mustPut puts a new object, retrying a few times as an S3 client does.
func (w *workload) mustPut(ctx context.Context) {
	var err error
	for range 5 {
		var key string
		if key, err = w.put(ctx); err == nil {
			return
		}
		w.t.Logf("PUT %s: %v (retrying)", key, err)
		// real time: as an S3 client backs off before a retry.
		time.Sleep(time.Second)
	}
	w.t.Errorf("PUT failed 5 times: %v", err)
}

func (w *workload) get(ctx context.Context, key string, want []byte) error {
	return w.timed(ctx, "GET "+key, func(ctx context.Context) error {
		out, err := w.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			return err
		}
		defer out.Body.Close()
		got, err := io.ReadAll(out.Body)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			w.t.Errorf("GET %s: %d bytes, not the %d acknowledged", key, len(got), len(want))
		}
		return nil
	})
}

// readAll reads every acknowledged object back byte-exact, retrying a
// few times as an S3 client does.
func (w *workload) readAll(ctx context.Context, when string) {
	w.mu.Lock()
	acked := make(map[string][]byte, len(w.acked))
	for k, v := range w.acked {
		acked[k] = v
	}
	w.mu.Unlock()
	for key, want := range acked {
		var err error
		for range 3 {
			if err = w.get(ctx, key, want); err == nil {
				break
			}
			// real time: as an S3 client backs off before a retry.
			time.Sleep(time.Second)
		}
		if err != nil {
			w.t.Errorf("%s: acknowledged %s cannot be read: %v", when, key, err)
		}
	}
}

// partitioned cuts h off for at least notice, with a writer and a reader
// running, then checks that the cluster serves: new objects are
// acknowledged and every acknowledged object reads back; then heals h.
func (w *workload) partitioned(l *lab, h host, notice time.Duration) {
	t := w.t
	ctx := t.Context()
	l.cut(h)
	t.Logf("cut off %s (%s)", h.name, h.ip)
	w.mu.Lock()
	w.requests, w.failed, w.firstErr, w.slowest = 0, 0, nil, 0
	w.mu.Unlock()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	loop := func(op func() error) {
		for {
			select {
			case <-stop:
				return
			default:
			}
			err := op()
			w.mu.Lock()
			w.requests++
			if err != nil {
				if w.firstErr == nil {
					w.firstErr = err
				}
				w.failed++
			}
			w.mu.Unlock()
			if err != nil {
				// real time: as an S3 client backs off before a retry.
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	wg.Go(func() { loop(func() error { _, err := w.put(ctx); return err }) })
	wg.Go(func() {
		loop(func() error {
			w.mu.Lock()
			var key string
			var want []byte
			for k, v := range w.acked { // a random one: map order
				key, want = k, v
				break
			}
			w.mu.Unlock()
			return w.get(ctx, key, want)
		})
	})
	// real time: the cluster notices the cut under load (a lease, the
	// grace period, an election).
	time.Sleep(notice)
	close(stop)
	wg.Wait()
	before := len(w.acked)
	for range 5 {
		w.mustPut(ctx)
	}
	w.readAll(ctx, "while "+h.name+" is cut off")
	t.Logf("%s cut off: %d requests in %v, %d failed (first: %v), slowest %v; %d objects acknowledged, 5 more after it",
		h.name, w.requests, notice, w.failed, w.firstErr, w.slowest, before)
	l.heal(h)
	t.Logf("healed %s", h.name)
}

// settled says whether every disk is up and the repair queue is empty.
func settled(ctx context.Context, store meta.Store) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	disks, err := store.Disks(ctx)
	if err != nil || len(disks) != 2*nodes {
		return false
	}
	for _, d := range disks {
		if d.State != cairn.DiskUp {
			return false
		}
	}
	tasks, err := meta.AllRepairTasks(ctx, store)
	return err == nil && len(tasks) == 0
}
