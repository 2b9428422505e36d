package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"cairn"
)

// Errors of a volume as a whole. Errors about one shard are *Error values
// whose chain holds one of the cairn sentinels: cairn.ErrInvalid (bad name
// or range, shard too large), cairn.ErrNotFound, cairn.ErrCorrupt (a
// checksum or the footer failed), cairn.ErrNoSpace (ENOSPC/EDQUOT or below
// Options.MinFree); anything else is an I/O error.
var (
	// ErrClosed: the volume was closed.
	ErrClosed = errors.New("volume closed")
	// ErrBroken: an fsync failed earlier, so the kernel may have dropped
	// dirty pages; the volume refuses writes (reads still work) until it is
	// reopened. Its chain also holds cairn.ErrUnavailable.
	ErrBroken = errors.New("volume broken by a failed sync")
	// ErrNotVolume: the directory is not a cairn volume (no identity file
	// and not empty, or Options.Create not set).
	ErrNotVolume = errors.New("not a cairn volume")
)

// Error is an error about one shard (or the volume, when Shard is empty).
type Error struct {
	Disk  cairn.DiskID
	Op    string // "put", "get", "stat", "delete", "list", "verify", "fsck", "open"
	Shard string // the shard name, if any
	Block int64  // the block index for corruption, else -1
	Err   error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("volume %s: %s", e.Disk, e.Op)
	if e.Shard != "" {
		s += " " + e.Shard
	}
	if e.Block >= 0 {
		s += fmt.Sprintf(" block %d", e.Block)
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

func (v *Volume) err(op, shard string, err error) error {
	return &Error{Disk: v.id, Op: op, Shard: shard, Block: -1, Err: classify(err)}
}

func (v *Volume) corrupt(op, shard string, block int64, format string, args ...any) error {
	v.corrupts.Add(1)
	return &Error{Disk: v.id, Op: op, Shard: shard, Block: block,
		Err: fmt.Errorf("%w: %s", cairn.ErrCorrupt, fmt.Sprintf(format, args...))}
}

// classify adds the cairn sentinel for OS errors the callers act on.
func classify(err error) error {
	switch {
	case errors.Is(err, cairn.ErrNoSpace), errors.Is(err, cairn.ErrNotFound):
		return err
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return fmt.Errorf("%w: %w", cairn.ErrNoSpace, err)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %w", cairn.ErrNotFound, err)
	}
	return err
}

// isNoSpace reports whether err is a full disk (which does not break the
// volume: the failed write is removed and later writes may fit).
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, cairn.ErrNoSpace)
}
