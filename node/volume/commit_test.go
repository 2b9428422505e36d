package volume

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"

	"cairn"
	"cairn/internal/vfs"
	"cairn/internal/vfs/errorfs"
)

// groupWriters is how many Puts the group commit tests run at once.
const groupWriters = 6

// putConcurrently runs one PutIdentified per entry of data, all at once,
// and returns their errors by name. Inside a synctest bubble.
func putConcurrently(t *testing.T, v *Volume, data map[string][]byte, acked func(name string)) map[string]error {
	t.Helper()
	type result struct {
		name string
		err  error
	}
	results := make(chan result, len(data))
	for name, d := range data {
		go func() {
			_, err := v.PutIdentified(context.Background(), name, identFor(t, name), bytes.NewReader(d))
			if err == nil && acked != nil {
				acked(name)
			}
			results <- result{name, err}
		}()
	}
	errs := map[string]error{}
	for range data {
		r := <-results
		errs[r.name] = r.err
	}
	return errs
}

// groupData returns groupWriters shards of various sizes, in several
// fan-out directories.
func groupData(rng *rand.Rand) map[string][]byte {
	data := map[string][]byte{}
	for i := range groupWriters {
		name := cairn.ShardName(fmt.Sprintf("%02x%030x", i*37, i), i)
		data[name] = randBytes(rng, []int{0, 100, BlockSize + 3}[i%3])
	}
	return data
}

// holdFirstSync returns an injector step that, at the first sync of the
// file system, waits until every other goroutine of the bubble is blocked:
// all writers have written their files and joined the next batch, so that
// batch holds several writes.
func holdFirstSync() func(op errorfs.Op) {
	var held atomic.Bool
	return func(op errorfs.Op) {
		if op.Kind == errorfs.OpSyncFS && held.CompareAndSwap(false, true) {
			synctest.Wait()
		}
	}
}

// TestCrashAtEveryStepOfGroupCommit runs concurrent Puts that share
// syncs of the file system, takes a crash clone before every file-system
// operation of any of them (so at every point of every batch: before its
// sync, between the writes and renames of its writers) with none, half or
// all of the unsynced state kept, and checks each clone: every shard
// acknowledged before the clone is intact, every other one absent or
// complete (never torn), fsck clean, the volume writable.
func TestCrashAtEveryStepOfGroupCommit(t *testing.T) {
	seed := testSeed(t)
	for _, pct := range []int{0, 50, 100} {
		t.Run(fmt.Sprintf("unsynced=%d%%", pct), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, uint64(pct)))
				mem := vfs.NewCrashableMem()
				efs := errorfs.Wrap(mem, nil)
				v := openMode(t, efs, false)
				t.Cleanup(func() { v.Close() })
				old := shardName(1, 0)
				oldData := randBytes(rng, 300)
				mustPut(t, v, old, oldData)
				data := groupData(rng)

				type clone struct {
					fs    *vfs.MemFS
					acked map[string][]byte
					op    errorfs.Op
				}
				var (
					mu     sync.Mutex
					acked  = map[string][]byte{old: oldData} // guarded by mu
					clones []clone                           // guarded by mu
					syncs  int                               // guarded by mu
				)
				cfg := vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: rng}
				hold := holdFirstSync()
				efs.SetInjector(errorfs.InjectorFunc(func(op errorfs.Op) error {
					hold(op)
					mu.Lock()
					defer mu.Unlock()
					if op.Kind == errorfs.OpSyncFS {
						syncs++
					}
					clones = append(clones, clone{mem.CrashClone(cfg), maps.Clone(acked), op})
					return nil
				}))
				errs := putConcurrently(t, v, data, func(name string) {
					mu.Lock()
					acked[name] = data[name]
					mu.Unlock()
				})
				efs.SetInjector(nil)
				for name, err := range errs {
					if err != nil {
						t.Fatalf("put %s: %v", name, err)
					}
				}
				// Batching happened: fewer syncs than two per Put.
				if syncs >= 2*groupWriters {
					t.Fatalf("%d syncs of the file system for %d Puts: no batching", syncs, groupWriters)
				}
				t.Logf("%d Puts, %d syncs, %d crash points", groupWriters, syncs, len(clones))
				for i, c := range clones {
					unacked := map[string][]byte{}
					for name, d := range data {
						if _, ok := c.acked[name]; !ok {
							unacked[name] = d
						}
					}
					checkAfterCrash(t, fmt.Sprintf("before op %d (%v)", i, c.op), c.fs, c.acked, unacked)
				}
				all := maps.Clone(data)
				all[old] = oldData
				checkAfterCrash(t, "after every ack", mem.CrashClone(cfg), all, nil)
			})
		})
	}
}

