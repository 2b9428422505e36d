package etcdmeta

// Split manifests (docs/design/meta.md, "Multipart manifests"): a
// multipart object's record at <p>objects/<bucket>/<key> holds its
// manifest without the parts and their number; each part is its own
// record at <p>mparts/<bucket>/<version>/<n>. So no value grows with the
// number of parts, a repair of one part rewrites that part's record (and
// bumps the head's mod revision with an unchanged value, so that watching
// the head watches the parts), and a reader of one part reads only it.
// Records written before layout 3 keep their parts inline and are read as
// they are; the next write of the object splits it.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn"
	"cairn/meta"
)

// mparts is the prefix of the part records of an object version.
// Versions are unique per write, so the key needs no object key.
func (k keys) mparts(bucket, version string) string {
	return k.p + "mparts/" + bucket + "/" + version + "/"
}

func (k keys) mpart(bucket, version string, n int) string {
	return fmt.Sprintf("%s%05d", k.mparts(bucket, version), n)
}

// encoded is an object's records: the head (the manifest record, without
// the parts of a multipart object) and its parts' records by number.
type encoded struct {
	head  string
	parts map[int]string
	bytes int // head and parts together
}

// encodeObject returns m's records.
func encodeObject(m *cairn.Manifest) (encoded, error) {
	if len(m.Parts) == 0 {
		v, err := encodeManifest(m)
		return encoded{head: v, bytes: len(v)}, err
	}
	h := *m
	h.Parts = nil
	b, err := json.Marshal(&h)
	if err != nil {
		return encoded{}, fmt.Errorf("encoding manifest of %s/%s: %w", m.Bucket, m.Key, err)
	}
	e := encoded{head: recordHead(m.Version) + `"manifest":` + string(b) + fmt.Sprintf(`,"parts":%d}`, len(m.Parts)),
		parts: make(map[int]string, len(m.Parts))}
	e.bytes = len(e.head)
	for _, p := range m.Parts {
		pb, err := json.Marshal(p)
		if err != nil {
			return encoded{}, fmt.Errorf("encoding part %d of %s/%s: %w", p.Number, m.Bucket, m.Key, err)
		}
		e.parts[p.Number] = string(pb)
		e.bytes += len(pb)
	}
	if err := meta.CheckManifestBytes(m, e.bytes); err != nil {
		return encoded{}, err
	}
	return e, nil
}

// putObject returns the ops that store m's records (e) and its listing
// record.
func (s *Store) putObject(m *cairn.Manifest, e encoded) []clientv3.Op {
	ops := []clientv3.Op{
		clientv3.OpPut(s.k.object(m.Bucket, m.Key), e.head),
		clientv3.OpPut(s.k.listing(m.Bucket, m.Key), encodeListing(m, e.bytes)),
	}
	for _, p := range m.Parts {
		ops = append(ops, clientv3.OpPut(s.k.mpart(m.Bucket, m.Version, p.Number), e.parts[p.Number]))
	}
	return ops
}

// deleteObject returns the ops that delete the records of the object
// version m and its listing record.
func (s *Store) deleteObject(m *cairn.Manifest) []clientv3.Op {
	ops := []clientv3.Op{clientv3.OpDelete(s.k.object(m.Bucket, m.Key)), clientv3.OpDelete(s.k.listing(m.Bucket, m.Key))}
	if len(m.Parts) > 0 {
		ops = append(ops, clientv3.OpDelete(s.k.mparts(m.Bucket, m.Version), clientv3.WithPrefix()))
	}
	return ops
}

// replaceObject returns the ops that replace the stored version old
// (nil: none) with m (records e): put m's records, and delete what of
// old's m does not overwrite. etcd refuses a Txn that deletes a range
// holding a key it also puts, so old's parts are deleted one by one when
// m is the same version (an update) and as a range otherwise.
func (s *Store) replaceObject(m *cairn.Manifest, e encoded, old *cairn.Manifest) []clientv3.Op {
	ops := s.putObject(m, e)
	switch {
	case old == nil || len(old.Parts) == 0:
	case old.Version != m.Version:
		ops = append(ops, clientv3.OpDelete(s.k.mparts(old.Bucket, old.Version), clientv3.WithPrefix()))
	default:
		for _, p := range old.Parts {
			if _, ok := e.parts[p.Number]; !ok {
				ops = append(ops, clientv3.OpDelete(s.k.mpart(old.Bucket, old.Version, p.Number)))
			}
		}
	}
	return ops
}

// headRecord is a stored head: the manifest record with the number of
// split parts.
type headRecord struct {
	Version  string          `json:"version"`
	Manifest *cairn.Manifest `json:"manifest"`
	Parts    int             `json:"parts,omitempty"`
}

// decodeHead parses the head record of (bucket, key) and returns the
// manifest (its parts, if split, not yet read) and how many parts are
// split off.
func decodeHead(bucket, key string, v []byte) (*cairn.Manifest, int, error) {
	var r headRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, 0, fmt.Errorf("decoding manifest of %s/%s: %w", bucket, key, err)
	}
	m := r.Manifest
	if m == nil || m.Bucket != bucket || m.Key != key || m.Version != r.Version || r.Parts > 0 && len(m.Parts) > 0 {
		return nil, 0, fmt.Errorf("decoding manifest of %s/%s: record does not describe this object version", bucket, key)
	}
	return m, r.Parts, nil
}

