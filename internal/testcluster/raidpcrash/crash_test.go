package raidpcrash_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"cairn"
	"cairn/internal/proc"
	"cairn/internal/testcluster"
	"cairn/meta"
	etcdmeta "cairn/meta/etcd"
	"cairn/raidp"
)

const (
	nodes   = 6 // one disk each: a group of 6, rows 2, 6 superchunks
	size    = 1 << 20
	slots   = 4
	bucket  = "crash"
	group   = "warm"
	maxWait = 2 * time.Minute // bound of every command the test runs
)

// TestRAIDPCrash is issue 17's crash test of real processes (see the
// package doc).
func TestRAIDPCrash(t *testing.T) {
	def := 100
	if testing.Short() {
		def = 12 // each iteration restarts six nodes: a few seconds of a CI run
	}
	iters := testcluster.EnvCount(t, "CAIRN_RAIDP_CRASH", def)
	seed := testcluster.EnvSeed(t, "CAIRN_RAIDP_CRASH_SEED")
	t.Logf("raidp crash: %d iterations, seed %d (CAIRN_RAIDP_CRASH_SEED=%d replays its choices)", iters, seed, seed)
	x := start(t, seed)
	begin := time.Now()
	for i := range iters {
		x.iteration(i)
		if t.Failed() {
			t.Fatalf("iteration %d failed (seed %d)", i, seed)
		}
	}
	x.checkAll("the end")
	t.Logf("raidp crash: %d iterations in %v: kinds %v; killed mid-operation %d, after it ended %d; "+
		"%d PUTs acknowledged, %d in doubt; %d iterations left replicas of dead bytes different; %d objects read back",
		iters, time.Since(begin).Round(time.Second), x.kinds, x.mid, x.late, x.acked, x.doubted, x.divergent, x.reads)
}

// crash is one run of the test.
type crash struct {
	t     *testing.T
	rng   *rand.Rand
	c     *testcluster.Cluster
	store meta.Store
	dir   string // the objects' files
	first []byte // the group record of generation 1, restored by reset (as a newer generation)

	// objects of the current epoch: acknowledged ones must read back
	// byte-exact, those in doubt read back byte-exact or absent.
	objects map[string][]byte
	doubt   map[string][]byte
	next    int // key counter

	gw *testcluster.Proc         // the gateway
	s3 atomic.Pointer[s3.Client] // a client of the live gateway

	putTime, gwTime, recoverTime time.Duration // running estimates, for the kill delays

	kinds                                       map[string]int
	mid, late, acked, doubted, divergent, reads int
}

