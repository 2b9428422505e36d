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
// among them). A chunk is rebuilt by the Clay code's sub-chunk repair when
// its helpers are there (β/α of each of D slots), else by reading K whole
// slots; the front by the RS code from the same range of K small buckets.
// clay must be the group's clay-K-M-D code and rs its rs-K-M.
func (pg *PG) RepairPiece(clay, rs codec.Code, r Record, i int, available []bool) (*PieceRepair, error) {
	locs, err := pg.Pieces(r)
	if err != nil {
		return nil, err
	}
	if i < 0 || i >= len(locs) || len(available) != pg.K+pg.M {
		return nil, fmt.Errorf("%w: piece %d of %d, %d disks' availability for a %d+%d group", ErrPlacement, i, len(locs), len(available), pg.K, pg.M)
	}
	var avail []int
	for d, ok := range available {
		if ok && d != r.Disk {
			avail = append(avail, d)
		}
	}
	piece := locs[i]
	if piece.File == SmallFile {
		return pg.repairFront(rs, r.Disk, piece, avail)
	}
	level := pg.Geo.Level(piece.Length)
	sc, ok := clay.(codec.SubChunkRepairer)
	if !ok {
		return nil, fmt.Errorf("%w: %s has no sub-chunk repair", ErrPlacement, clay.Policy())
	}
	plan, err := sc.SubChunkPlan(r.Disk, avail, int(piece.Length))
	if err != nil {
		return nil, fmt.Errorf("repair %s@%d: %w", piece.File, piece.Offset, err)
	}
	stripe := pg.Stripe(level, uint32(piece.Offset/piece.Length))
	pr := &PieceRepair{Piece: piece, Level: level, rebuild: plan.Repair}
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
	n := pg.K + pg.M
	pr.rebuild = func(reads [][]byte, out []byte) error {
		shards := make([][]byte, n)
		for j, d := range helpers {
			shards[d] = reads[j]
		}
		shards[lost] = out[:0]
		if err := rs.Reconstruct(shards, []int{lost}); err != nil {
			return err
		}
		if &shards[lost][0] != &out[0] {
			copy(out, shards[lost])
		}
		return nil
	}
	return pr, nil
}
