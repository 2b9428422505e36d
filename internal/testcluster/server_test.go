package testcluster_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn"
	"cairn/internal/testcluster"
)

// The README's promise: cairn server, a 200 MiB put, two disk directories
// removed, the get returns identical bytes, and puts go on.
func TestServerSurvivesTwoRemovedDisks(t *testing.T) {
	size := int64(200 << 20)
	if testing.Short() {
		size = 20 << 20
	}
	s := testcluster.StartServer(t, "")
	s.CLI(t, "mb", "photos")
	path, _ := writeFile(t, t.TempDir(), "big", size, 1)
	s.CLI(t, "put", path, "photos/big")
	for _, d := range []string{"disk2", "disk5"} {
		if err := os.RemoveAll(filepath.Join(s.Data, d)); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	s.CLI(t, "get", "photos/big", out)
	if !sameFile(t, path, out) {
		t.Fatal("get after removing two disks returned different bytes")
	}
	// Writes go on once the node has reported the lost disks (its next
	// registration: a fault, or the directory formatted again as a new
	// volume the director does not trust): the default policy's stripes
	// take 6 of the 8 disks, and a shard for a lost disk goes to one the
	// stripe does not use. Before that report a PUT may pick a lost disk
	// as a spare too and fail with ErrUnavailable (S3 clients retry).
	waitFor(t, time.Minute, "the node to report disks 2 and 5", func() bool {
		ds := diskStates(t, s.Conf)
		for _, id := range []cairn.DiskID{"node1/disk2", "node1/disk5"} {
			if d, ok := ds[id]; !ok || d.Writable() {
				return false
			}
		}
		return true
	})
	s.CLI(t, "put", path, "photos/after")
	s.CLI(t, "get", "photos/after", out)
	if !sameFile(t, path, out) {
		t.Fatal("an object put after removing two disks reads back different bytes")
	}
	status := s.CLI(t, "admin", "status")
	if !strings.Contains(status, "cannot survive a node loss") {
		t.Fatalf("admin status on one node does not warn about node loss:\n%s", status)
	}
}

// SIGKILL the whole server at random moments during a loop of PUTs, again
// and again; after each restart every acknowledged object reads back
// byte-exact and every visible object is complete.
func TestCrashDuringPuts(t *testing.T) {
	rounds := 4
	if testing.Short() {
		rounds = 2
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	seed := rng.Uint64()
	t.Logf("crash test seed %d", seed)
	rng = rand.New(rand.NewPCG(seed, 2))
	s := testcluster.StartServer(t, "")
	s.CLI(t, "mb", "crash")
	src := t.TempDir()
	var mu sync.Mutex
	acked := map[string]string{}     // key → source file
	attempted := map[string]string{} // key → source file
	n := 0
	for round := range rounds {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Go(func() {
				for ctx.Err() == nil {
					mu.Lock()
					n++
					id := n
					key := fmt.Sprintf("r%d-w%d-%d", round, w, id)
					size := int64(rng.IntN(3 << 20))
					mu.Unlock()
					path, _, err := makeFile(src, key, size, uint64(id))
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					attempted[key] = path
					mu.Unlock()
					if _, err := testcluster.RunCLI(ctx, s.Conf, "put", path, "crash/"+key); err == nil {
						mu.Lock()
						acked[key] = path
						mu.Unlock()
					}
				}
			})
		}
		mu.Lock() // the writers draw from rng too
		pause := time.Duration(300+rng.IntN(1500)) * time.Millisecond
		mu.Unlock()
		// real time: the kill lands at a random moment of real writers' work.
		time.Sleep(pause)
		s.Kill() // SIGKILL: no clean shutdown
		cancel()
		wg.Wait()
		s.Restart(t)
		verify(t, s, acked, attempted)
	}
	if len(acked) == 0 {
		t.Fatal("no put was acknowledged: the test proved nothing")
	}
	t.Logf("%d puts acknowledged over %d crashes", len(acked), rounds)
}

func verify(t *testing.T, s *testcluster.Server, acked, attempted map[string]string) {
	t.Helper()
	dst := t.TempDir()
	listing := s.CLI(t, "ls", "crash")
	visible := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(listing), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			visible[f[len(f)-1]] = true
		}
	}
	for key, path := range acked {
		if !visible[key] {
			t.Fatalf("acknowledged object %s is not listed after the crash", key)
		}
		out := filepath.Join(dst, key)
		s.CLI(t, "get", "crash/"+key, out)
		if !sameFile(t, out, path) {
			t.Fatalf("acknowledged object %s reads back wrong after the crash", key)
		}
	}
	// Anything visible must be complete (a put may commit and die before it
	// acknowledges, so visible ⊇ acked, never a partial object).
	for key := range visible {
		path, ok := attempted[key]
		if !ok {
			t.Fatalf("object %s is visible but was never written", key)
		}
		if _, done := acked[key]; done {
			continue
		}
		out := filepath.Join(dst, key)
		s.CLI(t, "get", "crash/"+key, out)
		if !sameFile(t, out, path) {
			t.Fatalf("unacknowledged object %s is visible with wrong content", key)
		}
	}
}

// A disk that fills up (a real ENOSPC, from a tiny tmpfs) makes the put
// fail with a precise error; nothing partial is visible and older objects
// still read.
func TestFullDisk(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "disk3")
	if err := os.MkdirAll(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", small).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", small).Run() })
	// Six disks: every rs-4-2 stripe uses disk3 and none has a disk outside
	// it for a spare parity row to go around the full one (with cairn
	// server's default of eight, the put succeeds).
	s := testcluster.StartServer(t, dir, "--disks", "6")
	s.CLI(t, "mb", "full")
	before, _ := writeFile(t, dir, "before", 1<<20, 1)
	s.CLI(t, "put", before, "full/before")
	big, _ := writeFile(t, dir, "big", 40<<20, 2)
	out, err := s.TryCLI(context.Background(), "put", big, "full/big")
	if err == nil {
		t.Fatalf("a put larger than a full disk succeeded:\n%s", out)
	}
	if !strings.Contains(out, "no space") {
		t.Fatalf("the error does not say the disk is full:\n%s", out)
	}
	t.Logf("put onto a full disk: %s", out)
	if ls := s.CLI(t, "ls", "full"); strings.Contains(ls, "big") {
		t.Fatalf("the failed object is visible:\n%s", ls)
	}
	got := filepath.Join(dir, "got")
	s.CLI(t, "get", "full/before", got)
	if !sameFile(t, got, before) {
		t.Fatal("an older object was damaged by the full disk")
	}
}