// TestGroupCommitSyncFailure fails the sync of a batch holding several
// writes, with EIO and with ENOSPC: every writer of the batch and of the
// batches after it fails, none is acknowledged, the volume refuses writes
// (ErrBroken, whatever the cause: which file lost pages is unknown), no
// shard is torn and no temporary file is left, and what was acknowledged
// before survives a crash.
func TestGroupCommitSyncFailure(t *testing.T) {
	for _, cause := range []error{syscall.EIO, syscall.ENOSPC} {
		t.Run(cause.Error(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(3, 3))
				mem := vfs.NewCrashableMem()
				efs := errorfs.Wrap(mem, nil)
				v := openMode(t, efs, false)
				t.Cleanup(func() { v.Close() })
				old := shardName(1, 0)
				oldData := randBytes(rng, 300)
				mustPut(t, v, old, oldData)
				data := groupData(rng)
				hold := holdFirstSync()
				var syncs atomic.Int64
				efs.SetInjector(errorfs.InjectorFunc(func(op errorfs.Op) error {
					hold(op)
					if op.Kind == errorfs.OpSyncFS && syncs.Add(1) == 2 { // the batch of all but one writer
						return cause
					}
					return nil
				}))
				errs := putConcurrently(t, v, data, nil)
				efs.SetInjector(nil)
				for name, err := range errs {
					if err == nil {
						t.Fatalf("put %s acknowledged although a sync failed", name)
					}
					if !errors.Is(err, cause) {
						t.Errorf("put %s: %v, want the sync's error %v", name, err, cause)
					}
					if errors.Is(cause, syscall.ENOSPC) && !errors.Is(err, cairn.ErrNoSpace) {
						t.Errorf("put %s: %v is not ErrNoSpace", name, err)
					}
					got, gerr := readRange(v, name, 0, -1)
					if !errors.Is(gerr, cairn.ErrNotFound) && (gerr != nil || !bytes.Equal(got, data[name])) {
						t.Fatalf("failed put %s left a torn shard: %v", name, gerr)
					}
				}
				_, err := v.Put(context.Background(), shardName(9, 0), bytes.NewReader([]byte("z")))
				if !errors.Is(err, ErrBroken) || !errors.Is(err, cairn.ErrUnavailable) {
					t.Fatalf("put after a failed sync: %v, want ErrBroken", err)
				}
				mustGet(t, v, old, oldData)
				checkAfterCrash(t, "crash after the failed sync", mem.CrashClone(vfs.CrashCloneCfg{}),
					map[string][]byte{old: oldData}, data)
			})
		})
	}
}

// TestGroupCommitWaitEnds: a writer waiting for its batch's sync returns
// ctx's error when ctx ends, and ErrClosed when the volume is closed; its
// temporary file is removed and nothing is acknowledged.
func TestGroupCommitWaitEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := vfs.NewCrashableMem()
		efs := errorfs.Wrap(mem, nil)
		v := openMode(t, efs, false)
		release := make(chan struct{})
		efs.SetInjector(errorfs.InjectorFunc(func(op errorfs.Op) error {
			if op.Kind == errorfs.OpSyncFS {
				<-release // the first sync hangs until released
			}
			return nil
		}))
		put := func(ctx context.Context, n int) chan error {
			c := make(chan error, 1)
			go func() {
				_, err := v.Put(ctx, shardName(n, 0), bytes.NewReader([]byte("data")))
				c <- err
			}()
			return c
		}
		first := put(context.Background(), 1) // its sync hangs
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		second := put(ctx, 2) // waits for the next batch
		synctest.Wait()
		cancel()
		if err := <-second; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled wait: %v", err)
		}
		third := put(context.Background(), 3)
		synctest.Wait()
		closed := make(chan error, 1)
		go func() { closed <- v.Close() }()
		synctest.Wait()
		if err := <-third; !errors.Is(err, ErrClosed) {
			t.Fatalf("wait ended by Close: %v", err)
		}
		close(release) // the sync in flight returns; Close waited for it
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		if err := <-first; err != nil && !errors.Is(err, ErrClosed) {
			t.Fatalf("writer of the synced batch: %v", err)
		}
		efs.SetInjector(nil)
		for _, n := range []int{2, 3} {
			w, err := Open("/disk", Options{FS: mem, DiskID: testDisk})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Stat(context.Background(), shardName(n, 0)); !errors.Is(err, cairn.ErrNotFound) {
				t.Fatalf("shard of an unacknowledged put %d: %v", n, err)
			}
			w.Close()
		}
	})
}
