package cold

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"cairn"
	"cairn/layout/gp"
	"cairn/meta"
)

// Meta is what the cold tier keeps in the metadata store: its own records
// (group state, intents, the staging queue) and the objects' manifests,
// which hold the index records. meta.Store satisfies it.
type Meta interface {
	ColdGet(ctx context.Context, key string) ([]byte, error)
	ColdPage(ctx context.Context, prefix, after string, limit int) ([]meta.ColdRecord, bool, error)
	ColdUpdate(ctx context.Context, ops []meta.ColdOp) error
	Manifest(ctx context.Context, bucket, key string) (*cairn.Manifest, error)
	UpdateManifest(ctx context.Context, m, prev *cairn.Manifest) error
	ObjectVersion(ctx context.Context, bucket, key, id string) (cairn.ObjectVersion, error)
	Disks(ctx context.Context) ([]cairn.Disk, error)
}

// FreeChunk is the number of slots one free-slot bitmap record covers
// (FreeChunk/8 bytes): a group's state is a header whose size does not
// grow with the data, and bitmap records only for the chunks of slots
// that hold a free slot (docs/design/cold.md, "Persistence").
const FreeChunk = 1 << 15

// Keys of the cold tier's records.
func groupKey(id string) string   { return "groups/" + id }
func freePrefix(id string) string { return "groups/" + id + "/free/" }
func freeKey(id string, disk, level int, chunk uint32) string {
	return fmt.Sprintf("%s%03d/%02d/%06d", freePrefix(id), disk, level, chunk)
}

// header is the group's state record (groups/<id>): everything but the
// free slots, a few dozen bytes per data disk.
type header struct {
	Policy string         `json:"policy"` // gp.Policy.String
	Disks  []cairn.DiskID `json:"disks"`  // K data disks, then M parity disks
	Gen    uint64         `json:"gen"`    // +1 with every update
	Data   []diskHeader   `json:"data"`   // per data disk
}

type diskHeader struct {
	Used      int64    `json:"used"`
	SmallEnd  int64    `json:"small_end"`
	SmallFree int64    `json:"small_free,omitempty"`
	Next      []uint32 `json:"next"` // per level: the bucket's Next
}

// State is a group as stored: the Group to work with and what the store
// held when it was loaded, for the next compare-and-swap.
type State struct {
	*Group
	Policy gp.Policy
	raw    []byte            // the header record as loaded (nil: new group)
	gen    uint64            // its generation
	free   map[string][]byte // the free bitmaps as loaded, by key
}

// NewState returns the state of a new, empty group on disks (not stored
// until Save).
func NewState(id string, p gp.Policy, disks []cairn.DiskID, nodes Disks) (*State, error) {
	chunk, rs, err := codes(p)
	if err != nil {
		return nil, err
	}
	g, err := NewGroup(id, p.Geometry, disks, nodes, chunk, rs)
	if err != nil {
		return nil, err
	}
	return &State{Group: g, Policy: p, free: map[string][]byte{}}, nil
}

// StateReader is what LoadState reads a group's state from; meta.Store
// (and Meta) satisfy it.
type StateReader interface {
	ColdGet(ctx context.Context, key string) ([]byte, error)
	ColdPage(ctx context.Context, prefix, after string, limit int) ([]meta.ColdRecord, bool, error)
}

// LoadState reads a group's state: its header and free-slot bitmaps.
// cairn.ErrNotFound if the group was never saved; cairn.ErrCorrupt if a
// record does not decode.
func LoadState(ctx context.Context, m StateReader, id string, nodes Disks) (*State, error) {
	h, raw, err := loadHeader(ctx, m, id)
	if err != nil {
		return nil, err
	}
	p, err := gp.ParsePolicy(h.Policy)
	if err != nil {
		return nil, fmt.Errorf("%w: cold group %s: %v", cairn.ErrCorrupt, id, err)
	}
	st, err := NewState(id, p, h.Disks, nodes)
	if err != nil {
		return nil, fmt.Errorf("%w: cold group %s: %v", cairn.ErrCorrupt, id, err)
	}
	pg := st.PG
	if len(h.Data) != pg.K {
		return nil, fmt.Errorf("%w: cold group %s: %d data disks' state, want %d", cairn.ErrCorrupt, id, len(h.Data), pg.K)
	}
	for d, dh := range h.Data {
		if len(dh.Next) != pg.Geo.Levels() {
			return nil, fmt.Errorf("%w: cold group %s: disk %d has %d levels, want %d", cairn.ErrCorrupt, id, d, len(dh.Next), pg.Geo.Levels())
		}
		disk := &pg.Disks[d]
		disk.Used, disk.SmallEnd, disk.SmallFree = dh.Used, dh.SmallEnd, dh.SmallFree
		for l, n := range dh.Next {
			disk.Buckets[l].Next = n
		}
	}
	st.raw, st.gen = raw, h.Gen
	after := ""
	for {
		recs, more, err := m.ColdPage(ctx, freePrefix(id), after, meta.MaxPage)
		if err != nil {
			return nil, fmt.Errorf("cold group %s: free slots: %w", id, err)
		}
		for _, r := range recs {
			if err := st.loadFree(r); err != nil {
				return nil, fmt.Errorf("%w: cold group %s: %v", cairn.ErrCorrupt, id, err)
			}
			after = r.Key
		}
		if !more || len(recs) == 0 {
			break
		}
	}
	return st, nil
}

