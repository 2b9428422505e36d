package volume

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn"
	"cairn/internal/vfs"
	"cairn/internal/vfs/errorfs"
)

var seedFlag = flag.Uint64("seed", 0, "seed for randomized crash tests (0: from the clock)")

func testSeed(t *testing.T) uint64 {
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", s, s)
	return s
}

// checkAfterCrash opens the crashed disk and checks the durability
// contract: acked shards are intact; unacked ones are absent or complete.
func checkAfterCrash(t *testing.T, step string, c *vfs.MemFS, acked, unacked map[string][]byte) {
	t.Helper()
	v, err := Open("/disk", Options{FS: c, DiskID: testDisk})
	if err != nil {
		t.Fatalf("%s: reopen after crash: %v", step, err)
	}
	defer v.Close()
	ctx := context.Background()
	for name, data := range acked {
		got, err := readRange(v, name, 0, -1)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: acknowledged shard %s lost or damaged: %v", step, name, err)
		}
		if id, _, ok, err := v.Identity(ctx, name); err != nil || !ok || id.Name() != name {
			t.Fatalf("%s: acknowledged shard %s: identity %+v, %v, %v", step, name, id, ok, err)
		}
	}
	for name, data := range unacked {
		got, err := readRange(v, name, 0, -1)
		switch {
		case errors.Is(err, cairn.ErrNotFound):
		case err != nil:
			t.Fatalf("%s: unacknowledged shard %s is visible but unreadable (torn): %v", step, name, err)
		case !bytes.Equal(got, data):
			t.Fatalf("%s: unacknowledged shard %s is visible with wrong content", step, name)
		}
	}
	rep, err := v.Fsck(ctx, FsckOptions{})
	if err != nil || !rep.OK() || len(rep.TmpKept) > 0 {
		t.Fatalf("%s: fsck after crash: %v\n%s tmp=%v", step, err, rep.Problems(), rep.TmpKept)
	}
	// The crashed volume is writable again.
	if _, err := v.Put(ctx, shardName(999, 0), bytes.NewReader([]byte("after"))); err != nil {
		t.Fatalf("%s: put after crash: %v", step, err)
	}
}

// TestCrashAtEveryStepOfPut takes a crash clone before every file-system
// operation of a Put (so: after each write, sync, rename) and after it
// returns, with only synced state kept and with random parts of the
// unsynced state kept too.
func TestCrashAtEveryStepOfPut(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	for _, size := range []int{0, 100, 2*BlockSize + 5} {
		for _, pct := range []int{0, 50, 100} {
			t.Run(fmt.Sprintf("size=%d/unsynced=%d%%", size, pct), func(t *testing.T) {
				mem := vfs.NewCrashableMem()
				efs := errorfs.Wrap(mem, nil)
				v := openTest(t, efs, "/disk")
				a, b := shardName(1, 0), otherFanout
				dataA, dataB := randBytes(rng, size+7), randBytes(rng, size)
				mustPut(t, v, a, dataA)
				cfg := vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: rng}
				var clones []*vfs.MemFS
				var ops []errorfs.Op
				efs.SetInjector(errorfs.InjectorFunc(func(op errorfs.Op) error {
					clones = append(clones, mem.CrashClone(cfg))
					ops = append(ops, op)
					return nil
				}))
				mustPut(t, v, b, dataB)
				// Overwrite a with new content: the old or new version, never a mix.
				efs.SetInjector(nil)
				acked := map[string][]byte{a: dataA}
				for i, c := range clones {
					checkAfterCrash(t, fmt.Sprintf("before op %d (%v)", i, ops[i]), c, acked, map[string][]byte{b: dataB})
				}
				acked[b] = dataB
				checkAfterCrash(t, "after ack", mem.CrashClone(cfg), acked, nil)
				if len(clones) < 6 {
					t.Fatalf("only %d steps observed", len(clones))
				}
			})
		}
	}
}

