package lstor

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// Report is the result of Verify.
type Report struct {
	// Blocks is the number of parity blocks checked.
	Blocks int64
	// Corrupt are the parity blocks that fail their CRC; Mismatch those
	// whose CRC holds but which differ from the XOR of the slots.
	Corrupt, Mismatch []int64
	// Tail are the slots holding non-zero bytes past their high-water
	// mark (a write there would skip reading them and break the parity).
	Tail []int
	// Journal says a journal record is pending (it should have been
	// replayed at Open), and NeedsVerify that the store is marked.
	Journal, NeedsVerify bool
}

// OK reports whether the Lstor equals the XOR of its disk's superchunks,
// with no pending record and no mark.
func (r Report) OK() bool {
	return len(r.Corrupt) == 0 && len(r.Mismatch) == 0 && len(r.Tail) == 0 && !r.Journal && !r.NeedsVerify
}

func (r Report) String() string {
	return fmt.Sprintf("%d parity blocks: %d corrupt %v, %d mismatched %v, slots non-zero past their high-water mark %v, journal pending %v, marked for verification %v",
		r.Blocks, len(r.Corrupt), r.Corrupt, len(r.Mismatch), r.Mismatch, r.Tail, r.Journal, r.NeedsVerify)
}

// xorBlockLocked returns the XOR of parity block b's range over every slot.
// If end is not nil, end[slot] is raised past the slot's last non-zero
// byte in the block.
func (s *Store) xorBlockLocked(b int64, end []int64) ([]byte, error) {
	want := make([]byte, BlockSize)
	buf := make([]byte, BlockSize)
	for slot := range int64(s.cfg.Slots) {
		if err := readFull(s.data, buf, slot*s.cfg.Size+b*BlockSize); err != nil {
			return nil, fmt.Errorf("lstor: read slot %d: %w", slot, err)
		}
		subtle.XORBytes(want, want, buf)
		if end != nil && !allZero(buf) {
			i := len(buf) - 1
			for buf[i] == 0 {
				i--
			}
			end[slot] = b*BlockSize + int64(i) + 1
		}
	}
	return want, nil
}

// Verify checks that every parity block passes its CRC and equals the XOR
// of the slots (docs/design/raidp.md): the invariant the dual-failure
// rebuild relies on. It reads the whole disk and Lstor.
func (s *Store) Verify(ctx context.Context) (Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Report{}, ErrClosed
	}
	rep := Report{Blocks: s.blocks(), NeedsVerify: s.verify}
	hdr := make([]byte, RecordHeaderSize)
	if err := readFull(s.lst, hdr, s.journalOff()); err != nil {
		return rep, fmt.Errorf("lstor: read journal: %w", err)
	}
	rep.Journal = !allZero(hdr)
	for b := range s.blocks() {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		par, err := s.readParityLocked(b*BlockSize, (b+1)*BlockSize)
		if errors.Is(err, ErrCorrupt) {
			rep.Corrupt = append(rep.Corrupt, b)
			continue
		}
		if err != nil {
			return rep, err
		}
		want, err := s.xorBlockLocked(b, nil)
		if err != nil {
			return rep, err
		}
		if !bytes.Equal(par, want) {
			rep.Mismatch = append(rep.Mismatch, b)
		}
	}
	buf := make([]byte, BlockSize)
	for slot, h := range s.hwm {
		for off := h; off < s.cfg.Size; off += BlockSize {
			b := buf[:min(BlockSize, s.cfg.Size-off)]
			if err := readFull(s.data, b, int64(slot)*s.cfg.Size+off); err != nil {
				return rep, fmt.Errorf("lstor: read slot %d: %w", slot, err)
			}
			if !allZero(b) {
				rep.Tail = append(rep.Tail, slot)
				break
			}
		}
	}
	return rep, nil
}

// Resync recomputes the whole parity from the disk's slots, clears the
// journal and the verification mark: the disk's data is taken as the
// truth. (Whether the disk's data agrees with its mirrors is the cluster's
// check, not the Lstor's.)
func (s *Store) Resync(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	end := make([]int64, s.cfg.Slots)
	for b := range s.blocks() {
		if err := ctx.Err(); err != nil {
			return err
		}
		want, err := s.xorBlockLocked(b, end)
		if err != nil {
			return err
		}
		if err := s.writeParityLocked(want, b*BlockSize); err != nil {
			return err
		}
	}
	// The high-water marks from the scan: past its last non-zero byte, a
	// slot is zero.
	for slot, e := range end {
		if err := s.writeHWMLocked(slot, e); err != nil {
			return err
		}
	}
	if err := s.lst.Sync(); err != nil {
		return fmt.Errorf("lstor: resync: %w", err)
	}
	copy(s.hwm, end)
	if err := s.clearJournalLocked(); err != nil {
		return err
	}
	if err := s.cfg.FS.Remove(filepath.Join(s.cfg.Lstor, verifyFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("lstor: resync: %w", err)
	}
	if err := syncDir(s.cfg.FS, s.cfg.Lstor); err != nil {
		return err
	}
	s.verify = false
	return nil
}