// LoadDisks returns the disks of group id as stored: one read of its
// header, for a reader that holds the rest of the state and only asks
// whether a rebuild moved a disk.
func LoadDisks(ctx context.Context, m StateReader, id string) ([]cairn.DiskID, error) {
	h, _, err := loadHeader(ctx, m, id)
	return h.Disks, err
}

// loadHeader reads and decodes group id's header record.
func loadHeader(ctx context.Context, m StateReader, id string) (header, []byte, error) {
	raw, err := m.ColdGet(ctx, groupKey(id))
	if err != nil {
		return header{}, nil, fmt.Errorf("cold group %s: %w", id, err)
	}
	var h header
	if err := json.Unmarshal(raw, &h); err != nil {
		return header{}, nil, fmt.Errorf("%w: cold group %s: %v", cairn.ErrCorrupt, id, err)
	}
	return h, raw, nil
}

// loadFree adds the free slots of one bitmap record. Records come in key
// order, so each bucket's Free stays ascending.
func (st *State) loadFree(r meta.ColdRecord) error {
	f := strings.Split(strings.TrimPrefix(r.Key, freePrefix(st.ID)), "/")
	if len(f) != 3 {
		return fmt.Errorf("free-slot record %q", r.Key)
	}
	disk, err1 := strconv.Atoi(f[0])
	level, err2 := strconv.Atoi(f[1])
	chunk, err3 := strconv.ParseUint(f[2], 10, 32)
	if err := errors.Join(err1, err2, err3); err != nil || disk >= st.PG.K || level >= st.PG.Geo.Levels() || len(r.Value) > FreeChunk/8 {
		return fmt.Errorf("free-slot record %q (%d bytes)", r.Key, len(r.Value))
	}
	b := &st.PG.Disks[disk].Buckets[level]
	for i, by := range r.Value {
		for by != 0 {
			bit := bits.TrailingZeros8(by)
			by &^= 1 << bit
			s := uint32(chunk)*FreeChunk + uint32(i*8+bit)
			if s >= b.Next {
				return fmt.Errorf("free slot %d of disk %d level %d at or past the bucket's end %d", s, disk, level, b.Next)
			}
			b.Free = append(b.Free, s)
		}
	}
	st.free[r.Key] = r.Value
	return nil
}

// bitmaps returns the free-slot bitmap records of the group's current
// state (trailing zero bytes trimmed; chunks without a free slot absent).
func (st *State) bitmaps() map[string][]byte {
	out := map[string][]byte{}
	for d, disk := range st.PG.Disks {
		for l, b := range disk.Buckets {
			for _, s := range b.Free {
				k := freeKey(st.ID, d, l, s/FreeChunk)
				bm := out[k]
				i := int(s%FreeChunk) / 8
				if len(bm) <= i {
					bm = append(bm, make([]byte, i+1-len(bm))...)
				}
				bm[i] |= 1 << (s % 8)
				out[k] = bm
			}
		}
	}
	return out
}

// encodeHeader returns the header record of the current state at
// generation gen.
func (st *State) encodeHeader(gen uint64) ([]byte, error) {
	h := header{Policy: st.Policy.String(), Disks: st.Disks, Gen: gen}
	for _, d := range st.PG.Disks {
		dh := diskHeader{Used: d.Used, SmallEnd: d.SmallEnd, SmallFree: d.SmallFree}
		for _, b := range d.Buckets {
			dh.Next = append(dh.Next, b.Next)
		}
		h.Data = append(h.Data, dh)
	}
	return json.Marshal(h)
}

// ErrTooManyChanges: one save would change more records than a metadata
// transaction holds (meta.MaxColdOps); the caller saves smaller batches.
var ErrTooManyChanges = errors.New("cold: too many records changed at once")

// Save stores the group's current state by compare-and-swap against the
// state it was loaded (or last saved) with, together with extra writes
// (an intent, queue entries) in the same transaction. cairn.ErrConflict
// if another writer saved the group meanwhile: the caller reloads.
func (st *State) Save(ctx context.Context, m Meta, extra ...meta.ColdOp) error {
	raw, err := st.encodeHeader(st.gen + 1)
	if err != nil {
		return err
	}
	ops := []meta.ColdOp{{Key: groupKey(st.ID), Value: raw, Check: true, Prev: st.raw}}
	now := st.bitmaps()
	for _, k := range sortedKeys(now, st.free) {
		if !bytes.Equal(now[k], st.free[k]) {
			ops = append(ops, meta.ColdOp{Key: k, Value: now[k]}) // nil: deleted
		}
	}
	ops = append(ops, extra...)
	if len(ops) > meta.MaxColdOps {
		return fmt.Errorf("%w: cold group %s: %d records", ErrTooManyChanges, st.ID, len(ops))
	}
	if err := m.ColdUpdate(ctx, ops); err != nil {
		return fmt.Errorf("save cold group %s: %w", st.ID, err)
	}
	st.raw, st.gen, st.free = raw, st.gen+1, now
	return nil
}

// sortedKeys returns the keys of both maps, sorted, each once.
func sortedKeys(a, b map[string][]byte) []string {
	var out []string
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