func start(t *testing.T, seed uint64) *crash {
	c := testcluster.Start(t, testcluster.Config{Nodes: nodes, Lstor: true,
		NodeArgs: []string{"--raidp-size", "1MiB", "--raidp-slots", strconv.Itoa(slots)}})
	store, err := etcdmeta.Open(t.Context(), c.MetaEndpoints(), etcdmeta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	x := &crash{t: t, rng: rand.New(rand.NewPCG(seed, 17)), c: c, store: store, dir: t.TempDir(),
		objects: map[string][]byte{}, doubt: map[string][]byte{}, kinds: map[string]int{},
		putTime: 200 * time.Millisecond, gwTime: 100 * time.Millisecond, recoverTime: time.Second}
	x.gw = testcluster.StartProc(t, "gateway", "gateway", "--config", c.Conf, "--s3-addr", "127.0.0.1:0", "--console-addr", "off",
		"--access-key", testcluster.TestAccessKey, "--secret-key", testcluster.TestSecretKey)
	x.s3.Store(testcluster.S3Client(x.gw.Addr(proc.S3)))
	c.CLI(t, "mb", bucket)
	// The first raidp PUT makes the group; keep its first generation for
	// the resets.
	x.mustPut(100_000)
	b, err := store.RAIDP(t.Context(), "groups/"+group)
	if err != nil {
		t.Fatal(err)
	}
	x.first = b
	return x
}

func (x *crash) iteration(i int) {
	t := x.t
	kinds := []string{"put/node", "put/node", "put/node", "put/client", "put/gateway", "put/gateway", "remirror", "dual"}
	kind := kinds[x.rng.IntN(len(kinds))]
	x.kinds[kind]++
	t.Logf("iteration %d: %s", i, kind)
	switch kind {
	case "put/node", "put/client", "put/gateway":
		if x.free() < 2*size {
			x.checkAll("before a reset")
			x.reset()
		}
		x.putCrash(kind)
	default:
		x.checkAll("before a reset")
		x.reset()
		x.recoverCrash(kind == "dual")
	}
}

// --- the two kinds of crash ---

// putCrash PUTs a random object — with `cairn put` (kinds put/node and
// put/client) or through the gateway's S3 API with storage class WARM
// (put/gateway) — and kills, after a random delay, a node of the
// superchunk it appends to (put/node), the put process itself
// (put/client) or the gateway (put/gateway, then started again); then
// checks.
func (x *crash) putCrash(kind string) {
	t := x.t
	n := 1 + x.rng.IntN(600_000)
	if x.rng.IntN(4) == 0 {
		n = 600_000 + x.rng.IntN(600_000) // likely to span two superchunks
	}
	key, p := x.object(n)
	victim := -1
	if kind == "put/node" {
		victim = x.appendNode()
	}
	var op running
	est := &x.putTime
	if kind == "put/gateway" {
		op, est = x.s3Put(key, p), &x.gwTime
	} else {
		op = x.cli("put", "--policy", cairn.RAIDPPolicy, filepath.Join(x.dir, key), bucket+"/"+key)
	}
	delay := time.Duration(x.rng.Int64N(int64(*est) * 6 / 5))
	began := time.Now()
	timer := time.NewTimer(delay) // real time: the kill lands at a random point of a real process's PUT
	var err error
	select {
	case err = <-op.done:
		timer.Stop()
		x.late++
		*est = (3**est + time.Since(began)) / 4
		if victim >= 0 {
			x.c.Nodes[victim].Kill()
		}
	case <-timer.C:
		x.mid++
		if victim >= 0 {
			x.c.Nodes[victim].Kill()
		} else {
			op.kill()
		}
		err = x.wait(op)
	}
	if !x.gw.Alive() {
		if err := x.gw.Restart(t.Context()); err != nil {
			t.Fatal(err)
		}
		x.s3.Store(testcluster.S3Client(x.gw.Addr(proc.S3)))
	}
	if err == nil {
		x.objects[key] = p
		x.acked++
	} else {
		x.doubt[key] = p
		x.doubted++
		t.Logf("put %s (%d bytes) in doubt: %v: %s", key, n, err, op.out())
	}
	x.check(key, false)
}

// s3Put PUTs p as key through the gateway, storage class WARM.
func (x *crash) s3Put(key string, p []byte) running {
	ctx, cancel := context.WithTimeout(x.t.Context(), maxWait)
	done := make(chan error, 1)
	cl := x.s3.Load()
	go func() {
		defer cancel()
		_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(p),
			ContentLength: aws.Int64(int64(len(p))), StorageClass: types.StorageClass("WARM")})
		done <- err
	}()
	return running{done: done, kill: x.gw.Kill, out: func() string { return "" }, name: "S3 PUT " + key}
}

