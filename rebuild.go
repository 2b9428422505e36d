package cairn

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// FoundShard is a shard file found on a disk that records its identity:
// what rebuilding the metadata from disks starts from (RebuildManifests).
type FoundShard struct {
	Disk    DiskID
	ID      ShardIdentity
	Size    int64     // content bytes (footer)
	CRC     uint32    // CRC-32C of the content (footer)
	Ident   int       // the identity's length on disk (ShardLoc.Ident)
	Written time.Time // the file's modification time
}

// Rebuilt is what RebuildManifests made of the shards found: a manifest
// per object it could rebuild, and why it passed over the rest.
type Rebuilt struct {
	// Manifests are sorted by bucket and key; their ETags (the object's
	// and each part's) are empty: only the content gives them (the
	// caller reads it back).
	Manifests []*Manifest
	// Skipped explains each version or upload left out: incomplete,
	// inconsistent, of unknown size, or older than the one chosen for its
	// key (then its files are orphans, which scrub collects).
	Skipped []string
}

// RebuildManifests groups the shards found on all disks by object
// version (or upload part) and rebuilds the manifest of each object
// (docs/design/rebuild-meta.md): a version's shards fill the slots of its
// code's rows (slots(code) returns how many a stripe has, or an error for
// an unknown code), spare rows filling the slots of rows that are
// missing; an upload's parts make a multipart object whose version is the
// upload's ID. Of several candidates for one key the most recently
// written wins. A candidate with a slot no shard fills, shards that
// disagree on the layout, or a size the writer did not record is skipped.
// It is pure: the same shards give the same result.
func RebuildManifests(found []FoundShard, slots func(code string) (int, error)) Rebuilt {
	type layoutKey struct {
		bucket, key, version, upload string
		part                         int
	}
	groups := map[layoutKey][]FoundShard{}
	var out Rebuilt
	coded := map[string]bool{} // "bucket/key version": fountain-coded objects met
	for _, f := range found {
		id := f.ID
		if id.Object != "" {
			what := fmt.Sprintf("%s/%s version %s", id.Bucket, id.Key, id.Object)
			if !coded[what] {
				coded[what] = true
				out.Skipped = append(out.Skipped, what+": fountain-coded blocks are not rebuilt")
			}
			continue
		}
		k := layoutKey{id.Bucket, id.Key, id.Version, id.Upload, id.Part}
		groups[k] = append(groups[k], f)
	}
	skip := func(format string, args ...any) { out.Skipped = append(out.Skipped, fmt.Sprintf(format, args...)) }
	type candidate struct {
		m       *Manifest
		written time.Time
		what    string
	}
	byObject := map[[2]string][]candidate{}
	type uploadKey struct{ bucket, key, upload string }
	uploads := map[uploadKey]map[int]candidate{}
	keys := slices.SortedFunc(func(yield func(layoutKey) bool) {
		for k := range groups {
			if !yield(k) {
				return
			}
		}
	}, func(a, b layoutKey) int {
		return cmp.Or(cmp.Compare(a.bucket, b.bucket), cmp.Compare(a.key, b.key), cmp.Compare(a.upload, b.upload),
			cmp.Compare(a.part, b.part), cmp.Compare(a.version, b.version))
	})
	for _, k := range keys {
		what := fmt.Sprintf("%s/%s version %s", k.bucket, k.key, k.version)
		if k.part > 0 {
			what = fmt.Sprintf("%s/%s upload %s part %d version %s", k.bucket, k.key, k.upload, k.part, k.version)
		}
		l, id, written, why := rebuildLayout(groups[k], slots)
		if why != "" {
			skip("%s: %s", what, why)
			continue
		}
		if k.part == 0 {
			m := &Manifest{Bucket: k.bucket, Key: k.key, Version: k.version, Size: id.Size, ContentType: id.ContentType,
				Created: written, Policy: id.Policy, Layout: l}
			byObject[[2]string{k.bucket, k.key}] = append(byObject[[2]string{k.bucket, k.key}], candidate{m, written, what})
			continue
		}
		uk := uploadKey{k.bucket, k.key, k.upload}
		if uploads[uk] == nil {
			uploads[uk] = map[int]candidate{}
		}
		p := &Manifest{Policy: id.Policy, Parts: []Part{{Number: k.part, Version: k.version, Size: id.Size, Created: written, Layout: l}}}
		if prev, ok := uploads[uk][k.part]; ok && !written.After(prev.written) {
			skip("%s: part %d has a newer version (%s)", what, k.part, prev.m.Parts[0].Version)
			continue
		} else if ok {
			skip("%s: part %d has a newer version (%s)", prev.what, k.part, k.version)
		}
		uploads[uk][k.part] = candidate{p, written, what}
	}
	for uk, parts := range uploads {
		m := &Manifest{Bucket: uk.bucket, Key: uk.key, Version: uk.upload, Upload: uk.upload}
		var newest time.Time
		for _, n := range slices.Sorted(func(yield func(int) bool) {
			for n := range parts {
				if !yield(n) {
					return
				}
			}
		}) {
			c := parts[n]
			m.Policy = c.m.Policy
			m.Parts = append(m.Parts, c.m.Parts[0])
			m.Size += c.m.Parts[0].Size
			newest = maxTime(newest, c.written)
		}
		m.Created = newest
		what := fmt.Sprintf("%s/%s upload %s", uk.bucket, uk.key, uk.upload)
		if err := ValidateShardName(ShardName(uk.upload, 0)); err != nil {
			skip("%s: the upload ID cannot be a version", what)
			continue
		}
		byObject[[2]string{uk.bucket, uk.key}] = append(byObject[[2]string{uk.bucket, uk.key}], candidate{m, newest, what})
	}
	for _, k := range slices.SortedFunc(func(yield func([2]string) bool) {
		for k := range byObject {
			if !yield(k) {
				return
			}
		}
	}, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) }) {
		cs := byObject[k]
		slices.SortFunc(cs, func(a, b candidate) int {
			return cmp.Or(b.written.Compare(a.written), cmp.Compare(a.m.Version, b.m.Version))
		})
		out.Manifests = append(out.Manifests, cs[0].m)
		for _, c := range cs[1:] {
			skip("%s: older than %s, chosen for the key", c.what, cs[0].m.Version)
		}
	}
	slices.Sort(out.Skipped)
	return out
}

