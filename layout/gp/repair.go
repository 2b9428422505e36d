package gp

import (
	"fmt"

	"cairn/codec"
)

// PieceRepair says how to rebuild one piece of an object whose disk is
// lost: which byte ranges of which helpers to read (Reads[i] is helper
// i's ranges, to be handed to Rebuild concatenated), and how to turn them
// into the piece. Reads of a small-size bucket range that lies past the
// end of a helper's file are zeros: the small buckets of a group are
// coded as if zero-extended to the longest.
type PieceRepair struct {
	Piece Location     // the piece rebuilt
	Level int          // its chunk level, or −1 for the front
	Reads [][]Location // per helper: its ranges, in the order Rebuild wants them
	// rebuild is the code's rebuild from the helpers' concatenated reads.
	rebuild func(reads [][]byte, out []byte) error
}

// ReadBytes returns the bytes the repair reads from all helpers.
func (p *PieceRepair) ReadBytes() int64 {
	var n int64
	for _, h := range p.Reads {
		for _, l := range h {
			n += l.Length
		}
	}
	return n
}

// Rebuild writes the piece into out (len Piece.Length) from reads[i], the
// concatenation of helper i's ranges.
func (p *PieceRepair) Rebuild(reads [][]byte, out []byte) error {
	if len(reads) != len(p.Reads) || int64(len(out)) != p.Piece.Length {
		return fmt.Errorf("%w: rebuild of %s@%d: %d helper buffers and %d output bytes, want %d and %d",
			codec.ErrShardSize, p.Piece.File, p.Piece.Offset, len(reads), len(out), len(p.Reads), p.Piece.Length)
	}
	return p.rebuild(reads, out)
}

// RepairPiece plans the rebuild of piece i (object order) of record r
// while the disks with available[d] false are gone (the object's own disk
// among them): RepairRange of the piece's location.
func (pg *PG) RepairPiece(clay, rs codec.Code, r Record, i int, available []bool) (*PieceRepair, error) {
	locs, err := pg.Pieces(r)
	if err != nil {
		return nil, err
	}
	if i < 0 || i >= len(locs) {
		return nil, fmt.Errorf("%w: piece %d of %d", ErrPlacement, i, len(locs))
	}
	return pg.RepairRange(clay, rs, locs[i], available)
}

// RepairRange plans the rebuild of a whole slot (a chunk, or a parity
// slot) or of a range of a small-size bucket (or its parity) on disk
// where.Disk while the disks with available[d] false are gone. A slot is
// rebuilt by the Clay code's sub-chunk repair of its row when its helpers
// are there (β/α of each of D slots), else by reading K whole slots; a
// small-bucket range by the RS code from the same range of K others. clay
// is the group's chunk code, clay-K-M-D (a scalar code — RS, LRC — rebuilds
// from whole slots instead, for the experiment's baselines), and rs its
// rs-K-M.
func (pg *PG) RepairRange(clay, rs codec.Code, where Location, available []bool) (*PieceRepair, error) {
	if len(available) != pg.K+pg.M || where.Disk < 0 || where.Disk >= pg.K+pg.M || where.Length <= 0 {
		return nil, fmt.Errorf("%w: rebuild of %+v with %d disks' availability for a %d+%d group", ErrPlacement, where, len(available), pg.K, pg.M)
	}
	var avail []int
	for d, ok := range available {
		if ok && d != where.Disk {
			avail = append(avail, d)
		}
	}
	if where.File == SmallFile || where.File == SmallParityFile {
		return pg.repairFront(rs, where.Disk, where, avail)
	}
	level := pg.Geo.Level(where.Length)
	if level < 0 || where.Offset%where.Length != 0 {
		return nil, fmt.Errorf("%w: %s [%d, +%d) is not a slot", ErrPlacement, where.File, where.Offset, where.Length)
	}
	stripe := pg.Stripe(level, uint32(where.Offset/where.Length))
	sc, ok := clay.(codec.SubChunkRepairer)
	if !ok {
		return pg.repairLinear(clay, where, level, stripe, avail)
	}
	return subChunkRepair(sc, where, level, stripe, avail)
}

// subChunkRepair plans the rebuild of slot where (of level, in row stripe)
// by the code's sub-chunk plan from the disks avail.
func subChunkRepair(sc codec.SubChunkRepairer, where Location, level int, stripe []Location, avail []int) (*PieceRepair, error) {
	plan, err := sc.SubChunkPlan(where.Disk, avail, int(where.Length))
	if err != nil {
		return nil, fmt.Errorf("repair %s@%d: %w", where.File, where.Offset, err)
	}
	pr := &PieceRepair{Piece: where, Level: level, rebuild: plan.Repair}
	for _, h := range plan.Helpers {
		base := stripe[h.Shard]
		var ranges []Location
		for _, run := range h.Runs {
			ranges = append(ranges, Location{Disk: base.Disk, File: base.File, Offset: base.Offset + int64(run.Offset), Length: int64(run.Length)})
		}
		pr.Reads = append(pr.Reads, ranges)
	}
	return pr, nil
}

// Cost is the disk work of the repair's reads, in bytes, for disks that
// stream seek bytes in the time of a seek: each request costs seek plus
// the bytes it spans, the requests being a helper's ranges as Coalesce
// groups them with gap seek (as package cold asks for them).
func (p *PieceRepair) Cost(seek int64) int64 {
	var c int64
	for _, h := range p.Reads {
		Coalesce(h, seek, nil, func(req Location, _ []Location) { c += seek + req.Length })
	}
	return c
}