// recoverCrash fills the fresh group with a few objects, loses one disk
// (its node killed) or two sharing a superchunk with data (their data
// removed, their Lstors kept, their nodes serving again), runs `cairn
// admin raidp recover` and kills it, or a node taking part, after a
// random delay; then runs the recovery again to its end and checks.
func (x *crash) recoverCrash(dual bool) {
	t := x.t
	for total := 0; total < 5*size/2; {
		n := 50_000 + x.rng.IntN(900_000)
		x.mustPut(n)
		total += n
	}
	g := x.group()
	a := x.alloc()
	var used []raidp.Superchunk
	for _, s := range g.Layout.Superchunks {
		if a.End[s.ID] > 0 {
			used = append(used, s)
		}
	}
	sc := used[x.rng.IntN(len(used))]
	failed := []int{sc.Replicas[x.rng.IntN(2)].Disk}
	if dual {
		failed = []int{sc.Replicas[0].Disk, sc.Replicas[1].Disk}
	}
	before := g.Generation
	args := []string{"admin", "raidp", "recover"}
	for _, d := range failed {
		args = append(args, g.Disks[d].ID)
		x.c.Nodes[x.nodeOf(g, d)].Kill()
	}
	if dual {
		// The disks are replaced: their data is gone, their Lstors stay
		// (the node keeps serving their parity for the rebuild).
		for _, d := range failed {
			n := x.nodeOf(g, d)
			if err := os.Remove(filepath.Join(x.c.NodeDir(n+1, 1), "raidp.data")); err != nil {
				t.Fatal(err)
			}
			x.restart(n)
		}
	}
	victim := -1 // the recover process
	if x.rng.IntN(2) == 0 {
		var live []int
		for d := range g.Disks {
			if dual || !slices.Contains(failed, d) {
				live = append(live, x.nodeOf(g, d))
			}
		}
		victim = live[x.rng.IntN(len(live))]
	}
	delay := time.Duration(x.rng.Int64N(int64(x.recoverTime) * 6 / 5))
	op := x.cli(args...)
	began := time.Now()
	timer := time.NewTimer(delay) // real time: the kill lands at a random point of a real recovery
	var err error
	select {
	case err = <-op.done:
		timer.Stop()
		x.late++
		x.recoverTime = (3*x.recoverTime + time.Since(began)) / 4
	case <-timer.C:
		x.mid++
		if victim < 0 {
			op.kill()
		} else {
			x.c.Nodes[victim].Kill()
		}
		err = x.wait(op)
	}
	t.Logf("recover %v, victim %d after %v: %v", failed, victim, delay, err)
	if victim >= 0 && !(slices.Contains(failed, x.diskOf(g, victim)) && !dual) {
		x.restart(victim)
	}
	// Run the recovery to its end.
	for try := 0; ; try++ {
		op := x.cli(args...)
		err := x.wait(op)
		if err == nil {
			break
		}
		if try == 2 {
			t.Fatalf("cairn %s: %v\n%s", strings.Join(args, " "), err, op.out())
		}
		t.Logf("cairn %s: %v (again)\n%s", strings.Join(args, " "), err, op.out())
	}
	g = x.group()
	if g.Generation != before+1 || !slices.Equal(slices.Sorted(slices.Values(g.Out)), slices.Sorted(slices.Values(failed))) {
		t.Fatalf("after recovering from %v: generation %d, out %v", failed, g.Generation, g.Out)
	}
	if err := g.Layout.Check(); err != nil {
		t.Fatalf("after recovering from %v: %v", failed, err)
	}
	// Seed 7 found a recover process killed after it stored the group and
	// before it cleared its diverts: the superchunks stayed diverted for
	// good (client TestRAIDPRecoverDiedBeforeUndivert keeps the case).
	if a := x.alloc(); len(a.Divert) > 0 {
		t.Errorf("after recovering from %v: superchunks %v stay diverted", failed, a.Divert)
	}
	x.check("", true)
}

// --- checks ---

// check stops every node, runs `cairn admin raidp verify` over the
// group's live disks and compares both replicas of every acknowledged
// object with what was PUT; then starts the nodes again and reads back
// key (if not "") and, if in doubt, checks it is whole or absent.
// recovered says a recovery just ran (see verify).
func (x *crash) check(key string, recovered bool) {
	t := x.t
	for _, n := range x.c.Nodes {
		n.Kill()
	}
	g := x.group()
	x.verify(g, recovered)
	for k, p := range x.objects {
		x.onDisk(g, k, p, true)
	}
	for k, p := range x.doubt {
		x.onDisk(g, k, p, false)
	}
	x.restartAll()
	if key == "" {
		return
	}
	if p, ok := x.objects[key]; ok {
		x.get(key, p, false)
	} else if p, ok := x.doubt[key]; ok {
		x.get(key, p, true)
	} else {
		t.Fatalf("no object %s", key)
	}
}

