package decide

// Fountain-coded (lt) stripes. Their blocks are not rebuilt in place:
// a block is a pure function of the stripe's source blocks and its ID,
// so a repair decodes the stripe from the blocks that survive and writes
// fresh blocks, with IDs never handed out before, onto disks within the
// stripe's per-disk and per-node bounds (placement.CodedBounds). These
// are the decisions; package repair reads, decodes and writes.

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"cairn"
	"cairn/codec"
	"cairn/placement"
)

// ErrNoBlockIDs: a coded stripe has used up the block IDs shard file
// names allow (cairn.MaxShardIndex); its blocks cannot be replaced.
var ErrNoBlockIDs = errors.New("repair: no block IDs left")

// CodedLayout returns the layout of part (0: the object) of m if it is
// fountain-coded, else nil.
func CodedLayout(m *cairn.Manifest, part int) *cairn.Layout {
	l := &m.Layout
	if part > 0 {
		l = nil
		for i := range m.Parts {
			if m.Parts[i].Number == part {
				l = &m.Parts[i].Layout
			}
		}
	}
	if l == nil || len(l.Coded) == 0 {
		return nil
	}
	return l
}

// blockGone reports whether block b of stripe cs is lost: its disk is lost
// or unknown, or its file is in bad.
func blockGone(cs *cairn.CodedStripe, b cairn.BlockLoc, v *View, bad []cairn.ShardFile) bool {
	d, known := v.Disks[b.Disk]
	return !known || LostDisk(d.State) || slices.Contains(bad, blockFile(cs, b))
}

// blockFile is block b's file.
func blockFile(cs *cairn.CodedStripe, b cairn.BlockLoc) cairn.ShardFile {
	return cairn.ShardFile{Disk: b.Disk, Name: cairn.ShardName(cs.Version, b.ID)}
}

// replaced reports whether block b is to be replaced: gone, or on a
// draining disk (moved off it).
func replaced(cs *cairn.CodedStripe, b cairn.BlockLoc, v *View, bad []cairn.ShardFile) bool {
	return blockGone(cs, b, v, bad) || Moving(v.Disks[b.Disk].State)
}

// CodedWork returns the indices of l's coded stripes that have blocks to
// replace (lost, bad, or on a draining disk) or fewer than n blocks.
func CodedWork(l *cairn.Layout, n int, v *View, bad []cairn.ShardFile) []int {
	var out []int
	for s := range l.Coded {
		cs := &l.Coded[s]
		if len(cs.Blocks) < n || slices.ContainsFunc(cs.Blocks, func(b cairn.BlockLoc) bool { return replaced(cs, b, v, bad) }) {
			out = append(out, s)
		}
	}
	return out
}

// CodedTask returns the task for the coded layout l of part (0: the
// object) of m if a stripe of it has blocks to replace (CodedWork). code is
// the policy's code (nil if unknown: Risk 0). Its Lost lists those
// stripes, BadBlocks is bad (block files found damaged), Risk the least
// CodedRisk of its stripes, Bytes the bytes of the blocks to write.
func CodedTask(m *cairn.Manifest, part int, l *cairn.Layout, code codec.Code, v *View, now time.Time, bad []cairn.ShardFile) (cairn.RepairTask, bool) {
	k, n := 0, 0
	if code != nil {
		k, n = code.Params().K, code.Params().N()
	}
	work := CodedWork(l, n, v, bad)
	if len(work) == 0 {
		return cairn.RepairTask{}, false
	}
	ver := m.Version
	if part > 0 {
		for _, p := range m.Parts {
			if p.Number == part {
				ver = p.Version
			}
		}
	}
	t := stripeTask(m, Stripe{Part: part, Version: ver}, now)
	t.Stripe, t.Lost, t.BadBlocks = "", work, slices.Clone(bad)
	if m.IsOpenPart() {
		t.Stripe = ver // the part's version: a part uploaded again is another stripe
	}
	t.Risk = -1
	for _, s := range work {
		cs := &l.Coded[s]
		bs := int64(cmp.Or(cs.BlockSize, l.BlockSize))
		for _, b := range cs.Blocks {
			if replaced(cs, b, v, bad) {
				t.Bytes += bs
			}
		}
		t.Bytes += int64(max(n-len(cs.Blocks), 0)) * bs
		if r := CodedRisk(cs, k, v, bad); t.Risk < 0 || r < t.Risk {
			t.Risk = r
		}
	}
	if code == nil {
		t.Risk = 0
	}
	return t, true
}

// CodedRisk is how many more disks stripe cs can lose, whichever they
// are, and keep k blocks (what decodes it, almost always): the blocks
// that are not gone are counted per disk, and the fullest disks are taken
// away until fewer than k would be left. Blocks on disks that are neither
// lost nor readable (suspect) count as gone, as for a Risk.
func CodedRisk(cs *cairn.CodedStripe, k int, v *View, bad []cairn.ShardFile) int {
	per := map[cairn.DiskID]int{}
	left := 0
	for _, b := range cs.Blocks {
		if blockGone(cs, b, v, bad) || !v.Disks[b.Disk].State.Readable() {
			continue
		}
		per[b.Disk]++
		left++
	}
	counts := make([]int, 0, len(per))
	for _, c := range per {
		counts = append(counts, c)
	}
	slices.SortFunc(counts, func(a, b int) int { return b - a })
	risk := 0
	for _, c := range counts {
		if left-c < k {
			break
		}
		left -= c
		risk++
	}
	return risk
}