// TestCrashAtEveryStepOfOverwriteAndDelete: replacing a shard leaves the
// old or the new content; deleting leaves it whole or gone.
func TestCrashAtEveryStepOfOverwriteAndDelete(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 1))
	mem := vfs.NewCrashableMem()
	efs := errorfs.Wrap(mem, nil)
	v := openTest(t, efs, "/disk")
	name := shardName(3, 2)
	old, new := randBytes(rng, BlockSize+1), randBytes(rng, 2*BlockSize)
	mustPut(t, v, name, old)
	var clones []*vfs.MemFS
	efs.SetInjector(errorfs.InjectorFunc(func(errorfs.Op) error {
		clones = append(clones, mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 30, RNG: rng}))
		return nil
	}))
	mustPut(t, v, name, new)
	efs.SetInjector(nil)
	for i, c := range clones {
		w, err := Open("/disk", Options{FS: c, DiskID: testDisk})
		if err != nil {
			t.Fatal(err)
		}
		got, err := readRange(w, name, 0, -1)
		if err != nil || !(bytes.Equal(got, old) || bytes.Equal(got, new)) {
			t.Fatalf("overwrite, crash at step %d: %v", i, err)
		}
	}
	clones = nil
	efs.SetInjector(errorfs.InjectorFunc(func(errorfs.Op) error {
		clones = append(clones, mem.CrashClone(vfs.CrashCloneCfg{}))
		return nil
	}))
	if err := v.Delete(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	efs.SetInjector(nil)
	clones = append(clones, mem.CrashClone(vfs.CrashCloneCfg{}))
	for i, c := range clones {
		checkAfterCrash(t, fmt.Sprintf("delete step %d", i), c, nil, map[string][]byte{name: new})
	}
	w, err := Open("/disk", Options{FS: clones[len(clones)-1], DiskID: testDisk})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Stat(context.Background(), name); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("acknowledged delete undone by a crash: %v", err)
	}
}

// TestCrashAtEveryStepOfFormat: a crash while formatting leaves a
// directory that Open(Create) formats or opens.
func TestCrashAtEveryStepOfFormat(t *testing.T) {
	mem := vfs.NewCrashableMem()
	var clones []*vfs.MemFS
	efs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(errorfs.Op) error {
		clones = append(clones, mem.CrashClone(vfs.CrashCloneCfg{}))
		return nil
	}))
	v := openTest(t, efs, "/disk")
	efs.SetInjector(nil)
	mustPut(t, v, shardName(1, 1), []byte("x"))
	clones = append(clones, mem.CrashClone(vfs.CrashCloneCfg{}))
	for i, c := range clones {
		w, err := Open("/disk", Options{FS: c, DiskID: testDisk, Create: true})
		if err != nil {
			t.Fatalf("format step %d: reopen: %v", i, err)
		}
		registerFsck(t, w, c)
		mustPut(t, w, shardName(2, 2), []byte("y"))
	}
}

// writeOps are the operation kinds a Put performs that can fail.
var writeOps = []errorfs.OpKind{errorfs.OpMkdirAll, errorfs.OpOpenDir, errorfs.OpCreate, errorfs.OpFileWrite,
	errorfs.OpFileSync, errorfs.OpFileReadAt, errorfs.OpFileClose, errorfs.OpRename, errorfs.OpDirSync}