// checkAll reads back every object of the epoch with `cairn get`.
func (x *crash) checkAll(when string) {
	for k, p := range x.objects {
		x.get(k, p, false)
	}
	for k, p := range x.doubt {
		x.get(k, p, true)
	}
	x.t.Logf("%s: %d objects and %d in doubt read back", when, len(x.objects), len(x.doubt))
}

// verify runs `cairn admin raidp verify` offline over the live disks of
// g (all nodes stopped). Every Lstor must be the XOR of its disk, and the
// replicas of every superchunk are compared: right after a recovery
// (whose epoch had no PUT in doubt) a difference fails the test; after a
// PUT it is counted (dead bytes of a PUT in doubt, see the package doc),
// not failed — the acknowledged bytes are compared by onDisk.
func (x *crash) verify(g raidp.Group, recovered bool) {
	t := x.t
	args := []string{"admin", "raidp", "verify", "--size", "1MiB", "--slots", strconv.Itoa(slots)}
	if len(g.Out) == 0 {
		args = append(args, "--rows", strconv.Itoa(2*len(g.Layout.Superchunks)/len(g.Disks)))
	} else {
		// A recovered group: compare the replicas where it places them.
		b, err := json.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(x.dir, "group.json")
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--group", file)
	}
	live := 0
	for d := range g.Disks {
		if !slices.Contains(g.Out, d) {
			n := x.nodeOf(g, d) + 1
			args = append(args, x.c.NodeDir(n, 1)+",lstor="+x.c.LstorDir(n, 1))
			live++
		} else if len(g.Out) > 0 {
			args = append(args, "-") // --group: a disk out of the group
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), maxWait)
	defer cancel()
	// Offline: no --config.
	out, err := exec.CommandContext(ctx, testcluster.Binary(t), args...).CombinedOutput()
	ok, differ := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch {
		case strings.Contains(line, ": ok ("):
			ok++
		case strings.HasPrefix(line, "superchunk ") && strings.Contains(line, " differ from byte "):
			differ++
		case strings.HasPrefix(line, "warning: ") && strings.Contains(line, "same file system"),
			strings.Contains(line, "both replicas agree"), line == "free slots: all zero",
			strings.Contains(line, "raidp verify: ") && strings.HasSuffix(line, " problems") && differ > 0 && ok == live:
		default:
			t.Fatalf("cairn admin raidp verify: %v: unexpected line %q\n%s", err, line, out)
		}
	}
	if ok != live || (err != nil) != (differ > 0) {
		t.Fatalf("cairn admin raidp verify: %v: %d of %d disks ok, %d superchunks differ\n%s", err, ok, live, differ, out)
	}
	if differ > 0 && recovered {
		// The epoch's PUTs were all acknowledged before the recovery:
		// every superchunk it moved or rebuilt must match its mirror.
		t.Fatalf("after a recovery %d superchunks have replicas that differ\n%s", differ, out)
	}
	if differ > 0 {
		x.divergent++
		t.Logf("replicas of dead bytes differ in %d superchunks", differ)
	}
}

