package cold

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"cairn"
	"cairn/codec"
	"cairn/internal/retry"
	"cairn/layout/gp"
	"cairn/node/wire"
)

// SmallPage is the size of the shards that hold a small-size bucket.
const SmallPage = 1 << 20

// Disks is what the cold tier needs of the storage nodes; *node.Client
// satisfies it.
type Disks interface {
	PutShard(ctx context.Context, disk cairn.DiskID, name string, r io.Reader) (wire.ShardInfo, error)
	GetShard(ctx context.Context, disk cairn.DiskID, name string, off, n int64) (io.ReadCloser, error)
}

// Group is one placement group of the cold tier.
type Group struct {
	ID    string         // names the group's shards; unique in the cluster
	Disks []cairn.DiskID // K data disks, then M parity disks
	PG    *gp.PG
	Clay  codec.Code // the chunks' code: clay-K-M-D (or a baseline's)
	RS    codec.Code // rs-K-M, for the small-size buckets
	Nodes Disks
	// Gap is the largest gap between two runs of one helper slot that a
	// repair reads through rather than asking for the runs apart: what the
	// disks stream in the time of a seek (0: CoalesceGap, for the
	// spinning-disk model).
	Gap int64
}

// NewGroup returns an empty group of geometry geo on disks, whose chunks
// are coded with chunk (clay-K-M-D for the cold tier; RS or LRC for the
// experiment's baselines) and whose small-size buckets with rs, rs-K-M of
// the same shape.
func NewGroup(id string, geo gp.Geometry, disks []cairn.DiskID, nodes Disks, chunk, rs codec.Code) (*Group, error) {
	p := chunk.Params()
	if len(disks) != p.N() || rs.Params().K != p.K || rs.Params().N() != p.N() {
		return nil, fmt.Errorf("%w: cold group %s: %d disks for %s with %s", cairn.ErrInvalid, id, len(disks), chunk.Policy(), rs.Policy())
	}
	pg, err := gp.NewPG(p.K, p.M, geo)
	if err != nil {
		return nil, err
	}
	return &Group{ID: id, Disks: disks, PG: pg, Clay: chunk, RS: rs, Nodes: nodes}, nil
}

// shard is where a byte range of a group file lies on the nodes: a shard
// of a disk and a range in it.
type shard struct {
	disk     int
	name     string
	off, len int64
}

// shardName is the node's name for unit u (a slot or a small page) of a
// group file on the disk at position disk.
func (g *Group) shardName(disk int, file string, u int64) string {
	h := sha256.Sum256(fmt.Appendf(nil, "gp/%s/%s/%d", g.ID, file, u))
	return cairn.ShardName(hex.EncodeToString(h[:16]), disk)
}

// shards maps a location onto the shards that hold it: one slot shard for
// a bucket range, one or more pages for a small-bucket range.
func (g *Group) shards(l gp.Location) []shard {
	if l.File != gp.SmallFile && l.File != gp.SmallParityFile {
		size := g.slotSize(l.File) // l may be a run inside the slot
		u := l.Offset / size
		return []shard{{disk: l.Disk, name: g.shardName(l.Disk, l.File, u), off: l.Offset - u*size, len: l.Length}}
	}
	var out []shard
	for off := l.Offset; off < l.Offset+l.Length; {
		p := off / SmallPage
		n := min(l.Offset+l.Length, (p+1)*SmallPage) - off
		out = append(out, shard{disk: l.Disk, name: g.shardName(l.Disk, l.File, p), off: off - p*SmallPage, len: n})
		off += n
	}
	return out
}

// slotSize returns the chunk size of a bucket file's level.
func (g *Group) slotSize(file string) int64 {
	if l := g.levelOf(file); l >= 0 {
		return g.PG.Geo.Size(l)
	}
	return 0
}

// levelOf returns the level of a bucket or parity file (-1 for another).
func (g *Group) levelOf(file string) int {
	for i := range g.PG.Geo.Levels() {
		if file == gp.BucketFile(i) || file == gp.ParityFile(i) {
			return i
		}
	}
	return -1
}

