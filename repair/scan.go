package repair

// Scan: finding the stripes that have lost shards and queueing a task for
// each (decide.NewTask says whether a stripe needs one and how risky it
// is). The queue lives in the metadata store; work.go runs it.

import (
	"context"
	"time"

	"cairn/repair/decide"
)

// rescanEvery bounds how long Scan trusts its last walk: a repair that
// was already running when a disk went down can land (and delete its
// task) after that walk skipped the stripe, leaving a shard on the newly
// lost disk with no task.
const rescanEvery = 30 * time.Second

// Scan walks every manifest and queues a task for every stripe with a
// shard on a down or failed disk that is not queued yet. It returns how
// many tasks it added. Writes never go to such disks, so once a scan has
// completed, the next ones skip the walk until the set of lost disks
// changes, or rescanEvery has passed.
func (r *Repairer) Scan(ctx context.Context, now time.Time) (int, error) {
	disks, err := r.store.Disks(ctx)
	if err != nil {
		return 0, err
	}
	view := decide.NewView(nil, disks) // states only: NewTask needs no addresses
	var lostSet string
	for _, d := range disks {
		if decide.LostDisk(d.State) {
			lostSet += string(d.ID) + "\x00"
		}
	}
	if lostSet == "" || lostSet == r.scanned && now.Sub(r.scannedAt) < rescanEvery {
		return 0, nil
	}
	queued, err := r.store.RepairTasks(ctx)
	if err != nil {
		return 0, err
	}
	have := make(map[string]bool, len(queued))
	for _, t := range queued {
		have[t.ID] = true
	}
	buckets, err := r.store.Buckets(ctx)
	if err != nil {
		return 0, err
	}
	added := 0
	for _, b := range buckets {
		after := ""
		for {
			ms, more, err := r.store.ListManifests(ctx, b.Name, "", after, 1000)
			if err != nil {
				return added, err
			}
			for _, m := range ms {
				after = m.Key
				for _, st := range decide.Stripes(m) {
					code, _ := r.code(m.LayoutCode()) // an unknown policy: risk 0, and the task's run says why
					t, ok := decide.NewTask(m, st, code, view, now)
					if !ok || have[t.ID] {
						continue
					}
					if err := r.store.PutRepairTask(ctx, t); err != nil {
						return added, err
					}
					have[t.ID] = true
					added++
				}
			}
			if !more {
				break
			}
		}
	}
	r.scanned, r.scannedAt = lostSet, now
	return added, nil
}
