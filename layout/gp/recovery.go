package gp

import "slices"

// Task is one piece of a lost disk's recovery: a slot of a level's bucket
// (a chunk on a data disk, a parity slot on a parity disk) or a range of
// the small-size bucket, rebuilt into the replacement's same place.
type Task struct {
	Disk  int    // the lost disk of the group (0 … K+M−1)
	Level int    // the chunk level, or −1 for a small-size bucket range
	Slot  uint32 // the slot (Level ≥ 0)
	// Where is the rebuilt range on the lost disk.
	Where Location
	// Live: the bytes belong to a stored object (or are parity of a row
	// that holds one). A free slot is rebuilt too, after the live ones: its
	// old bytes are still in its row's parity, which a later reuse updates
	// by difference (docs/design/cold.md, "Free slots").
	Live   bool
	Weight int // Weight(Where.Length)
}

// RecoveryTasks lists the tasks that rebuild disk lost of the group: live
// ones first, then free slots; within each, by level and slot, and the
// small-size bucket in WeightUnit ranges. The repairers take them in this
// order under their weight budget (Admit).
func (pg *PG) RecoveryTasks(lost int) []Task {
	var live, free []Task
	add := func(t Task) {
		t.Disk, t.Weight = lost, Weight(t.Where.Length)
		if t.Live {
			live = append(live, t)
		} else {
			free = append(free, t)
		}
	}
	for level := range pg.Geo.Levels() {
		rows := uint32(0)
		for _, d := range pg.Disks {
			rows = max(rows, d.Buckets[level].Next)
		}
		for slot := range rows {
			where := pg.Stripe(level, slot)[lost]
			if lost < pg.K {
				b := &pg.Disks[lost].Buckets[level]
				if slot >= b.Next {
					break
				}
				_, isFree := slices.BinarySearch(b.Free, slot)
				add(Task{Level: level, Slot: slot, Where: where, Live: !isFree})
				continue
			}
			rowLive := false
			for i := range pg.Disks {
				b := &pg.Disks[i].Buckets[level]
				if _, isFree := slices.BinarySearch(b.Free, slot); slot < b.Next && !isFree {
					rowLive = true
				}
			}
			add(Task{Level: level, Slot: slot, Where: where, Live: rowLive})
		}
	}
	end := int64(0)
	if lost < pg.K {
		end = pg.Disks[lost].SmallEnd
	} else {
		for _, d := range pg.Disks {
			end = max(end, d.SmallEnd)
		}
	}
	for off := int64(0); off < end; off += WeightUnit {
		add(Task{Level: -1, Where: pg.SmallStripe(off, min(WeightUnit, end-off))[lost], Live: true})
	}
	return append(live, free...)
}
