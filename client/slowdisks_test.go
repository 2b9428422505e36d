package client

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"cairn/client/slowdisk"
)

// A disk that is slow for every PUT, not only within one, is recognised
// from the PUTs' shard streams and avoided by the stripes of later PUTs
// while other disks are free: after MinSamples PUTs that used it, no PUT
// puts a shard on it until its hold ends; then it is tried again (one PUT)
// and avoided for twice as long. Every object reads back. With
// KeepSlowDisks the same workload keeps using it: the control that shows
// the test can fail.
//
// It runs in a synctest bubble: the slow disk's delay is virtual time, and
// everything else takes none, so the verdicts are exact.
func TestPutAvoidsSlowDisk(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr, err := slowdisk.New(slowdisk.Config{})
				if err != nil {
					t.Fatal(err)
				}
				e := newEnv(t, 8, 1, "rs-4-2", Config{BlockSize: 64 << 10, SlowDisks: tr, KeepSlowDisks: keep})
				if keep {
					e.c.cfg.SlowDisks = nil
				}
				ctx := context.Background()
				disks, _ := e.meta.Disks(ctx)
				slow := disks[3].ID
				e.shards.Set(func() { e.shards.SlowPut[slow] = 20 * time.Millisecond }) // 256 KiB shards: 80 ms
				data := randBytes(77, 1<<20)
				put := func(i int) bool {
					m, err := e.c.Put(ctx, "bkt", fmt.Sprintf("k%d", i), bytes.NewReader(data), PutOptions{Size: int64(len(data))})
					if err != nil {
						t.Fatalf("put %d: %v", i, err)
					}
					if got := e.get(t, m.Key, 0, -1); !bytes.Equal(got, data) {
						t.Fatalf("put %d: read back differs", i)
					}
					return slotOf(m, slow) >= 0
				}
				used := 0
				for i := range 40 {
					if put(i) {
						used++
					}
				}
				if keep {
					if used < 20 {
						t.Fatalf("without avoidance the slow disk took shards of %d of 40 PUTs, want about 30", used)
					}
					return
				}
				if used != 3 {
					t.Fatalf("the slow disk took shards of %d PUTs, want 3 (MinSamples)", used)
				}
				if !tr.Avoid(time.Now(), slow) {
					t.Fatal("the slow disk is not avoided")
				}
				// The hold (5 s) ends: the next PUTs try it once more, it is
				// still slow, and it is avoided again, for 10 s.
				time.Sleep(5 * time.Second)
				used = 0
				for i := 40; i < 80; i++ {
					if put(i) {
						used++
					}
				}
				if used != 1 {
					t.Fatalf("after the hold the slow disk took shards of %d PUTs, want 1", used)
				}
				st := tr.Snapshot(time.Now())
				for _, s := range st {
					if s.Disk == slow && (s.State != slowdisk.Slow || s.Until.Sub(s.Since) != 10*time.Second) {
						t.Fatalf("slow disk after probation: %+v, want slow for 10 s", s)
					}
					if s.Disk != slow && s.State != slowdisk.OK {
						t.Fatalf("a healthy disk was judged: %+v", s)
					}
				}
				// It heals: after its hold, PUTs use it and it is ok again.
				e.shards.Set(func() { delete(e.shards.SlowPut, slow) })
				time.Sleep(10 * time.Second)
				used = 0
				for i := 80; i < 120; i++ {
					if put(i) {
						used++
					}
				}
				if used < 20 || tr.Avoid(time.Now(), slow) {
					t.Fatalf("the healed disk took shards of %d of 40 PUTs (avoided: %v), want about 30", used, tr.Avoid(time.Now(), slow))
				}
			})
		})
	}
}
