package lstor

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// DeleteMode selects how deleted ranges are zeroed (Config.Deletes).
type DeleteMode int

const (
	// DeleteLazy queues deleted ranges and zeroes them (data and parity)
	// at idle time (Idle), the paper's baseline: a delete costs nothing on
	// the write path, and until zeroed the dead bytes stay consistent with
	// the parity (a later write over them reads them as old data). A crash
	// forgets the queue: the bytes stay dead until compaction rewrites the
	// superchunk.
	DeleteLazy DeleteMode = iota
	// DeleteOnline zeroes deleted ranges at once with a journaled
	// read-modify-write (the update-oriented variant).
	DeleteOnline
)

// extent is a range of a slot.
type extent struct {
	slot   int
	off, n int64
}

// loadHWMLocked reads every slot's high-water mark.
func (s *Store) loadHWMLocked() error {
	b := make([]byte, hwmEntrySize*s.cfg.Slots)
	if err := readFull(s.lst, b, s.hwmOff()); err != nil {
		return fmt.Errorf("lstor: read high-water marks: %w", err)
	}
	s.hwm = make([]int64, s.cfg.Slots)
	for i := range s.hwm {
		e := b[i*hwmEntrySize : (i+1)*hwmEntrySize]
		v := binary.LittleEndian.Uint64(e)
		switch {
		case allZero(e):
			s.hwm[i] = 0 // never written
		case binary.LittleEndian.Uint32(e[8:]) == crc32.Checksum(e[:8], castagnoli) && v <= uint64(s.cfg.Size):
			s.hwm[i] = int64(v)
		default:
			s.hwm[i] = s.cfg.Size // unknown: assume written, no shortcut
		}
	}
	return nil
}

// writeHWMLocked writes a slot's high-water mark (not synced).
func (s *Store) writeHWMLocked(slot int, v int64) error {
	e := make([]byte, hwmEntrySize)
	binary.LittleEndian.PutUint64(e, uint64(v))
	binary.LittleEndian.PutUint32(e[8:], crc32.Checksum(e[:8], castagnoli))
	if _, err := s.lst.WriteAt(e, s.hwmOff()+int64(slot)*hwmEntrySize); err != nil {
		return fmt.Errorf("lstor: write high-water mark: %w", err)
	}
	return nil
}

// HWM returns a slot's high-water mark: its bytes at or past it are zero,
// and a write there skips the old-data read.
func (s *Store) HWM(slot int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hwm[slot]
}

// Zero zeroes [off, off+n) of slot now, with its parity (journaled like
// Write). Zeroing up to the high-water mark lowers it, so later appends
// there skip the old-data read again. A store marked for verification
// refuses it (ErrNeedsVerify), like Write.
func (s *Store) Zero(ctx context.Context, slot int, off, n int64) error {
	if err := s.checkRange(slot, off, n); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.trimBacklogLocked(extent{slot, off, n}) // zeroed now: Idle must not zero it again later
	return s.zeroLocked(ctx, extent{slot, off, n})
}

// zeroLocked zeroes an extent record by record from its end, so each
// record that reaches the high-water mark lowers it to its own start.
func (s *Store) zeroLocked(ctx context.Context, e extent) error {
	if s.verify {
		// The high-water marks may be wrong too (bytes past one may be
		// non-zero): even a range "already zero" cannot be trusted.
		return ErrNeedsVerify
	}
	zeros := make([]byte, min(e.n, int64(s.cfg.Cap)))
	for end := e.off + e.n; end > e.off; {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := max(e.off, end-int64(len(zeros)))
		if start >= s.hwm[e.slot] {
			end = start // already zero
			continue
		}
		if err := s.writeRecordLocked(e.slot, start, zeros[:end-start], true); err != nil {
			return err
		}
		end = start
	}
	return nil
}

// Delete declares [off, off+n) of slot dead. With DeleteOnline it is
// zeroed now (Zero); with DeleteLazy it is queued for Idle, and if the
// queue is full the oldest queued range is zeroed first.
func (s *Store) Delete(ctx context.Context, slot int, off, n int64) error {
	if err := s.checkRange(slot, off, n); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	e := extent{slot, off, n}
	if s.cfg.Deletes == DeleteOnline {
		return s.zeroLocked(ctx, e)
	}
	if len(s.backlog) >= s.cfg.Backlog {
		if err := s.zeroLocked(ctx, s.backlog[0]); err != nil {
			return err
		}
		s.backlog = s.backlog[1:]
	}
	s.backlog = append(s.backlog, e)
	return nil
}

// Backlog returns the number of lazy deletes not zeroed yet.
func (s *Store) Backlog() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.backlog)
}

// Idle zeroes queued lazy deletes, oldest first, until none is left or ctx
// ends (then it returns ctx's error; the rest stays queued).
func (s *Store) Idle(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.backlog) > 0 {
		if err := s.zeroLocked(ctx, s.backlog[0]); err != nil {
			return err
		}
		s.backlog = s.backlog[1:]
	}
	return nil
}

// trimBacklogLocked drops the parts of queued lazy deletes that a write
// over e makes live again, so Idle never zeroes new data.
func (s *Store) trimBacklogLocked(e extent) {
	out := s.backlog[:0]
	for _, b := range s.backlog {
		if b.slot != e.slot || b.off+b.n <= e.off || e.off+e.n <= b.off {
			out = append(out, b)
			continue
		}
		if b.off < e.off {
			out = append(out, extent{b.slot, b.off, e.off - b.off})
		}
		if end := b.off + b.n; end > e.off+e.n {
			out = append(out, extent{b.slot, e.off + e.n, end - (e.off + e.n)})
		}
	}
	s.backlog = out
}