// Coalesce groups ranges (in order) into the requests a reader makes of
// the disks: consecutive ranges of one disk and file, each starting at
// most gap after the one before ends, form one request that reads
// through the gaps — when join (nil: always) allows the pair. It calls
// each with every request, in order, and the ranges it covers.
func Coalesce(ranges []Location, gap int64, join func(a, b Location) bool, each func(req Location, runs []Location)) {
	for i := 0; i < len(ranges); {
		j, end := i+1, ranges[i].Offset+ranges[i].Length
		for j < len(ranges) && ranges[j].Disk == ranges[i].Disk && ranges[j].File == ranges[i].File &&
			ranges[j].Offset >= end && ranges[j].Offset-end <= gap && (join == nil || join(ranges[i], ranges[j])) {
			end = ranges[j].Offset + ranges[j].Length
			j++
		}
		each(Location{Disk: ranges[i].Disk, File: ranges[i].File, Offset: ranges[i].Offset, Length: end - ranges[i].Offset}, ranges[i:j])
		i = j
	}
}

// RepairRangeCheapest is RepairRange for a recovery, which wants the least
// disk work rather than the shortest wait: a slot whose sub-chunk repair
// costs its D helpers more (Cost(seek)) than K whole slots cost is decoded
// from K whole slots instead. That is a small slot whose helpers' runs lie
// closer together than a seek's worth, so the D helpers each read their
// whole slot (docs/design/cold.md, "Recovery"). The K helpers start at a
// disk that turns with the slot, so that such rebuilds spread their reads
// over the group.
func (pg *PG) RepairRangeCheapest(clay, rs codec.Code, where Location, available []bool, seek int64) (*PieceRepair, error) {
	pr, err := pg.RepairRange(clay, rs, where, available)
	if err != nil || pr.Level < 0 || len(pr.Reads) <= pg.K {
		return pr, err
	}
	sc, ok := clay.(codec.SubChunkRepairer)
	if !ok || pr.Cost(seek) <= int64(pg.K)*(seek+where.Length) {
		return pr, nil
	}
	var avail []int
	for d, ok := range available {
		if ok && d != where.Disk {
			avail = append(avail, d)
		}
	}
	turn := int(where.Offset / where.Length)
	chosen := make([]int, pg.K)
	for i := range chosen {
		chosen[i] = avail[(turn+i)%len(avail)]
	}
	return subChunkRepair(sc, where, pr.Level, pg.Stripe(pr.Level, uint32(where.Offset/where.Length)), chosen)
}

// repairLinear plans the rebuild of a slot of a row coded by a scalar
// code (the baselines of the experiment keep this layout with RS or LRC
// chunks): whole slots of the helpers its RepairPlan names (an LRC's local
// group), or of K of them when the code has no plan.
func (pg *PG) repairLinear(c codec.Code, where Location, level int, stripe []Location, avail []int) (*PieceRepair, error) {
	pr := &PieceRepair{Piece: where, Level: level}
	if lr, ok := c.(codec.LinearRepairer); ok {
		plan, err := lr.RepairPlan([]int{where.Disk}, avail)
		if err != nil {
			return nil, fmt.Errorf("repair %s@%d: %w", where.File, where.Offset, err)
		}
		for _, h := range plan.Helpers {
			pr.Reads = append(pr.Reads, []Location{stripe[h]})
		}
		pr.rebuild = func(reads [][]byte, out []byte) error {
			clear(out)
			for i, b := range reads {
				plan.Apply([][]byte{out}, i, b)
			}
			return nil
		}
		return pr, nil
	}
	if len(avail) < pg.K {
		return nil, fmt.Errorf("%w: %s@%d: %d disks left, %s needs %d", codec.ErrUndecodable, where.File, where.Offset, len(avail), c.Policy(), pg.K)
	}
	helpers := avail[:pg.K]
	for _, h := range helpers {
		pr.Reads = append(pr.Reads, []Location{stripe[h]})
	}
	pr.rebuild = func(reads [][]byte, out []byte) error {
		return reconstructInto(c, pg.K+pg.M, helpers, where.Disk, reads, out)
	}
	return pr, nil
}

// reconstructInto rebuilds shard lost of a stripe of n shards into out
// from the helpers' whole shards.
func reconstructInto(c codec.Code, n int, helpers []int, lost int, reads [][]byte, out []byte) error {
	shards := make([][]byte, n)
	for j, d := range helpers {
		shards[d] = reads[j]
	}
	shards[lost] = out[:0]
	if err := c.Reconstruct(shards, []int{lost}); err != nil {
		return err
	}
	if &shards[lost][0] != &out[0] {
		copy(out, shards[lost])
	}
	return nil
}

// repairFront plans the RS rebuild of a front from K of the available
// disks' same range.
func (pg *PG) repairFront(rs codec.Code, lost int, piece Location, avail []int) (*PieceRepair, error) {
	if len(avail) < pg.K {
		return nil, fmt.Errorf("%w: front of disk %d: %d disks left, RS needs %d", codec.ErrUndecodable, lost, len(avail), pg.K)
	}
	helpers := avail[:pg.K]
	stripe := pg.SmallStripe(piece.Offset, piece.Length)
	pr := &PieceRepair{Piece: piece, Level: -1}
	for _, d := range helpers {
		pr.Reads = append(pr.Reads, []Location{stripe[d]})
	}
	pr.rebuild = func(reads [][]byte, out []byte) error {
		return reconstructInto(rs, pg.K+pg.M, helpers, lost, reads, out)
	}
	return pr, nil
}