// TestPutErrorInjection fails each operation of a Put in turn, with EIO
// and ENOSPC, and checks: the Put fails with a precise error; no torn
// shard is visible; no temporary file is left; an earlier shard is intact,
// also after a crash; a failed fsync breaks the volume for writes.
func TestPutErrorInjection(t *testing.T) {
	for _, kind := range writeOps {
		for _, cause := range []error{syscall.EIO, syscall.ENOSPC} {
			for n := 0; ; n++ {
				exhausted := false
				ok := t.Run(fmt.Sprintf("%v/%v/%d", kind, cause, n), func(t *testing.T) {
					mem := vfs.NewCrashableMem()
					efs := errorfs.Wrap(mem, nil)
					v := openTest(t, efs, "/disk")
					a, b := shardName(1, 0), otherFanout
					dataA := randBytes(rand.New(rand.NewPCG(1, 1)), BlockSize+3)
					dataB := randBytes(rand.New(rand.NewPCG(2, 2)), 3*BlockSize+3)
					mustPut(t, v, a, dataA)
					inj := errorfs.NewFailNth(errorfs.OnKinds(kind), n, cause)
					efs.SetInjector(inj)
					_, err := v.PutIdentified(context.Background(), b, identFor(t, b), bytes.NewReader(dataB))
					efs.SetInjector(nil)
					op, fired := inj.Fired()
					if !fired {
						if err != nil {
							t.Fatalf("put failed without an injected error: %v", err)
						}
						exhausted = true // past the last op of this kind
						return
					}
					if err == nil {
						t.Fatalf("put succeeded despite a failed %v", op)
					}
					if errors.Is(cause, syscall.ENOSPC) != errors.Is(err, cairn.ErrNoSpace) {
						t.Fatalf("error %v: ErrNoSpace=%v for cause %v", err, errors.Is(err, cairn.ErrNoSpace), cause)
					}
					// b is absent, or (failure after the rename) complete.
					got, gerr := readRange(v, b, 0, -1)
					if !errors.Is(gerr, cairn.ErrNotFound) && (gerr != nil || !bytes.Equal(got, dataB)) {
						t.Fatalf("after failed %v: shard b is torn: %v", op, gerr)
					}
					mustGet(t, v, a, dataA)
					checkAfterCrash(t, "crash after failed put", mem.CrashClone(vfs.CrashCloneCfg{}),
						map[string][]byte{a: dataA}, map[string][]byte{b: dataB})
					// A failed fsync (not ENOSPC) is sticky until reopen.
					syncFailed := (kind == errorfs.OpFileSync || kind == errorfs.OpDirSync) && cause == syscall.EIO
					_, perr := v.Put(context.Background(), shardName(3, 0), bytes.NewReader([]byte("z")))
					if syncFailed != errors.Is(perr, ErrBroken) {
						t.Fatalf("after failed %v (%v): next put: %v", op, cause, perr)
					}
					if syncFailed {
						if !errors.Is(perr, cairn.ErrUnavailable) {
							t.Fatalf("broken volume error lacks ErrUnavailable: %v", perr)
						}
						mustGet(t, v, a, dataA) // reads still work
					} else if perr != nil {
						t.Fatalf("put after a non-sync failure: %v", perr)
					}
				})
				if !ok || exhausted {
					break
				}
				if n > 20 {
					t.Fatalf("%v: more than 20 ops?", kind)
				}
			}
		}
	}
}

// TestFailedTmpRemovalIsCleanedLater: when even removing the temporary
// file fails, fsck (by age) and Open remove it.
func TestFailedTmpRemovalIsCleanedLater(t *testing.T) {
	mem := vfs.NewCrashableMem()
	now := time.Unix(5000, 0)
	mem.SetClock(func() time.Time { return now })
	efs := errorfs.Wrap(mem, nil)
	v := openTest(t, efs, "/disk")
	efs.SetInjector(errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpRemove {
			return syscall.EIO
		}
		return nil
	}))
	if _, err := v.Put(context.Background(), shardName(1, 0), bytes.NewReader([]byte("x"))); !errors.Is(err, syscall.EIO) {
		t.Fatalf("put: %v", err)
	}
	efs.SetInjector(nil)
	rep, err := v.Fsck(context.Background(), FsckOptions{TmpCutoff: now})
	if err != nil || len(rep.TmpKept) != 1 || len(rep.TmpRemoved) != 0 {
		t.Fatalf("young tmp: %+v %v", rep, err)
	}
	if removed, err := v.SweepTmp(now); err != nil || len(removed) != 0 {
		t.Fatalf("sweep of a young tmp: %v %v", removed, err)
	}
	now = now.Add(2 * time.Hour)
	if removed, err := v.SweepTmp(now.Add(-time.Hour)); err != nil || len(removed) != 1 {
		t.Fatalf("sweep of an old tmp: %v %v", removed, err)
	}
}

// otherFanout is a shard name in another fan-out directory than
// shardName's small numbers, so its Put creates that directory.
var otherFanout = cairn.ShardName("ff"+strings.Repeat("0", 29)+"1", 1)
