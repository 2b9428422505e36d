package decide

import (
	"slices"
	"time"

	"cairn"
	"cairn/codec"
)

// NewTask returns the task for stripe st of m if it has shards to
// rebuild: a shard on a disk that is lost (LostDisk) or that v does not
// know, or on a draining disk (Moving: rebuilt elsewhere to empty the
// disk). Shards on disks in a state that is neither lost nor readable
// count against its Risk; readable ones (suspect and draining included)
// do not. code is the policy's code (nil if unknown: Risk 0). now stamps
// the task.
func NewTask(m *cairn.Manifest, st Stripe, code codec.Code, v *View, now time.Time) (cairn.RepairTask, bool) {
	return DamagedTask(m, st, code, v, now, nil)
}

// DamagedTask is NewTask for a stripe of which the shards bad were found
// damaged (missing or corrupt on their disk, by scrub or a read;
// docs/design/scrub.md): they are lost whatever their disk's state, and
// recorded as the task's Bad, as a repair records a helper it found bad.
// They count against Risk as lost shards do. bad must hold indices of
// st.Shards.
func DamagedTask(m *cairn.Manifest, st Stripe, code codec.Code, v *View, now time.Time, bad []int) (cairn.RepairTask, bool) {
	var lost []int
	gone := 0
	var size int64
	for i, s := range st.Shards {
		d, known := v.Disks[s.Disk]
		switch {
		case !known || LostDisk(d.State) || slices.Contains(bad, i):
			lost = append(lost, i)
			size = max(size, s.Size)
			gone++
		case Moving(d.State):
			lost = append(lost, i)
			size = max(size, s.Size)
		case !d.State.Readable():
			gone++
		}
	}
	if len(lost) == 0 {
		return cairn.RepairTask{}, false
	}
	t := stripeTask(m, st, now)
	t.Lost, t.Bad, t.Bytes = lost, slices.Clone(bad), size*int64(len(lost))
	t.Risk = Risk(code, gone)
	return t, true
}

// TaskID returns the ID of the task of stripe st of m: of a committed
// object's stripe (cairn.RepairTaskID), or of the part of an upload in
// progress when m is one (cairn.Manifest.IsOpenPart;
// cairn.UploadRepairTaskID).
func TaskID(m *cairn.Manifest, st Stripe) string {
	if m.IsOpenPart() {
		return cairn.UploadRepairTaskID(m.Bucket, m.Upload, st.Part, st.Version)
	}
	return cairn.RepairTaskID(m.Bucket, m.Key, m.Version, st.Part)
}

// stripeTask is the task of stripe st of m, made at now, with nothing to
// do yet. For the part of an upload in progress (cairn.Upload.OpenPart)
// it names the upload, and no object version.
func stripeTask(m *cairn.Manifest, st Stripe, now time.Time) cairn.RepairTask {
	t := cairn.RepairTask{
		ID:        TaskID(m, st),
		Bucket:    m.Bucket,
		Key:       m.Key,
		Version:   m.Version,
		Part:      st.Part,
		Stripe:    st.Version,
		Policy:    m.LayoutCode(), // the code its shards are stored with (a small object: copies)
		SpareRows: st.SpareRows(),
		Created:   now,
	}
	if m.IsOpenPart() {
		t.Upload = m.Upload
	}
	return t
}

// AddBad records the shards bad of a queued task's stripe as found
// damaged: each one not yet in t.Bad joins Bad, and Lost (with no target:
// Targets stays aligned with Lost) unless it is there already; Risk drops
// by one per shard that was not lost before. It returns how many shards
// joined Bad (0: t is unchanged).
func AddBad(t *cairn.RepairTask, bad []int) int {
	changed := 0
	for _, i := range bad {
		if slices.Contains(t.Bad, i) {
			continue
		}
		changed++
		t.Bad = append(t.Bad, i)
		if !slices.Contains(t.Lost, i) {
			if len(t.Targets) > 0 {
				for len(t.Targets) < len(t.Lost) {
					t.Targets = append(t.Targets, "")
				}
				t.Targets = append(t.Targets, "")
			}
			t.Lost = append(t.Lost, i)
			t.Risk = max(t.Risk-1, 0)
		}
	}
	return changed
}

// OnlyMoves reports whether every shard t rebuilds is on a draining disk
// of v or one the rebalancer moves (t.Move): a drain's or the
// rebalancer's task, which has lost no redundancy.
func OnlyMoves(t cairn.RepairTask, st Stripe, v *View) bool {
	for _, i := range t.Lost {
		if i >= len(st.Shards) || !IsMove(&t, st, i, v) {
			return false
		}
	}
	return true
}

// IsMove reports whether shard i of st is moved rather than lost: its
// disk is draining, or the rebalancer moves it (t.Move) off a usable disk.
func IsMove(t *cairn.RepairTask, st Stripe, i int, v *View) bool {
	d, ok := v.Disks[st.Shards[i].Disk]
	if !ok || LostDisk(d.State) || slices.Contains(t.Bad, i) {
		return false
	}
	return Moving(d.State) || slices.Contains(t.Move, i) && v.Usable(d.ID)
}

// Risk is how many more shards a stripe of code can lose after gone
// (0 if the policy is unknown: code nil).
func Risk(code codec.Code, gone int) int {
	if code == nil {
		return 0
	}
	p := code.Params()
	return max(p.N()-p.K-gone, 0)
}

// LostShards is the task's lost set brought up to date: shards on lost
// or unknown disks, shards on draining disks (to be moved), those the
// rebalancer moves (t.Move) until a target holds them, and those the
// task found bad (t.Bad) unless a target already holds them (an earlier
// attempt rebuilt them and updated the manifest) — except those being
// rewritten in place (t.InPlace), which are lost until the task is done.
// A shard the task recorded as lost only because its disk was down is not
// lost once the disk is usable again: it came back.
func LostShards(t *cairn.RepairTask, st Stripe, v *View) []int {
	var lost []int
	for i, s := range st.Shards {
		d, known := v.Disks[s.Disk]
		bad := slices.Contains(t.Bad, i) && (!movedTo(t, i, s.Disk) || slices.Contains(t.InPlace, i))
		move := slices.Contains(t.Move, i) && !movedTo(t, i, s.Disk)
		if !known || LostDisk(d.State) || Moving(d.State) || bad || move {
			lost = append(lost, i)
		}
	}
	return lost
}

// movedTo reports whether the task rebuilt shard i onto disk (an earlier
// attempt got as far as the manifest update), or chose disk, its own, to
// rewrite it in place (InPlace).
func movedTo(t *cairn.RepairTask, i int, disk cairn.DiskID) bool {
	j := slices.Index(t.Lost, i)
	return j >= 0 && j < len(t.Targets) && t.Targets[j] == disk
}

// Available returns the shards of st that can serve as helpers: not lost,
// on a usable disk.
func Available(st Stripe, lost []int, v *View) []int {
	var out []int
	for i, s := range st.Shards {
		if !slices.Contains(lost, i) && v.Usable(s.Disk) {
			out = append(out, i)
		}
	}
	return out
}