// onDisk compares both replicas of object key, as the current group
// places its superchunks, with p, reading the disks' raidp.data files
// (the nodes are stopped and their journals replayed by verify). An
// object in doubt may be absent (no manifest).
func (x *crash) onDisk(g raidp.Group, key string, p []byte, acked bool) {
	t := x.t
	m, err := x.store.Manifest(t.Context(), bucket, key)
	if errors.Is(err, cairn.ErrNotFound) && !acked {
		return
	}
	if err != nil {
		t.Fatalf("manifest of %s: %v", key, err)
	}
	if m.RAIDP == nil {
		t.Fatalf("%s: policy %s, no RAIDP layout", key, m.Policy)
	}
	pos := int64(0)
	for _, sp := range m.RAIDP.Spans {
		i := slices.IndexFunc(g.Layout.Superchunks, func(s raidp.Superchunk) bool { return s.ID == sp.Superchunk })
		if i < 0 {
			t.Fatalf("%s: superchunk %d is not in the group", key, sp.Superchunk)
		}
		for _, r := range g.Layout.Superchunks[i].Replicas {
			f, err := os.Open(filepath.Join(x.c.NodeDir(x.nodeOf(g, r.Disk)+1, 1), "raidp.data"))
			if err != nil {
				t.Fatal(err)
			}
			b := make([]byte, sp.Length)
			_, err = f.ReadAt(b, int64(r.Slot)*size+sp.Offset)
			f.Close()
			if err != nil || !bytes.Equal(b, p[pos:pos+sp.Length]) {
				t.Fatalf("%s (acknowledged %v): superchunk %d [%d, +%d) on %s slot %d differs from what was PUT (%v)",
					key, acked, sp.Superchunk, sp.Offset, sp.Length, g.Disks[r.Disk].ID, r.Slot, err)
			}
		}
		pos += sp.Length
	}
	if pos != int64(len(p)) {
		t.Fatalf("%s: spans of %d bytes, PUT %d", key, pos, len(p))
	}
}

// get reads key with `cairn get`: byte-exact, or (if mayBeAbsent)
// absent.
func (x *crash) get(key string, want []byte, mayBeAbsent bool) {
	t := x.t
	file := filepath.Join(x.dir, key+".got")
	op := x.cli("get", bucket+"/"+key, file)
	err := x.wait(op)
	out := op.out()
	if err != nil {
		if mayBeAbsent && strings.Contains(strings.ToLower(out), "not found") {
			return
		}
		t.Fatalf("cairn get %s: %v\n%s", key, err, out)
	}
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("cairn get %s: %d bytes (%v), want the %d PUT", key, len(got), err, len(want))
	}
	os.Remove(file)
	x.reads++
}

// --- cluster helpers ---