// loadManifest decodes the head record rec of (bucket, key), read at
// revision rev, and reads its split parts at that revision (one range
// read: a manifest is at most meta.MaxManifestBytes).
func (s *Store) loadManifest(ctx context.Context, bucket, key string, rec *mvccpb.KeyValue, rev int64) (*cairn.Manifest, error) {
	m, n, err := decodeHead(bucket, key, rec.Value)
	if err != nil || n == 0 {
		return m, err
	}
	prefix := s.k.mparts(bucket, m.Version)
	resp, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(rev))
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) != n {
		return nil, fmt.Errorf("manifest of %s/%s: %d part records, the head says %d", bucket, key, len(resp.Kvs), n)
	}
	m.Parts = make([]cairn.Part, n)
	for i, kv := range resp.Kvs {
		if err := json.Unmarshal(kv.Value, &m.Parts[i]); err != nil {
			return nil, fmt.Errorf("manifest of %s/%s: decoding %q: %w", bucket, key, kv.Key, err)
		}
	}
	return m, nil
}

// ManifestPart implements meta.Store: the head, then the one part record
// at the head's revision.
func (s *Store) ManifestPart(ctx context.Context, bucket, key string, n int) (*cairn.Manifest, error) {
	op := fmt.Sprintf("part %d of object %s/%s", n, bucket, key)
	resp, err := s.getObject(ctx, op, bucket, key)
	if err != nil {
		return nil, err
	}
	m, split, err := decodeHead(bucket, key, resp.Kvs[0].Value)
	if err != nil {
		return nil, err
	}
	if split == 0 { // parts inline (or none)
		return meta.OnlyPart(op, m, n)
	}
	pr, err := s.cli.Get(ctx, s.k.mpart(bucket, m.Version, n), clientv3.WithRev(resp.Header.Revision))
	if err != nil {
		return nil, s.wrap(op, err)
	}
	if len(pr.Kvs) == 0 {
		return nil, fmt.Errorf("%s: %w (no such part)", op, cairn.ErrNotFound)
	}
	var p cairn.Part
	if err := json.Unmarshal(pr.Kvs[0].Value, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	m.Parts = []cairn.Part{p}
	return m, nil
}

// UpdatePart implements meta.Store: it watches the head and the part's
// record; a split object gets the part's record put and the head
// rewritten with its own value (its mod revision is what every write of
// the object's records changes), an object with its parts inline is
// rewritten whole, split.
func (s *Store) UpdatePart(ctx context.Context, bucket, key, version string, p, prev cairn.Part) error {
	op := fmt.Sprintf("update part %d of %s/%s", p.Number, bucket, key)
	if err := meta.CheckPartUpdate(op, p, prev); err != nil {
		return err
	}
	if err := s.live(); err != nil {
		return err
	}
	if strings.Contains(bucket, "/") {
		return fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	pv, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	prv, err := json.Marshal(prev)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	ok, pk, vk := s.k.object(bucket, key), s.k.mpart(bucket, version, p.Number), s.k.version(bucket, key, version)
	d := meta.NewDelta()
	d.Parts([]cairn.Part{p}, 1)
	d.Parts([]cairn.Part{prev}, -1)
	return s.counted(ctx, op, []string{ok, pk, vk}, nil, d, func(r reads) planned {
		hk := ok
		head := r.kv[ok]
		if nc := r.kv[vk]; nc != nil && (head == nil || storedVersion(head.Value) != version) {
			head, hk = nc, vk // a noncurrent version's (docs/design/versioning.md)
		}
		if head == nil {
			return planned{done: true, err: fmt.Errorf("%s: %w", op, cairn.ErrNotFound)}
		}
		m, split, err := decodeHead(bucket, key, head.Value)
		switch {
		case err != nil:
			return planned{done: true, err: err}
		case m.Version != version:
			return planned{done: true, err: fmt.Errorf("%s: %w (version %s is current, not %s)", op, cairn.ErrConflict, m.Version, version)}
		}
		var cur []byte
		if split > 0 {
			if kv := r.kv[pk]; kv != nil {
				cur = kv.Value
			}
		} else if i := partIndex(m.Parts, p.Number); i >= 0 {
			cur, _ = json.Marshal(m.Parts[i]) // a part always marshals
		}
		switch {
		case cur == nil:
			return planned{done: true, err: fmt.Errorf("%s: %w (no such part)", op, cairn.ErrNotFound)}
		case string(cur) == string(pv):
			return planned{done: true} // this very update is stored: a retried update
		case string(cur) != string(prv):
			return planned{done: true, err: fmt.Errorf("%s: %w (the part changed)", op, cairn.ErrConflict)}
		}
		files := cairn.Superseded(m.PartManifest(prev), m.PartManifest(p))
		if split > 0 {
			return s.withDiscard(planned{ops: []clientv3.Op{clientv3.OpPut(pk, string(pv)), clientv3.OpPut(hk, "", clientv3.WithIgnoreValue())}, delta: d},
				cairn.CleanupRepair, bucket, key, files)
		}
		old := *m
		m.Parts = append([]cairn.Part(nil), m.Parts...)
		m.Parts[partIndex(m.Parts, p.Number)] = p
		e, err := encodeObject(m)
		if err != nil {
			return planned{done: true, err: err}
		}
		if hk == vk {
			return planned{done: true, err: fmt.Errorf("%s: %w: a noncurrent version with its parts inline", op, cairn.ErrConflict)}
		}
		return s.withDiscard(planned{ops: s.replaceObject(m, e, &old), delta: d}, cairn.CleanupRepair, bucket, key, files)
	})
}

func partIndex(parts []cairn.Part, n int) int {
	for i := range parts {
		if parts[i].Number == n {
			return i
		}
	}
	return -1
}
