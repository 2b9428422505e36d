package meta

import "cairn"

// Delta is the change one write makes to the usage counters
// (cairn.Usage): store implementations build it from what the write
// adds and what it replaces, and apply it in the same transaction.
// Entries that end at zero are dropped (Prune).
type Delta struct {
	Buckets map[string]cairn.Tally
	Codes   map[string]cairn.Tally
	Disks   map[cairn.DiskID]cairn.DiskTally
}

// NewDelta returns an empty delta.
func NewDelta() *Delta {
	return &Delta{Buckets: map[string]cairn.Tally{}, Codes: map[string]cairn.Tally{},
		Disks: map[cairn.DiskID]cairn.DiskTally{}}
}

// Object counts the committed object m in (sign +1) or out (sign −1):
// one object of its size and stored bytes in its bucket and its code
// (cairn.UsageCode of its LayoutCode), and its shard files on their
// disks. A nil m counts nothing.
func (d *Delta) Object(m *cairn.Manifest, sign int64) {
	if m == nil {
		return
	}
	t := scaleTally(m.Tally(), sign)
	d.Buckets[m.Bucket] = d.Buckets[m.Bucket].Add(t)
	code := cairn.UsageCode(m.LayoutCode())
	d.Codes[code] = d.Codes[code].Add(t)
	d.files(m.Stored(), sign)
}

// Parts counts the shard files of parts of an upload in progress in
// (sign +1) or out (−1): on their disks only, since they are no object
// yet (CompleteUpload counts the object, and the parts it leaves out go).
func (d *Delta) Parts(parts []cairn.Part, sign int64) {
	for i := range parts {
		d.files(parts[i].Stored(), sign)
	}
}

func (d *Delta) files(byDisk map[cairn.DiskID]cairn.DiskTally, sign int64) {
	for disk, t := range byDisk {
		d.Disks[disk] = d.Disks[disk].Add(cairn.DiskTally{Files: sign * t.Files, Bytes: sign * t.Bytes})
	}
}

// Prune drops the entries that are zero and reports whether none is
// left.
func (d *Delta) Prune() (empty bool) {
	for k, t := range d.Buckets {
		if t == (cairn.Tally{}) {
			delete(d.Buckets, k)
		}
	}
	for k, t := range d.Codes {
		if t == (cairn.Tally{}) {
			delete(d.Codes, k)
		}
	}
	for k, t := range d.Disks {
		if t == (cairn.DiskTally{}) {
			delete(d.Disks, k)
		}
	}
	return len(d.Buckets) == 0 && len(d.Codes) == 0 && len(d.Disks) == 0
}

// AddTo adds d to u (whose maps it creates if nil) and drops the entries
// that are zero afterwards.
func (d *Delta) AddTo(u *cairn.Usage) {
	if u.Buckets == nil {
		u.Buckets, u.Codes, u.Disks = map[string]cairn.Tally{}, map[string]cairn.Tally{}, map[cairn.DiskID]cairn.DiskTally{}
	}
	for k, t := range d.Buckets {
		if u.Buckets[k] = u.Buckets[k].Add(t); u.Buckets[k] == (cairn.Tally{}) {
			delete(u.Buckets, k)
		}
	}
	for k, t := range d.Codes {
		if u.Codes[k] = u.Codes[k].Add(t); u.Codes[k] == (cairn.Tally{}) {
			delete(u.Codes, k)
		}
	}
	for k, t := range d.Disks {
		if u.Disks[k] = u.Disks[k].Add(t); u.Disks[k] == (cairn.DiskTally{}) {
			delete(u.Disks, k)
		}
	}
}

func scaleTally(t cairn.Tally, sign int64) cairn.Tally {
	return cairn.Tally{Objects: sign * t.Objects, Logical: sign * t.Logical, Stored: sign * t.Stored}
}