// reset starts a new epoch: every node stopped, every disk's RAIDP files
// removed, the group's first generation and an empty allocation record
// written back, the nodes started again.
func (x *crash) reset() {
	t := x.t
	for _, n := range x.c.Nodes {
		n.Kill()
	}
	for i := range x.c.Nodes {
		if err := os.Remove(filepath.Join(x.c.NodeDir(i+1, 1), "raidp.data")); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if err := os.RemoveAll(x.c.LstorDir(i+1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	// The first layout comes back as a new generation: a recovery plan
	// stored in the last epoch (raidp/recovery/GROUP) is then finished,
	// not resumed or given up into this one.
	var first, cur raidp.Group
	b, err := x.store.RAIDP(t.Context(), "groups/"+group)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(json.Unmarshal(x.first, &first), json.Unmarshal(b, &cur)); err != nil {
		t.Fatal(err)
	}
	first.Generation = cur.Generation + 1
	if b, err = json.Marshal(first); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string][]byte{"groups/" + group: b, "alloc/" + group: []byte(`{"end":{}}`), "dead/" + group: []byte(`{"ranges":[]}`)} {
		if err := x.store.UpdateRAIDP(t.Context(), name, func([]byte) ([]byte, error) { return v, nil }); err != nil {
			t.Fatal(err)
		}
	}
	x.objects, x.doubt = map[string][]byte{}, map[string][]byte{}
	x.restartAll()
}

func (x *crash) restart(n int) {
	if err := x.c.Nodes[n].Restart(x.t.Context()); err != nil {
		x.t.Fatal(err)
	}
}

func (x *crash) restartAll() {
	var wg sync.WaitGroup
	errs := make([]error, len(x.c.Nodes))
	for i, n := range x.c.Nodes {
		wg.Go(func() { errs[i] = n.Restart(x.t.Context()) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		x.t.Fatal(err)
	}
}

// object writes a new object of n random bytes to a file named by its
// key.
func (x *crash) object(n int) (string, []byte) {
	x.next++
	key := fmt.Sprintf("o%d", x.next)
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(x.rng.Uint32())
	}
	if err := os.WriteFile(filepath.Join(x.dir, key), p, 0o600); err != nil {
		x.t.Fatal(err)
	}
	return key, p
}

// mustPut PUTs an object of n bytes, which must be acknowledged.
func (x *crash) mustPut(n int) {
	key, p := x.object(n)
	began := time.Now()
	op := x.cli("put", "--policy", cairn.RAIDPPolicy, filepath.Join(x.dir, key), bucket+"/"+key)
	if err := x.wait(op); err != nil {
		x.t.Fatalf("cairn put %s: %v\n%s", key, err, op.out())
	}
	x.putTime = (3*x.putTime + time.Since(began)) / 4
	x.objects[key] = p
}

// running is an operation of a real process, to be waited for or killed.
type running struct {
	done <-chan error  // receives its end
	kill func()        // kills the process running it
	out  func() string // what the process printed
	name string
}

// cli starts `cairn ARGS` with the cluster's config.
func (x *crash) cli(args ...string) running {
	words := 1
	if args[0] == "admin" {
		words = 3
	}
	full := append(append(slices.Clone(args[:words]), "--config", x.c.Conf), args[words:]...)
	cmd := exec.Command(testcluster.Binary(x.t), full...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		x.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return running{done: done, kill: func() { cmd.Process.Kill() }, out: func() string { return strings.TrimSpace(out.String()) },
		name: "cairn " + strings.Join(args, " ")}
}

// wait waits for an operation, killing its process after maxWait.
func (x *crash) wait(op running) error {
	select {
	case err := <-op.done:
		return err
	case <-time.After(maxWait): // real time: a bound on a real process
		op.kill()
		<-op.done
		x.t.Fatalf("%s: still running after %v\n%s", op.name, maxWait, op.out())
		return nil
	}
}

// alloc is the allocation record as the client package writes it.
type alloc struct {
	End    map[int]int64 `json:"end"`
	Divert []int         `json:"divert"`
}

func (x *crash) alloc() alloc {
	var a alloc
	b, err := x.store.RAIDP(x.t.Context(), "alloc/"+group)
	if err == nil {
		err = json.Unmarshal(b, &a)
	}
	if err != nil {
		x.t.Fatalf("allocation record: %v", err)
	}
	return a
}

func (x *crash) group() raidp.Group {
	b, err := x.store.RAIDP(x.t.Context(), "groups/"+group)
	if err != nil {
		x.t.Fatal(err)
	}
	g, err := raidp.DecodeGroup(b)
	if err != nil {
		x.t.Fatal(err)
	}
	return g
}

// free is the group's space not handed out yet.
func (x *crash) free() int64 {
	g, a := x.group(), x.alloc()
	var free int64
	for _, s := range g.Layout.Superchunks {
		free += g.Size - a.End[s.ID]
	}
	return free
}

// appendNode is the index of a node holding a replica of the superchunk
// the next PUT appends to (the first one not full).
func (x *crash) appendNode() int {
	g, a := x.group(), x.alloc()
	for _, s := range g.Layout.Superchunks {
		if a.End[s.ID] < g.Size && !slices.Contains(a.Divert, s.ID) {
			return x.nodeOf(g, s.Replicas[x.rng.IntN(2)].Disk)
		}
	}
	x.t.Fatal("the group is full")
	return -1
}

// nodeOf is the index in Cluster.Nodes of the node of group disk d
// ("nodeK/disk1").
func (x *crash) nodeOf(g raidp.Group, d int) int {
	var k int
	if _, err := fmt.Sscanf(g.Disks[d].ID, "node%d/", &k); err != nil || k < 1 || k > len(x.c.Nodes) {
		x.t.Fatalf("group disk %q: not a node of the cluster", g.Disks[d].ID)
	}
	return k - 1
}

// diskOf is the group disk of node index n (-1: none).
func (x *crash) diskOf(g raidp.Group, n int) int {
	return slices.IndexFunc(g.Disks, func(d raidp.GroupDisk) bool { return strings.HasPrefix(d.ID, fmt.Sprintf("node%d/", n+1)) })
}
