package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"cairn"
)

// FsckOptions configure Fsck. Time is an input: the caller passes the
// cutoff, so tests need no clock.
type FsckOptions struct {
	// TmpCutoff: temporary files last modified before it are removed (a
	// write that has not touched its file since is dead). Zero removes
	// none. Open already removes all of them.
	TmpCutoff time.Time
	// SkipVerify checks only footers, not every block.
	SkipVerify bool
}

// FsckReport is what Fsck found. Corrupt and Stray are problems; removed
// temporary files are housekeeping.
type FsckReport struct {
	Shards     int      // shard files checked
	Bytes      int64    // their content bytes
	Corrupt    []string // "name: reason" of shards that failed their checks
	Stray      []string // paths (relative to the volume) that should not be there
	TmpRemoved []string // temporary files removed
	TmpKept    []string // temporary files younger than the cutoff
}

// OK reports whether no problems were found.
func (r *FsckReport) OK() bool { return len(r.Corrupt) == 0 && len(r.Stray) == 0 }

// Problems returns the problems, one per line.
func (r *FsckReport) Problems() string {
	var b strings.Builder
	for _, c := range r.Corrupt {
		fmt.Fprintf(&b, "corrupt: %s\n", c)
	}
	for _, s := range r.Stray {
		fmt.Fprintf(&b, "stray: %s\n", s)
	}
	return b.String()
}

// Fsck scans the whole volume: it checks every shard file (each block's
// CRC and the content CRC, or only the footer with SkipVerify), reports
// files that do not belong, and removes temporary files older than
// opts.TmpCutoff. It does not remove corrupt shards: repair replaces them.
// The error is for failures to scan (I/O, ctx), not for what was found.
func (v *Volume) Fsck(ctx context.Context, opts FsckOptions) (*FsckReport, error) {
	rep := &FsckReport{}
	if err := v.check(false); err != nil {
		return rep, v.err("fsck", "", err)
	}
	if id, err := v.readIdentity(); err != nil {
		rep.Corrupt = append(rep.Corrupt, fmt.Sprintf("%s: %v", IdentityName, err))
	} else if id.DiskID != v.id || id.VolumeID != v.volID {
		rep.Corrupt = append(rep.Corrupt, fmt.Sprintf("%s: names disk %s volume %s; disk %s volume %s was opened",
			IdentityName, id.DiskID, id.VolumeID, v.id, v.volID))
	}
	root, err := v.fs.List(v.dir)
	if err != nil {
		return rep, v.err("fsck", "", err)
	}
	for _, n := range root {
		switch n {
		case IdentityName, ShardsDir, TmpDir, LockName, RAIDPData:
		default:
			rep.Stray = append(rep.Stray, n)
		}
	}
	fans, err := v.fs.List(v.path(ShardsDir))
	if err != nil {
		return rep, v.err("fsck", "", err)
	}
	for _, fo := range fans {
		if !validFanout(fo) {
			rep.Stray = append(rep.Stray, ShardsDir+"/"+fo)
			continue
		}
		names, err := v.fs.List(v.path(ShardsDir, fo))
		if err != nil {
			return rep, v.err("fsck", "", err)
		}
		for _, name := range names {
			if err := ctx.Err(); err != nil {
				return rep, v.err("fsck", "", err)
			}
			if ValidateName(name) != nil || fanout(name) != fo {
				rep.Stray = append(rep.Stray, ShardsDir+"/"+fo+"/"+name)
				continue
			}
			var info ShardInfo
			if opts.SkipVerify {
				info, err = v.Stat(ctx, name)
			} else {
				info, err = v.Verify(ctx, name)
			}
			switch {
			case errors.Is(err, cairn.ErrCorrupt):
				rep.Corrupt = append(rep.Corrupt, fmt.Sprintf("%s: %v", name, err))
			case errors.Is(err, cairn.ErrNotFound):
				// deleted meanwhile
			case err != nil:
				return rep, err
			default:
				rep.Shards++
				rep.Bytes += info.Size
			}
		}
	}
	removed, kept, err := v.sweepTmp(opts.TmpCutoff)
	rep.TmpRemoved, rep.TmpKept = removed, kept
	if err != nil {
		return rep, v.err("fsck", "", err)
	}
	return rep, nil
}

// SweepTmp removes temporary files last modified before cutoff (writes
// that died without cleaning up) and returns their paths relative to the
// volume. It touches only tmp/, so it is cheap to run often.
func (v *Volume) SweepTmp(cutoff time.Time) ([]string, error) {
	if err := v.check(false); err != nil {
		return nil, v.err("sweep", "", err)
	}
	removed, _, err := v.sweepTmp(cutoff)
	if err != nil {
		return removed, v.err("sweep", "", err)
	}
	return removed, nil
}

func (v *Volume) sweepTmp(cutoff time.Time) (removed, kept []string, err error) {
	tmps, err := v.fs.List(v.path(TmpDir))
	if err != nil {
		return nil, nil, err
	}
	for _, n := range tmps {
		p := v.path(TmpDir, n)
		fi, err := v.fs.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return removed, kept, err
		}
		if cutoff.IsZero() || !fi.ModTime().Before(cutoff) {
			kept = append(kept, TmpDir+"/"+n)
			continue
		}
		if err := v.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, kept, err
		}
		removed = append(removed, TmpDir+"/"+n)
	}
	return removed, kept, nil
}
