package cold

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"cairn"
	"cairn/layout/gp"
)

// ErrInconsistent: a group's stored allocation disagrees with its
// membership records or with the cold manifests that name it (Check).
var ErrInconsistent = errors.New("cold: group state inconsistent")

// slotKey names one slot of a group: data disk, level, slot.
type slotKey struct {
	disk, level int
	slot        uint32
}

// Check verifies the stored state of group id against its membership
// records and against objects, the cold manifests the caller found (any
// version; those of other groups are skipped), the invariants the export
// job keeps through crashes (docs/design/cold.md, "The export and its
// crash safety"):
//
//   - no slot and no byte of a small bucket is held by two membership
//     records, and every slot a record holds is claimed in the group's
//     free-slot bitmaps;
//   - every claimed slot is held by a record (none leaked), and each data
//     disk's Used is the sum of its records' sizes;
//   - every cold manifest of the group has its membership record, with the
//     same disk, size, front and slots: a manifest's slots are never free,
//     so no export can hand them to a second object.
//
// The caller lists objects before calling, with no other writer than the
// export job running: a manifest committed meanwhile is simply not
// checked. Check reads the group's header again at the end and returns an
// error wrapping cairn.ErrConflict if the group changed while it read
// (the caller checks again); a violation wraps ErrInconsistent and names
// it. Check only reads.
func Check(ctx context.Context, m StateReader, id string, objects []*cairn.Manifest) error {
	raw, err := m.ColdGet(ctx, groupKey(id))
	if err != nil {
		return fmt.Errorf("cold group %s: %w", id, err)
	}
	st, err := LoadState(ctx, m, id, nil)
	if err != nil {
		return err
	}
	pg := st.PG
	members := map[string]intentObject{}
	for after := ""; ; {
		page, more, err := m.ColdPage(ctx, memberPrefix(id), after, 256)
		if err != nil {
			return err
		}
		for _, r := range page {
			after = r.Key
			var o intentObject
			if err := json.Unmarshal(r.Value, &o); err != nil {
				return fmt.Errorf("%w: membership record %q: %v", cairn.ErrCorrupt, r.Key, err)
			}
			if r.Key != memberKey(id, o.Version) {
				return fmt.Errorf("%w: membership record %q is of version %q", ErrInconsistent, r.Key, o.Version)
			}
			members[o.Version] = o
		}
		if !more || len(page) == 0 {
			break
		}
	}
	var errs []error
	bad := func(format string, args ...any) {
		if len(errs) < 10 {
			errs = append(errs, fmt.Errorf("%w: group %s: "+format, append([]any{ErrInconsistent, id}, args...)...))
		}
	}
	owner := map[slotKey]string{}
	used := make([]int64, pg.K)
	type span struct {
		off, end int64
		version  string
	}
	fronts := make([][]span, pg.K)
	for _, v := range slices.Sorted(maps.Keys(members)) {
		o := members[v]
		if o.Disk < 0 || o.Disk >= pg.K {
			bad("%s/%s version %s on data disk %d", o.Bucket, o.Key, v, o.Disk)
			continue
		}
		p := pg.Geo.Partition(o.Size)
		if len(o.Slots) != p.NumChunks() {
			bad("%s/%s version %s: %d slots for %d chunks", o.Bucket, o.Key, v, len(o.Slots), p.NumChunks())
			continue
		}
		used[o.Disk] += o.Size
		n := 0
		for level, c := range p.Counts {
			for range c {
				k := slotKey{o.Disk, level, o.Slots[n]}
				n++
				if prev, ok := owner[k]; ok {
					bad("slot %d of level %d on data disk %d held by versions %s and %s", k.slot, level, k.disk, prev, v)
				}
				owner[k] = v
				if !claimed(pg, k) {
					bad("slot %d of level %d on data disk %d, held by %s/%s version %s, is free", k.slot, level, k.disk, o.Bucket, o.Key, v)
				}
			}
		}
		if p.Front > 0 {
			if o.Front < 0 || o.Front+p.Front > pg.Disks[o.Disk].SmallEnd {
				bad("front [%d, %d) of %s/%s version %s past the small bucket's end %d", o.Front, o.Front+p.Front, o.Bucket, o.Key, v, pg.Disks[o.Disk].SmallEnd)
			}
			fronts[o.Disk] = append(fronts[o.Disk], span{o.Front, o.Front + p.Front, v})
		}
	}
	for d := range pg.K {
		slices.SortFunc(fronts[d], func(a, b span) int { return int(a.off - b.off) })
		for i := 1; i < len(fronts[d]); i++ {
			if a, b := fronts[d][i-1], fronts[d][i]; b.off < a.end {
				bad("fronts of versions %s [%d, %d) and %s [%d, %d) overlap on data disk %d", a.version, a.off, a.end, b.version, b.off, b.end, d)
			}
		}
		if used[d] != pg.Disks[d].Used {
			bad("data disk %d: used %d bytes, its records hold %d", d, pg.Disks[d].Used, used[d])
		}
		for level, b := range pg.Disks[d].Buckets {
			for s := range b.Next {
				k := slotKey{d, level, s}
				if _, ok := owner[k]; !ok && claimed(pg, k) {
					bad("slot %d of level %d on data disk %d is claimed by no record (leaked)", s, level, d)
				}
			}
		}
	}
	for _, man := range objects {
		if man.Cold == nil || man.Cold.Group != id {
			continue
		}
		r, err := gp.DecodeRecord(man.Cold.Record, pg.Geo)
		if err != nil {
			bad("%s/%s version %s: %v", man.Bucket, man.Key, man.Version, err)
			continue
		}
		o, ok := members[man.Version]
		switch {
		case !ok:
			bad("cold %s/%s version %s has no membership record: its slots may be handed out again", man.Bucket, man.Key, man.Version)
		case o.Disk != r.Disk || o.Size != r.Size || o.Front != r.Front || !slices.Equal(o.Slots, r.Slots):
			bad("cold %s/%s version %s names disk %d slots %v front %d, its membership record disk %d slots %v front %d",
				man.Bucket, man.Key, man.Version, r.Disk, r.Slots, r.Front, o.Disk, o.Slots, o.Front)
		}
	}
	again, err := m.ColdGet(ctx, groupKey(id))
	if err != nil {
		return fmt.Errorf("cold group %s: %w", id, err)
	}
	if !bytes.Equal(raw, again) {
		return fmt.Errorf("%w: cold group %s changed during the check", cairn.ErrConflict, id)
	}
	return errors.Join(errs...)
}

// claimed reports whether slot k is handed out: below its bucket's Next
// and not in its free list.
func claimed(pg *gp.PG, k slotKey) bool {
	b := pg.Disks[k.disk].Buckets[k.level]
	_, free := slices.BinarySearch(b.Free, k.slot)
	return k.slot < b.Next && !free
}