// rebuildLayout makes the layout of one version's shards: each row in its
// slot (a spare row in the first slot no row fills), the newest file of a
// row found twice.
func rebuildLayout(fs []FoundShard, slots func(string) (int, error)) (l Layout, id ShardIdentity, written time.Time, why string) {
	id = fs[0].ID
	for _, f := range fs[1:] {
		g := f.ID
		if g.Policy != id.Policy || g.Code != id.Code || g.BlockSize != id.BlockSize || g.PG != id.PG || g.Size != id.Size {
			return l, id, written, fmt.Sprintf("shards disagree on the layout (%+v and %+v)", id, g)
		}
	}
	if id.Size < 0 {
		return l, id, written, "the writer did not record the size"
	}
	code := id.Code
	if code == "" {
		code = id.Policy
	}
	n, err := slots(code)
	if err != nil {
		return l, id, written, err.Error()
	}
	byRow := map[int]FoundShard{}
	for _, f := range fs {
		if prev, ok := byRow[f.ID.Row]; !ok || f.Written.After(prev.Written) {
			byRow[f.ID.Row] = f
		}
		written = maxTime(written, f.Written)
	}
	l = Layout{Code: id.Code, BlockSize: id.BlockSize, PG: id.PG, Shards: make([]ShardLoc, n)}
	loc := func(f FoundShard, row int) ShardLoc {
		return ShardLoc{Disk: f.Disk, Row: row, Size: f.Size, CRC: f.CRC, Ident: f.Ident}
	}
	for r := range n {
		if f, ok := byRow[r]; ok {
			l.Shards[r] = loc(f, 0)
		}
	}
	spares := slices.Sorted(func(yield func(int) bool) {
		for r := range byRow {
			if r >= n && !yield(r) {
				return
			}
		}
	})
	var missing []int
	for i := range l.Shards {
		if l.Shards[i].Disk != "" {
			continue
		}
		if len(spares) > 0 {
			l.Shards[i] = loc(byRow[spares[0]], spares[0])
			spares = spares[1:]
			continue
		}
		missing = append(missing, i)
	}
	if len(missing) > 0 {
		return l, id, written, fmt.Sprintf("no file of rows %v found", missing)
	}
	return l, id, written, ""
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
