package raidprun

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"cairn/raidp"
)

// Divergence is a superchunk whose two replicas differ, at byte Off (the
// first differing chunk's start).
type Divergence struct {
	Superchunk int
	Off        int64
}

// Verify compares the two replicas of every superchunk of l chunk by
// chunk (1-mirroring is bitwise) and returns those that differ. The
// layout's own invariants are checked first (raidp.ErrInvariant). Each
// disk's Lstor is checked by the disk itself (node/lstor's Verify); this
// is the group's half of `cairn admin raidp verify`.
func Verify(ctx context.Context, l raidp.Layout, disks map[int]Disk, cfg Config) ([]Divergence, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := l.Check(); err != nil {
		return nil, err
	}
	var out []Divergence
	a, b := make([]byte, cfg.Chunk), make([]byte, cfg.Chunk)
	for _, sc := range l.Superchunks {
		da, err := disk(disks, sc.Replicas[0].Disk)
		if err != nil {
			return nil, err
		}
		db, err := disk(disks, sc.Replicas[1].Disk)
		if err != nil {
			return nil, err
		}
		for off := int64(0); off < cfg.Size; off += int64(cfg.Chunk) {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			n := min(int64(cfg.Chunk), cfg.Size-off)
			if err := da.ReadAt(sc.Replicas[0].Slot, a[:n], off); err != nil {
				return out, fmt.Errorf("verify superchunk %d: disk %d: %w", sc.ID, sc.Replicas[0].Disk, err)
			}
			if err := db.ReadAt(sc.Replicas[1].Slot, b[:n], off); err != nil {
				return out, fmt.Errorf("verify superchunk %d: disk %d: %w", sc.ID, sc.Replicas[1].Disk, err)
			}
			if !bytes.Equal(a[:n], b[:n]) {
				out = append(out, Divergence{Superchunk: sc.ID, Off: off})
				break
			}
		}
	}
	return out, nil
}

// Stray returns the free slots of l on the disks given — those no
// superchunk of l occupies — that hold a non-zero byte: bytes a disk's
// Lstor counts that no superchunk accounts for, which would spoil a dual
// rebuild from that Lstor (docs/design/raidp.md, "Stored plan"). Disks
// missing from disks (out of the group) are skipped.
func Stray(ctx context.Context, l raidp.Layout, disks map[int]Disk, cfg Config) ([]raidp.Place, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	used := map[raidp.Place]bool{}
	for _, sc := range l.Superchunks {
		used[sc.Replicas[0]], used[sc.Replicas[1]] = true, true
	}
	var out []raidp.Place
	b := make([]byte, cfg.Chunk)
	for d := range l.Disks {
		dk, ok := disks[d]
		if !ok || dk == nil {
			continue
		}
		for s := range l.Slots {
			p := raidp.Place{Disk: d, Slot: s}
			if used[p] {
				continue
			}
			for off := int64(0); off < cfg.Size; off += int64(cfg.Chunk) {
				if err := ctx.Err(); err != nil {
					return out, err
				}
				n := min(int64(cfg.Chunk), cfg.Size-off)
				if err := dk.ReadAt(s, b[:n], off); err != nil {
					return out, fmt.Errorf("stray check: disk %d slot %d: %w", d, s, err)
				}
				if slices.ContainsFunc(b[:n], func(x byte) bool { return x != 0 }) {
					out = append(out, p)
					break
				}
			}
		}
	}
	return out, nil
}
