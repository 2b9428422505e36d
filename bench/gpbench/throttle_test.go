package gpbench

import (
	"testing"
	"time"

	"cairn/internal/vfs"
)

// TestHelperReadMatchesThrottle runs a Clay helper's requests, as the
// model plans them, against vfs.Throttle — the disk model the real nodes
// run on in the experiments — on a virtual clock, and checks the model's
// time against it: the model's disk is the nodes' disk.
func TestHelperReadMatchesThrottle(t *testing.T) {
	md := testModel(t)
	for _, size := range []int64{4 << 20, 64 << 20} {
		for _, lost := range []int{0, 4, 8, 13} {
			now := time.Unix(0, 0)
			fsys := vfs.Throttle(vfs.NewMem(), vfs.ThrottleConfig{
				Bandwidth: int64(md.M.DiskRate), Seek: md.M.Seek,
				Now: func() time.Time { return now }, Sleep: func(d time.Duration) { now = now.Add(d) },
			})
			if err := fsys.MkdirAll("gp", 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := fsys.Create("gp/L04.data")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(make([]byte, size)); err != nil {
				t.Fatal(err)
			}
			// Another file's request moves the head away, as on a disk
			// shared with other work.
			g, err := fsys.Create("other")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := g.Write(make([]byte, 1)); err != nil {
				t.Fatal(err)
			}
			start := now
			reqs, _ := md.helperRequests(lost, size)
			for _, r := range reqs {
				if _, err := f.ReadAt(make([]byte, r.Length), int64(r.Offset)); err != nil {
					t.Fatal(err)
				}
			}
			got := now.Sub(start).Seconds()
			want, _ := md.helperRead(lost, size)
			if got < want*0.999 || got > want*1.001 {
				t.Errorf("%d MiB chunk, shard %d lost, %d requests: throttle %.6f s, model %.6f s", size>>20, lost, len(reqs), got, want)
			}
		}
	}
}
