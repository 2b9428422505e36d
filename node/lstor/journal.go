package lstor

import (
	"context"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"
)

// record is a decoded journal record.
type record struct {
	seq       uint64
	slot      int
	off       int64
	data, old []byte
	pOff      int64
	newParity []byte
	hwm       int64 // the slot's high-water mark once applied
	elided    bool  // the old data was zero and is not in the payload
}

func (r *record) encode() (hdr, payload []byte) {
	payload = make([]byte, 0, 2*len(r.data)+len(r.newParity))
	payload = append(payload, r.data...)
	if !r.elided {
		payload = append(payload, r.old...)
	}
	payload = append(payload, r.newParity...)
	hdr = make([]byte, RecordHeaderSize)
	binary.LittleEndian.PutUint32(hdr[0:], recordMagic)
	binary.LittleEndian.PutUint64(hdr[8:], r.seq)
	binary.LittleEndian.PutUint32(hdr[16:], uint32(r.slot))
	binary.LittleEndian.PutUint64(hdr[20:], uint64(r.off))
	binary.LittleEndian.PutUint32(hdr[28:], uint32(len(r.data)))
	binary.LittleEndian.PutUint64(hdr[32:], uint64(r.pOff))
	binary.LittleEndian.PutUint32(hdr[40:], uint32(len(r.newParity)))
	binary.LittleEndian.PutUint64(hdr[44:], uint64(r.hwm))
	if r.elided {
		binary.LittleEndian.PutUint32(hdr[52:], flagElided)
	}
	c := crc32.Update(crc32.Checksum(hdr[8:], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(hdr[4:], c)
	return hdr, payload
}

// Write writes p into slot at off with a read-modify-write of the parity,
// journaled in the paper's order (docs/design/raidp.md): for each record
// of at most Cap bytes, (1) read the old data and parity blocks and compute
// the new parity; (2) write the record's payload, sync, its header, sync —
// the record is durable; (3) write the data to the disk, sync; (4) write
// the parity and its CRCs, sync; (5) clear the record, sync. When Write
// returns nil, p and the parity are durable; a crash at any point leaves a
// state that Open's replay makes consistent (the old or the new bytes of
// the record being written, earlier records new).
//
// A write that fails half-way marks the store for verification (the disk
// may hold new data the parity does not): later writes fail with
// ErrNeedsVerify until Resync (or until a reopen replays the record).
// Errors: ErrRange, ErrNeedsVerify, ErrCorrupt (a parity block failed its
// CRC), ErrClosed, ctx's, or the file system's.
func (s *Store) Write(ctx context.Context, slot int, off int64, p []byte) error {
	if err := s.checkRange(slot, off, int64(len(p))); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(p) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(len(p), s.cfg.Cap)
		s.trimBacklogLocked(extent{slot, off, int64(n)})
		if err := s.writeRecordLocked(slot, off, p[:n], false); err != nil {
			return err
		}
		off, p = off+int64(n), p[n:]
	}
	return nil
}

// writeRecordLocked writes one record. If off is at or past the slot's
// high-water mark, the old data is known zero: it is neither read nor
// journaled (the zero-region shortcut). zero says p is zeros (a delete):
// reaching the high-water mark then lowers it to off.
func (s *Store) writeRecordLocked(slot int, off int64, p []byte, zero bool) error {
	switch {
	case s.closed:
		return ErrClosed
	case s.verify:
		return ErrNeedsVerify
	}
	n := int64(len(p))
	r := record{seq: s.seq + 1, slot: slot, off: off, data: p, old: make([]byte, n), hwm: max(s.hwm[slot], off+n)}
	if zero && off+n >= s.hwm[slot] {
		r.hwm = min(off, s.hwm[slot])
	}
	r.elided = off >= s.hwm[slot]
	if !r.elided {
		if err := readFull(s.data, r.old, int64(slot)*s.cfg.Size+off); err != nil {
			return fmt.Errorf("lstor: read old data: %w", err)
		}
	}
	r.pOff = off / BlockSize * BlockSize
	pEnd := (off + n + BlockSize - 1) / BlockSize * BlockSize
	par, err := s.readParityLocked(r.pOff, pEnd)
	if err != nil {
		return err
	}
	d := off - r.pOff
	seg := par[d : d+n]
	subtle.XORBytes(seg, seg, r.old)
	subtle.XORBytes(seg, seg, p)
	r.newParity = par
	hdr, payload := r.encode()
	j := s.journalOff()
	// (2) The record: payload first, then the header, each synced, so a
	// header with its magic always has its payload.
	if _, err := s.lst.WriteAt(payload, j+RecordHeaderSize); err != nil {
		return fmt.Errorf("lstor: journal: %w", err)
	}
	if err := s.lst.Sync(); err != nil {
		return fmt.Errorf("lstor: journal: %w", err)
	}
	if _, err := s.lst.WriteAt(hdr, j); err != nil {
		return s.brokenLocked(fmt.Errorf("lstor: journal: %w", err))
	}
	if err := s.lst.Sync(); err != nil {
		return s.brokenLocked(fmt.Errorf("lstor: journal: %w", err))
	}
	s.seq = r.seq
	// (3)–(5)
	if err := s.applyLocked(&r); err != nil {
		return s.brokenLocked(err)
	}
	return nil
}

// applyLocked does steps (3)–(5) of a durable record: data, parity,
// clear. It is idempotent.
func (s *Store) applyLocked(r *record) error {
	if _, err := s.data.WriteAt(r.data, int64(r.slot)*s.cfg.Size+r.off); err != nil {
		return fmt.Errorf("lstor: write data: %w", err)
	}
	if err := s.data.Sync(); err != nil {
		return fmt.Errorf("lstor: sync data: %w", err)
	}
	if err := s.writeParityLocked(r.newParity, r.pOff); err != nil {
		return err
	}
	if err := s.writeHWMLocked(r.slot, r.hwm); err != nil {
		return err
	}
	if err := s.lst.Sync(); err != nil {
		return fmt.Errorf("lstor: sync parity: %w", err)
	}
	s.hwm[r.slot] = r.hwm
	return s.clearJournalLocked()
}

func (s *Store) clearJournalLocked() error {
	if _, err := s.lst.WriteAt(make([]byte, RecordHeaderSize), s.journalOff()); err != nil {
		return fmt.Errorf("lstor: clear journal: %w", err)
	}
	if err := s.lst.Sync(); err != nil {
		return fmt.Errorf("lstor: clear journal: %w", err)
	}
	return nil
}

// brokenLocked marks the store for verification in memory after a failure
// past the point where the record became durable (the disk and parity may
// disagree until the record is replayed or the parity resynced).
func (s *Store) brokenLocked(err error) error {
	s.verify = true
	return err
}

// replayLocked redoes a complete journal record, or marks the store for
// verification if the record fails its checks.
func (s *Store) replayLocked(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j := s.journalOff()
	hdr := make([]byte, RecordHeaderSize)
	if err := readFull(s.lst, hdr, j); err != nil {
		return fmt.Errorf("lstor: read journal: %w", err)
	}
	if allZero(hdr) {
		return nil
	}
	r, err := s.decodeLocked(hdr, j)
	if err != nil {
		// Never replay a record that fails its checks: the disk may or may
		// not hold its data. Mark the disk for verification.
		return s.markVerifyLocked()
	}
	s.seq = r.seq
	return s.applyLocked(r)
}

func (s *Store) decodeLocked(hdr []byte, j int64) (*record, error) {
	le := binary.LittleEndian
	if le.Uint32(hdr[0:]) != recordMagic {
		return nil, fmt.Errorf("%w: journal record magic %#x", ErrCorrupt, le.Uint32(hdr[0:]))
	}
	r := &record{seq: le.Uint64(hdr[8:]), slot: int(le.Uint32(hdr[16:])), off: int64(le.Uint64(hdr[20:])), pOff: int64(le.Uint64(hdr[32:])),
		hwm: int64(le.Uint64(hdr[44:])), elided: le.Uint32(hdr[52:])&flagElided != 0}
	n, m := int64(le.Uint32(hdr[28:])), int64(le.Uint32(hdr[40:]))
	if n > int64(s.cfg.Cap) || m > int64(s.cfg.Cap)+2*BlockSize || m%BlockSize != 0 || r.pOff%BlockSize != 0 ||
		r.hwm < 0 || r.hwm > s.cfg.Size || le.Uint32(hdr[52:])&^flagElided != 0 ||
		s.checkRange(r.slot, r.off, n) != nil || r.pOff < 0 || r.pOff+m > s.cfg.Size || r.off < r.pOff || r.off+n > r.pOff+m {
		return nil, fmt.Errorf("%w: journal record fields out of range", ErrCorrupt)
	}
	on := n // old data bytes in the payload
	if r.elided {
		on = 0
	}
	payload := make([]byte, n+on+m)
	if err := readFull(s.lst, payload, j+RecordHeaderSize); err != nil {
		return nil, fmt.Errorf("lstor: read journal: %w", err)
	}
	c := crc32.Update(crc32.Checksum(hdr[8:], castagnoli), castagnoli, payload)
	if c != le.Uint32(hdr[4:]) {
		return nil, fmt.Errorf("%w: journal record %d fails its CRC", ErrCorrupt, r.seq)
	}
	r.data, r.old, r.newParity = payload[:n], payload[n:n+on], payload[n+on:]
	return r, nil
}

// markVerifyLocked creates the VERIFY marker durably.
func (s *Store) markVerifyLocked() error {
	name := filepath.Join(s.cfg.Lstor, verifyFile)
	f, err := s.cfg.FS.Create(name)
	if err != nil {
		return fmt.Errorf("lstor: mark for verification: %w", err)
	}
	_, werr := f.Write([]byte("the parity may not match the disk (a journal record failed its CRC, or the disk is new); resync\n"))
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("lstor: mark for verification: %w", err)
	}
	if err := syncDir(s.cfg.FS, s.cfg.Lstor); err != nil {
		return err
	}
	s.verify = true
	return nil
}