// read returns the bytes of a location. A shard that does not exist reads
// as zeros when zeros is set (never-written slots and pages).
func (g *Group) read(ctx context.Context, l gp.Location, zeros bool) ([]byte, error) {
	out := make([]byte, 0, l.Length)
	for _, s := range g.shards(l) {
		rc, err := g.Nodes.GetShard(ctx, g.Disks[s.disk], s.name, s.off, s.len)
		if zeros && errors.Is(err, cairn.ErrNotFound) {
			out = append(out, make([]byte, s.len)...)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s [%d, +%d) of %s: %w", l.File, l.Offset, l.Length, g.Disks[s.disk], err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err == nil && int64(len(b)) != s.len {
			err = fmt.Errorf("%w: %d bytes, want %d", cairn.ErrCorrupt, len(b), s.len)
		}
		if err != nil {
			return nil, fmt.Errorf("read %s [%d, +%d) of %s: %w", l.File, l.Offset, l.Length, g.Disks[s.disk], err)
		}
		out = append(out, b...)
	}
	return out, nil
}

// putUnit writes a whole slot or small page.
func (g *Group) putUnit(ctx context.Context, disk int, file string, u int64, b []byte) error {
	name := g.shardName(disk, file, u)
	err := retry.Do(ctx, unitWrites, func(ctx context.Context) error {
		_, err := g.Nodes.PutShard(ctx, g.Disks[disk], name, bytes.NewReader(b))
		return err
	})
	if err != nil {
		return fmt.Errorf("write %s unit %d of %s: %w", file, u, g.Disks[disk], err)
	}
	return nil
}

// unitWrites is how often a unit's write is tried after a transient
// failure (a dropped connection, a node that did not answer). A unit is
// written whole under its name, and a node replaces a shard only by a
// rename of a complete file (docs/design/volume.md), so writing the same
// bytes again after a failure whose outcome is unknown leaves the same
// unit. Without it one dropped connection failed a whole export batch or
// rebuild task.
var unitWrites = retry.Policy{Attempts: 3, Base: 200 * time.Millisecond, Max: time.Second}

// putLoc writes a whole slot (a location of one slot).
func (g *Group) putLoc(ctx context.Context, l gp.Location, b []byte) error {
	return g.putUnit(ctx, l.Disk, l.File, l.Offset/l.Length, b)
}

// Witness returns the name of a shard that the disk at position disk
// must hold if it kept its data, or ok false if the group has written
// nothing it must hold yet: a data disk's slot 0 of its lowest used level
// or its first small page, a parity disk's parity of row 0 of the lowest
// used level or its first small parity page. A disk that answers "not
// found" for its witness lost its data (a wiped or replaced disk its node
// still serves): reading its other units as never written (zeros) would
// rebuild wrong bytes, so a degraded read leaves it out. A unit claimed by
// an export that has not written it yet (or crashed before) has no shard
// either; taking its disk for lost only makes a read use other helpers.
// Slots come first: an export writes its small pages after every row, and
// nearly every object has a chunk of the lowest level, written early.
func (g *Group) Witness(disk int) (name string, ok bool) {
	pg := g.PG
	if disk < 0 || disk >= pg.K+pg.M {
		return "", false
	}
	data := pg.Disks
	if disk < pg.K {
		data = pg.Disks[disk : disk+1]
	}
	small, file := gp.SmallFile, gp.BucketFile
	if disk >= pg.K {
		small, file = gp.SmallParityFile, gp.ParityFile
	}
	for level := range pg.Geo.Levels() {
		for _, d := range data {
			if d.Buckets[level].Next > 0 {
				return g.shardName(disk, file(level), 0), true
			}
		}
	}
	for _, d := range data {
		if d.SmallEnd > 0 {
			return g.shardName(disk, small, 0), true
		}
	}
	return "", false
}