// CodedRepair is what one round does to one coded stripe.
type CodedRepair struct {
	// Keep are the indices of the blocks that stay (in the stripe's
	// order), Drop those replaced: gone, bad, or on a draining disk.
	Keep, Drop []int
	// Helpers are the blocks to decode from, by index: every block that
	// is not gone and whose disk is usable, source blocks first (a stripe
	// whose source blocks all survive decodes by copying them).
	Helpers []int
	// New are the fresh blocks, IDs from the stripe's FreshID up, on
	// disks within Bounds: CRC and Ident are unset until written.
	New []cairn.BlockLoc
	// Short is how many blocks below n found no disk within the bounds
	// (blocks on a draining disk that found none stay in Keep); the
	// stripe is short of them until the cluster grows or a disk comes
	// back.
	Short  int
	Bounds placement.BlockBounds
}

// Next is the stripe's Next once the new blocks are written: the first ID
// none of them took.
func (c CodedRepair) Next(cs *cairn.CodedStripe, n int) int {
	if len(c.New) == 0 {
		return cs.FreshID(n)
	}
	return c.New[len(c.New)-1].ID + 1
}

// PlanCoded decides the round of coded stripe cs of a code of n blocks
// (k source blocks) against v, with the block files bad found damaged:
// which blocks stay, which to decode from, and where n − len(Keep) fresh
// blocks go. The bounds are placement.CodedBounds over the writable disks
// of v and the disks of the kept blocks, and the kept blocks count
// against them; the least loaded node (blocks of the stripe), then disk,
// takes each new block, ties broken by rendezvous hash on the stripe's
// version and the disk (placement.Spare), so the same inputs give the
// same plan. It returns an error wrapping ErrNoBlockIDs (and
// cairn.ErrInvalid: permanent) when the IDs the new blocks need pass
// cairn.MaxShardIndex.
func PlanCoded(cs *cairn.CodedStripe, k, n int, v *View, bad []cairn.ShardFile) (CodedRepair, error) {
	var c CodedRepair
	onDisk, onNode := map[cairn.DiskID]int{}, map[cairn.NodeID]int{}
	for i, b := range cs.Blocks {
		if !blockGone(cs, b, v, bad) && v.Usable(b.Disk) {
			c.Helpers = append(c.Helpers, i)
		}
		if replaced(cs, b, v, bad) {
			c.Drop = append(c.Drop, i)
			continue
		}
		c.Keep = append(c.Keep, i)
		onDisk[b.Disk]++
		onNode[v.Disks[b.Disk].Node]++
	}
	slices.SortStableFunc(c.Helpers, func(a, b int) int { return cs.Blocks[a].ID - cs.Blocks[b].ID })
	need := n - len(c.Keep)
	if need <= 0 {
		return c, nil
	}
	var cands []cairn.Disk
	var nodeOf []cairn.NodeID
	for _, d := range v.List {
		if v.Target(d.ID) {
			cands = append(cands, d)
		}
		if v.Target(d.ID) || onDisk[d.ID] > 0 {
			nodeOf = append(nodeOf, d.Node)
		}
	}
	c.Bounds = placement.CodedBounds(k, n, placement.CodedMargin, nodeOf)
	next := cs.FreshID(n)
	if next+need-1 > cairn.MaxShardIndex {
		return c, fmt.Errorf("%w: %w: stripe %s needs %d new blocks from ID %d, past %d", cairn.ErrInvalid, ErrNoBlockIDs,
			cs.Version, need, next, cairn.MaxShardIndex)
	}
	for range need {
		d, ok := placement.Spare(cands, cs.Version, func(d cairn.Disk) bool { return c.Bounds.Fits(onDisk[d.ID], onNode[d.Node]) },
			func(d cairn.Disk) int { return onNode[d.Node]*(n+1) + onDisk[d.ID] })
		if !ok {
			c.Short++
			continue
		}
		c.New = append(c.New, cairn.BlockLoc{ID: next, Disk: d})
		next++
		onDisk[d]++
		onNode[v.Disks[d].Node]++
	}
	// A block on a draining disk leaves only for a new block: those
	// without one stay where they are.
	for j := len(c.Drop) - 1; j >= 0 && c.Short > 0; j-- {
		i := c.Drop[j]
		if blockGone(cs, cs.Blocks[i], v, bad) {
			continue
		}
		c.Drop = slices.Delete(c.Drop, j, j+1)
		c.Keep = append(c.Keep, i)
		c.Short--
	}
	slices.Sort(c.Keep)
	return c, nil
}

// WithCoded returns a copy of l whose stripe s has the blocks keep (indices
// into its blocks) and then add, and Next next. l is not modified.
func WithCoded(l *cairn.Layout, s int, keep []int, add []cairn.BlockLoc, next int) cairn.Layout {
	out := *l
	out.Coded = slices.Clone(l.Coded)
	cs := l.Coded[s]
	blocks := make([]cairn.BlockLoc, 0, len(keep)+len(add))
	for _, i := range keep {
		blocks = append(blocks, cs.Blocks[i])
	}
	cs.Blocks, cs.Next = append(blocks, add...), next
	out.Coded[s] = cs
	return out
}
