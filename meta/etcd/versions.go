package etcdmeta

// Versions (docs/design/versioning.md): the current object stays at
// <p>objects/<bucket>/<key>; noncurrent versions and delete markers are
// records at <p>versions/<bucket>/<key>\x00<version> (an object's head
// record exactly as it was at objects/, its split parts staying at
// mparts/, keyed by version), and <p>nullv/<bucket>/<key> holds the
// version of the key's noncurrent null version. Every write watches the
// bucket, object and null pointer keys and compares the version records
// it read (planned.cmps).

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

func (k keys) versions(bucket string) string { return k.p + "versions/" + bucket + "/" }

// keyVersions is the prefix of key's version records: the key with each
// NUL escaped as NUL 0x01, then NUL NUL (an order-preserving encoding:
// keys may hold NUL).
func (k keys) keyVersions(bucket, key string) string {
	return k.versions(bucket) + escKey(key) + "\x00\x00"
}

func escKey(key string) string { return strings.ReplaceAll(key, "\x00", "\x00\x01") }

// afterKeyVersions is the smallest string after every version record of
// key.
func (k keys) afterKeyVersions(bucket, key string) string {
	return k.versions(bucket) + escKey(key) + "\x00\x01"
}

// versionKeyOf splits a version record's key into the object key and
// version (ok false if it is no such key).
func (k keys) versionKeyOf(bucket, rec string) (key, version string, ok bool) {
	rest, ok := strings.CutPrefix(rec, k.versions(bucket))
	i := strings.LastIndex(rest, "\x00\x00")
	if !ok || i < 0 {
		return "", "", false
	}
	return strings.ReplaceAll(rest[:i], "\x00\x01", "\x00"), rest[i+2:], true
}
func (k keys) version(bucket, key, v string) string { return k.keyVersions(bucket, key) + v }
func (k keys) nullv(bucket, key string) string      { return k.p + "nullv/" + bucket + "/" + key }

// markerRecord is the stored value of a delete marker's version record.
type markerRecord struct {
	Version string              `json:"version"`
	Marker  *cairn.DeleteMarker `json:"marker"`
}

// decodeMarker returns the marker of a version record, or nil if it is
// an object's head record.
func decodeMarker(key string, v []byte) (*cairn.DeleteMarker, error) {
	if !strings.Contains(string(v), `"marker":`) {
		return nil, nil
	}
	var r markerRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("decoding version record of %s: %w", key, err)
	}
	if r.Marker == nil { // an object whose manifest merely contains the text
		return nil, nil
	}
	return r.Marker, nil
}

// versionOf decodes a version record of (bucket, key), read at rev: a
// marker, or an object with its whole manifest when whole (else its
// head, parts not read).
func (s *Store) versionOf(ctx context.Context, bucket, key string, kv *mvccpb.KeyValue, rev int64, whole bool) (cairn.ObjectVersion, error) {
	mk, err := decodeMarker(key, kv.Value)
	if err != nil {
		return cairn.ObjectVersion{}, err
	}
	if mk != nil {
		return meta.MarkerVersionOf(key, *mk), nil
	}
	var m *cairn.Manifest
	if whole {
		m, err = s.loadManifest(ctx, bucket, key, kv, rev)
	} else {
		m, _, err = decodeHead(bucket, key, kv.Value)
	}
	if err != nil {
		return cairn.ObjectVersion{}, err
	}
	v := meta.ManifestVersionOf(m)
	if !whole {
		v.Manifest = nil
	}
	return v, nil
}

// recVersion returns the version a version record's key names.
func recVersion(kv *mvccpb.KeyValue) string {
	k := string(kv.Key)
	return k[strings.LastIndex(k, "\x00\x00")+2:]
}

// bucketVersioning returns the versioning status of a bucket record.
func bucketVersioning(rec *mvccpb.KeyValue) string {
	var b cairn.Bucket
	if rec == nil || json.Unmarshal(rec.Value, &b) != nil {
		return ""
	}
	return b.Versioning
}

// firstVersion reads the first version record of key at rev (nil: none).
func (s *Store) firstVersion(ctx context.Context, bucket, key string, rev int64, n int64) ([]*mvccpb.KeyValue, error) {
	resp, err := s.cli.Get(ctx, s.k.keyVersions(bucket, key), clientv3.WithPrefix(), clientv3.WithLimit(n), clientv3.WithRev(rev))
	if err != nil {
		return nil, err
	}
	return resp.Kvs, nil
}

// getAt reads one key at rev (nil: absent).
func (s *Store) getAt(ctx context.Context, key string, rev int64) (*mvccpb.KeyValue, error) {
	resp, err := s.cli.Get(ctx, key, clientv3.WithRev(rev))
	if err != nil || len(resp.Kvs) == 0 {
		return nil, err
	}
	return resp.Kvs[0], nil
}

// dropVersion adds to p the removal of version record kv of key (read at
// rev): the record, an object's split parts, its files (queued) and
// counters; and its null pointer unless keepNull. A version whose Object
// Lock forbids it (bypass: bypassing governance) is not dropped: the
// plan fails with ErrLocked.
func (s *Store) dropVersion(ctx context.Context, p planned, bucket, key string, kv *mvccpb.KeyValue, rev int64, keepNull, bypass bool) (planned, cairn.ObjectVersion) {
	v, err := s.versionOf(ctx, bucket, key, kv, rev, true)
	if err != nil {
		return planned{done: true, err: err}, v
	}
	if v.Manifest != nil {
		if err := v.Manifest.CheckDelete(s.now(), bypass); err != nil {
			return planned{done: true, err: err}, v
		}
	}
	p.ops = append(p.ops, clientv3.OpDelete(string(kv.Key)))
	p.cmps = append(p.cmps, unchanged(string(kv.Key), kv))
	if !v.Versioned && !keepNull {
		p.ops = append(p.ops, clientv3.OpDelete(s.k.nullv(bucket, key)))
	}
	if v.Manifest == nil {
		return p, v
	}
	if len(v.Manifest.Parts) > 0 {
		p.ops = append(p.ops, clientv3.OpDelete(s.k.mparts(bucket, v.Version), clientv3.WithPrefix()))
	}
	p.delta.Object(v.Manifest, -1)
	return s.withDiscard(p, cairn.CleanupDelete, bucket, key, v.Manifest.Files()), v
}

// dropNull adds to p the removal of key's noncurrent null version, if
// the null pointer nk (as read in r) names one.
func (s *Store) dropNull(ctx context.Context, p planned, r reads, bucket, key string, keepNull bool) planned {
	nk := s.k.nullv(bucket, key)
	ptr := r.kv[nk]
	if ptr == nil {
		return p
	}
	kv, err := s.getAt(ctx, s.k.version(bucket, key, string(ptr.Value)), r.rev)
	if err != nil {
		return planned{done: true, err: err}
	}
	if kv == nil { // a dangling pointer: drop it
		if !keepNull {
			p.ops = append(p.ops, clientv3.OpDelete(nk))
		}
		return p
	}
	p, _ = s.dropVersion(ctx, p, bucket, key, kv, r.rev, keepNull, false)
	return p
}

// commitPlan is the write of CommitManifest and CompleteUpload that makes
// m (records e) current over old (nil: none; its record rec), read in r
// with the bucket record bk (docs/design/versioning.md, "Writes"); extra
// are ops of the caller's and reason the cleanup reason of old's files.
func (s *Store) commitPlan(ctx context.Context, r reads, bk string, m *cairn.Manifest, e encoded, old *cairn.Manifest, rec *mvccpb.KeyValue, extra []clientv3.Op) planned {
	d := meta.NewDelta()
	d.Object(m, 1)
	p := planned{delta: d, ops: extra}
	versioning := bucketVersioning(r.kv[bk])
	if versioning != "" && !m.Versioned {
		if p = s.dropNull(ctx, p, r, m.Bucket, m.Key, false); p.done {
			return p
		}
	}
	if versioning != "" && old != nil && (old.Versioned || m.Versioned) && old.Version != m.Version {
		p.ops = append(p.ops, s.putObject(m, e)...)
		p.ops = append(p.ops, clientv3.OpPut(s.k.version(m.Bucket, m.Key, old.Version), string(rec.Value)))
		if !old.Versioned {
			p.ops = append(p.ops, clientv3.OpPut(s.k.nullv(m.Bucket, m.Key), old.Version))
		}
		return p
	}
	if old != nil && old.Version != m.Version {
		if err := old.CheckDelete(s.now(), false); err != nil {
			return planned{done: true, err: fmt.Errorf("commit %s/%s: %w", m.Bucket, m.Key, err)}
		}
	}
	d.Object(old, -1)
	p.ops = append(p.ops, s.replaceObject(m, e, old)...)
	return s.withDiscard(p, cairn.CleanupOverwrite, m.Bucket, m.Key, cairn.Superseded(old, m))
}

// SetBucketVersioning implements meta.Store.
func (s *Store) SetBucketVersioning(ctx context.Context, name, status string) error {
	if err := meta.CheckVersioning(status); err != nil {
		return err
	}
	if err := s.live(); err != nil {
		return err
	}
	op := fmt.Sprintf("set versioning of bucket %s", name)
	if strings.Contains(name, "/") {
		return fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	defer s.forgetBucket(name)
	return s.update(ctx, op, s.k.bucket(name), func(old []byte) (any, error) {
		if old == nil {
			return nil, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
		}
		var b cairn.Bucket
		if err := json.Unmarshal(old, &b); err != nil {
			return nil, err
		}
		if err := meta.CheckVersioningChange(b, status); err != nil {
			return nil, err
		}
		b.Versioning = status
		return b, nil
	})
}

// ObjectVersion implements meta.Store.
func (s *Store) ObjectVersion(ctx context.Context, bucket, key, id string) (cairn.ObjectVersion, error) {
	op := fmt.Sprintf("version %q of %s/%s", id, bucket, key)
	if err := meta.CheckVersionID(op, id, true); err != nil {
		return cairn.ObjectVersion{}, err
	}
	if err := s.live(); err != nil {
		return cairn.ObjectVersion{}, err
	}
	if strings.Contains(bucket, "/") {
		return cairn.ObjectVersion{}, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	ok, nk := s.k.object(bucket, key), s.k.nullv(bucket, key)
	resp, err := s.cli.Txn(ctx).Then(clientv3.OpGet(ok), clientv3.OpGet(nk),
		clientv3.OpGet(s.k.keyVersions(bucket, key), clientv3.WithPrefix(), clientv3.WithLimit(1))).Commit()
	if err != nil {
		return cairn.ObjectVersion{}, s.wrap(op, err)
	}
	get := func(i int) *mvccpb.KeyValue {
		if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) > 0 {
			return kvs[0]
		}
		return nil
	}
	rev := resp.Header.Revision
	cur, ptr, first := get(0), get(1), get(2)
	notFound := fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	if cur != nil {
		h, _, err := decodeHead(bucket, key, cur.Value)
		if err != nil {
			return cairn.ObjectVersion{}, s.wrap(op, err)
		}
		if id == "" || h.Version == id || id == cairn.NullVersionID && !h.Versioned {
			v, err := s.versionOf(ctx, bucket, key, cur, rev, true)
			if err != nil {
				return cairn.ObjectVersion{}, s.wrap(op, err)
			}
			v.Latest = true
			return v, nil
		}
	}
	var rec *mvccpb.KeyValue
	switch {
	case id == "":
		rec = first
		if rec != nil {
			if mk, _ := decodeMarker(key, rec.Value); mk == nil {
				rec = nil // an object that is latest is current: cannot be
			}
		}
	case id == cairn.NullVersionID && ptr == nil:
	case id == cairn.NullVersionID:
		id = string(ptr.Value)
		fallthrough
	default:
		if rec, err = s.getAt(ctx, s.k.version(bucket, key, id), rev); err != nil {
			return cairn.ObjectVersion{}, s.wrap(op, err)
		}
	}
	if rec == nil {
		return cairn.ObjectVersion{}, notFound
	}
	v, err := s.versionOf(ctx, bucket, key, rec, rev, true)
	if err != nil {
		return cairn.ObjectVersion{}, s.wrap(op, err)
	}
	v.Latest = cur == nil && first != nil && string(first.Key) == string(rec.Key)
	return v, nil
}

// PutDeleteMarker implements meta.Store.
func (s *Store) PutDeleteMarker(ctx context.Context, bucket, key string, d cairn.DeleteMarker) (cairn.ObjectVersion, error) {
	op := fmt.Sprintf("delete marker for %s/%s", bucket, key)
	if err := meta.CheckMarker(key, d); err != nil {
		return cairn.ObjectVersion{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := s.live(); err != nil {
		return cairn.ObjectVersion{}, err
	}
	if strings.Contains(bucket, "/") {
		return cairn.ObjectVersion{}, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	bk, ok, nk := s.k.bucket(bucket), s.k.object(bucket, key), s.k.nullv(bucket, key)
	var out cairn.DeleteMarker
	err := s.counted(ctx, op, []string{bk, ok, nk}, nil, nil, func(r reads) planned {
		switch {
		case r.kv[bk] == nil:
			return planned{done: true, err: fmt.Errorf("%s: bucket: %w", op, cairn.ErrNotFound)}
		case bucketVersioning(r.kv[bk]) == "":
			return planned{done: true, err: fmt.Errorf("%s: %w: bucket was never versioned", op, cairn.ErrInvalid)}
		}
		p := planned{delta: meta.NewDelta()}
		if !d.Versioned {
			if p = s.dropNull(ctx, p, r, bucket, key, true); p.done {
				return p
			}
		}
		firsts, err := s.firstVersion(ctx, bucket, key, r.rev, 1)
		if err != nil {
			return planned{done: true, err: s.wrap(op, err)}
		}
		first := ""
		if len(firsts) > 0 {
			first = recVersion(firsts[0])
		}
		if rec := r.kv[ok]; rec != nil {
			cur, err := s.loadManifest(ctx, bucket, key, rec, r.rev)
			if err != nil {
				return planned{done: true, err: s.wrap(op, err)}
			}
			if cur.Versioned || d.Versioned {
				p.ops = append(p.ops, clientv3.OpDelete(ok), clientv3.OpDelete(s.k.listing(bucket, key)),
					clientv3.OpPut(s.k.version(bucket, key, cur.Version), string(rec.Value)))
				if !cur.Versioned {
					p.ops = append(p.ops, clientv3.OpPut(nk, cur.Version))
				}
				if first == "" || cur.Version < first {
					first = cur.Version
				}
			} else {
				if err := cur.CheckDelete(s.now(), false); err != nil {
					return planned{done: true, err: fmt.Errorf("%s: %w", op, err)}
				}
				p.ops = append(p.ops, s.deleteObject(cur)...)
				p.delta.Object(cur, -1)
				if p = s.withDiscard(p, cairn.CleanupDelete, bucket, key, cur.Files()); p.done {
					return p
				}
			}
		}
		out = d
		out.Version = meta.MarkerVersion(d.Version, first)
		mv, err := json.Marshal(markerRecord{Version: out.Version, Marker: &out})
		if err != nil {
			return planned{done: true, err: err}
		}
		mk := s.k.version(bucket, key, out.Version)
		p.ops = append(p.ops, clientv3.OpPut(mk, string(mv)))
		p.cmps = append(p.cmps, unchanged(mk, nil))
		if !d.Versioned {
			p.ops = append(p.ops, clientv3.OpPut(nk, out.Version))
		}
		return p
	})
	if err != nil {
		return cairn.ObjectVersion{}, err
	}
	v := meta.MarkerVersionOf(key, out)
	v.Latest = true
	return v, nil
}

// DeleteVersion implements meta.Store.
func (s *Store) DeleteVersion(ctx context.Context, bucket, key, id string) (cairn.ObjectVersion, error) {
	return s.deleteVersion(ctx, bucket, key, id, false)
}

// DeleteVersionBypass implements meta.Store.
func (s *Store) DeleteVersionBypass(ctx context.Context, bucket, key, id string) (cairn.ObjectVersion, error) {
	return s.deleteVersion(ctx, bucket, key, id, true)
}

// deleteVersion is DeleteVersion, bypassing governance if bypass. The
// Object Lock check reads the version's record in the plan whose
// transaction compares it, so no change slips in between.
func (s *Store) deleteVersion(ctx context.Context, bucket, key, id string, bypass bool) (cairn.ObjectVersion, error) {
	op := fmt.Sprintf("delete version %q of %s/%s", id, bucket, key)
	if err := meta.CheckVersionID(op, id, false); err != nil {
		return cairn.ObjectVersion{}, err
	}
	if err := s.live(); err != nil {
		return cairn.ObjectVersion{}, err
	}
	if strings.Contains(bucket, "/") {
		return cairn.ObjectVersion{}, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	ok, nk := s.k.object(bucket, key), s.k.nullv(bucket, key)
	var out cairn.ObjectVersion
	err := s.counted(ctx, op, []string{ok, nk}, nil, nil, func(r reads) planned {
		notFound := planned{done: true, err: fmt.Errorf("%s: %w", op, cairn.ErrNotFound)}
		p := planned{delta: meta.NewDelta()}
		cur := r.kv[ok]
		var target *mvccpb.KeyValue // a version record; nil: the current object
		if cur != nil {
			h, _, err := decodeHead(bucket, key, cur.Value)
			if err != nil {
				return planned{done: true, err: s.wrap(op, err)}
			}
			if h.Version != id && (id != cairn.NullVersionID || h.Versioned) {
				cur = nil
			}
		}
		var err error
		if cur == nil {
			vid := id
			if id == cairn.NullVersionID {
				if r.kv[nk] == nil {
					return notFound
				}
				vid = string(r.kv[nk].Value)
			}
			if target, err = s.getAt(ctx, s.k.version(bucket, key, vid), r.rev); err != nil {
				return planned{done: true, err: s.wrap(op, err)}
			} else if target == nil {
				return notFound
			}
		}
		firsts, err := s.firstVersion(ctx, bucket, key, r.rev, 2)
		if err != nil {
			return planned{done: true, err: s.wrap(op, err)}
		}
		// next: the version record that becomes latest, if the latest goes.
		var next *mvccpb.KeyValue
		latest := cur != nil
		if cur == nil {
			latest = r.kv[ok] == nil && len(firsts) > 0 && string(firsts[0].Key) == string(target.Key)
		}
		for _, kv := range firsts {
			if latest && next == nil && (target == nil || string(kv.Key) != string(target.Key)) {
				next = kv
			}
		}
		if next != nil {
			if mk, err := decodeMarker(key, next.Value); err != nil {
				return planned{done: true, err: s.wrap(op, err)}
			} else if mk != nil {
				next = nil // a marker stays where it is, latest now
			}
		}
		if cur != nil {
			m, err := s.loadManifest(ctx, bucket, key, cur, r.rev)
			if err != nil {
				return planned{done: true, err: s.wrap(op, err)}
			}
			if err := m.CheckDelete(s.now(), bypass); err != nil {
				return planned{done: true, err: fmt.Errorf("%s: %w", op, err)}
			}
			out = meta.ManifestVersionOf(m)
			p.delta.Object(m, -1)
			if next == nil {
				p.ops = append(p.ops, s.deleteObject(m)...)
			} else if len(m.Parts) > 0 { // next's puts replace the records
				p.ops = append(p.ops, clientv3.OpDelete(s.k.mparts(bucket, m.Version), clientv3.WithPrefix()))
			}
			if p = s.withDiscard(p, cairn.CleanupDelete, bucket, key, m.Files()); p.done {
				return p
			}
		} else {
			// The null pointer goes with the null version, unless the
			// promoted next version is the null one (it cannot be both).
			if p, out = s.dropVersion(ctx, p, bucket, key, target, r.rev, false, bypass); p.done {
				if p.err != nil {
					p.err = fmt.Errorf("%s: %w", op, p.err)
				}
				return p
			}
		}
		out.Latest = latest
		if next != nil {
			return s.promote(ctx, op, p, r.rev, bucket, key, next)
		}
		return p
	})
	if err != nil {
		return cairn.ObjectVersion{}, err
	}
	return out, nil
}

// promote adds to p the move of version record next (an object's, read
// at rev) back to current: what follows when the latest version goes
// and next is the first left. The ops of p must not touch the object
// and listing keys (they are put here).
func (s *Store) promote(ctx context.Context, op string, p planned, rev int64, bucket, key string, next *mvccpb.KeyValue) planned {
	m, err := s.loadManifest(ctx, bucket, key, next, rev)
	if err != nil {
		return planned{done: true, err: s.wrap(op, err)}
	}
	e, err := encodeObject(m)
	if err != nil {
		return planned{done: true, err: err}
	}
	p.ops = append(p.ops, clientv3.OpPut(s.k.object(bucket, key), string(next.Value)),
		clientv3.OpPut(s.k.listing(bucket, key), encodeListing(m, e.bytes)), clientv3.OpDelete(string(next.Key)))
	p.cmps = append(p.cmps, unchanged(string(next.Key), next))
	if !m.Versioned {
		p.ops = append(p.ops, clientv3.OpDelete(s.k.nullv(bucket, key)))
	}
	return p
}

// nextObject returns the first version record of key at rev if it is an
// object's (nil: none, or a marker, which stays where it is).
func (s *Store) nextObject(ctx context.Context, bucket, key string, rev int64) (*mvccpb.KeyValue, error) {
	firsts, err := s.firstVersion(ctx, bucket, key, rev, 1)
	if err != nil || len(firsts) == 0 {
		return nil, err
	}
	if mk, err := decodeMarker(key, firsts[0].Value); err != nil || mk != nil {
		return nil, err
	}
	return firsts[0], nil
}

// ListVersions implements meta.Store: one Txn reads the current
// objects' listing records and the version records after the position,
// limit+1 of each, at one revision, and merges them.
func (s *Store) ListVersions(ctx context.Context, bucket, prefix, keyMarker, afterVersion string, limit int) ([]cairn.ObjectVersion, bool, error) {
	op := "list versions of bucket " + bucket
	if err := meta.CheckPageLimit(op, limit); err != nil {
		return nil, false, err
	}
	if err := s.live(); err != nil {
		return nil, false, err
	}
	if strings.Contains(bucket, "/") {
		return nil, false, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	cfrom, cend := keyRange(s.k.listings(bucket), prefix, keyMarker)
	vb := s.k.versions(bucket)
	var vfrom string
	switch {
	case afterVersion == "":
		vfrom = s.k.afterKeyVersions(bucket, keyMarker)
	default:
		vfrom = s.k.keyVersions(bucket, keyMarker) // afterVersion is decided below
	}
	vfrom = max(vfrom, vb+escKey(prefix))
	vend := clientv3.GetPrefixRangeEnd(vb + escKey(prefix))
	n := int64(limit + 1)
	then := []clientv3.Op{clientv3.OpGet(s.k.bucket(bucket), clientv3.WithCountOnly()), clientv3.OpGet(s.k.listing(bucket, keyMarker))}
	if cfrom < cend {
		then = append(then, clientv3.OpGet(cfrom, clientv3.WithRange(cend), clientv3.WithLimit(n)))
	}
	resp, err := s.cli.Txn(ctx).Then(then...).Commit()
	if err != nil {
		return nil, false, s.wrap(op, err)
	}
	if resp.Responses[0].GetResponseRange().Count == 0 {
		return nil, false, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	rev := resp.Header.Revision
	curAtMarker := ""
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		lr, err := decodeListing(op, s.k.listings(bucket), kvs[0])
		if err != nil {
			return nil, false, err
		}
		curAtMarker = lr.Version
	}
	if afterVersion != "" && afterVersion != curAtMarker {
		vfrom = max(vfrom, s.k.version(bucket, keyMarker, afterVersion)+"\x00")
	}
	var curs, recs []cairn.ObjectVersion
	more := false
	if len(resp.Responses) > 2 {
		rr := resp.Responses[2].GetResponseRange()
		more = rr.More
		for _, kv := range rr.Kvs {
			lr, err := decodeListing(op, s.k.listings(bucket), kv)
			if err != nil {
				return nil, false, err
			}
			v := meta.InfoVersion(lr.ObjectInfo)
			v.Latest = true
			curs = append(curs, v)
		}
	}
	if vfrom < vend {
		vr, err := s.cli.Get(ctx, vfrom, clientv3.WithRange(vend), clientv3.WithLimit(n), clientv3.WithRev(rev))
		if err != nil {
			return nil, false, s.wrap(op, err)
		}
		more = more || vr.More
		for i, kv := range vr.Kvs {
			key, _, okKey := s.k.versionKeyOf(bucket, string(kv.Key))
			if !okKey {
				return nil, false, fmt.Errorf("%s: a version record %q", op, kv.Key)
			}
			v, err := s.versionOf(ctx, bucket, key, kv, rev, false)
			if err != nil {
				return nil, false, s.wrap(op, err)
			}
			// Latest: a marker first among its key's records with no
			// current object (a key's first record is latest only then).
			if v.Marker && (i == 0 || recs[i-1].Key != key) {
				if i > 0 || key != keyMarker || afterVersion == "" || afterVersion == curAtMarker {
					v.Latest = s.noCurrent(ctx, bucket, key, rev, curs)
				}
			}
			recs = append(recs, v)
		}
	}
	var out []cairn.ObjectVersion
	i, j := 0, 0
	for (i < len(curs) || j < len(recs)) && len(out) < limit {
		if j == len(recs) || i < len(curs) && curs[i].Key <= recs[j].Key {
			out = append(out, curs[i])
			i++
		} else {
			out = append(out, recs[j])
			j++
		}
	}
	return out, more || i < len(curs) || j < len(recs), nil
}

func hasKey(vs []cairn.ObjectVersion, key string) bool {
	for _, v := range vs {
		if v.Key == key {
			return true
		}
	}
	return false
}

// noCurrent reports whether key has no current object at rev (curs: the
// listing records read, which may not reach key).
func (s *Store) noCurrent(ctx context.Context, bucket, key string, rev int64, curs []cairn.ObjectVersion) bool {
	if hasKey(curs, key) {
		return false
	}
	kv, err := s.getAt(ctx, s.k.listing(bucket, key), rev)
	return err == nil && kv == nil
}

// ListVersionManifests implements meta.Store.
func (s *Store) ListVersionManifests(ctx context.Context, bucket, afterKey, afterVersion string, limit int) ([]*cairn.Manifest, bool, error) {
	op := "list version manifests of bucket " + bucket
	if err := s.live(); err != nil {
		return nil, false, err
	}
	if strings.Contains(bucket, "/") {
		return nil, false, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	vb := s.k.versions(bucket)
	from := vb
	if afterKey != "" || afterVersion != "" {
		from = s.k.version(bucket, afterKey, afterVersion) + "\x00"
	}
	if limit < 1 || limit > meta.MaxPage {
		limit = meta.MaxPage
	}
	resp, err := s.cli.Txn(ctx).Then(clientv3.OpGet(s.k.bucket(bucket), clientv3.WithCountOnly())).Commit()
	if err != nil {
		return nil, false, s.wrap(op, err)
	}
	if resp.Responses[0].GetResponseRange().Count == 0 {
		return nil, false, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	rev := resp.Header.Revision
	var (
		out   []*cairn.Manifest
		bytes int
	)
	// Pages of records until one holds an object version: a page of
	// markers alone would give the caller no position to go on from.
	for {
		rr, err := s.cli.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(vb)), clientv3.WithLimit(int64(limit)), clientv3.WithRev(rev))
		if err != nil {
			return nil, false, s.wrap(op, err)
		}
		for _, kv := range rr.Kvs {
			key, _, okKey := s.k.versionKeyOf(bucket, string(kv.Key))
			if !okKey {
				return nil, false, fmt.Errorf("%s: a version record %q", op, kv.Key)
			}
			from = string(kv.Key) + "\x00"
			if mk, err := decodeMarker(key, kv.Value); err != nil {
				return nil, false, err
			} else if mk != nil {
				continue
			}
			m, err := s.loadManifest(ctx, bucket, key, kv, rev)
			if err != nil {
				return nil, false, s.wrap(op, err)
			}
			e, err := encodeObject(m)
			if err != nil {
				return nil, false, err
			}
			if len(out) > 0 && bytes+e.bytes > meta.ManifestPageBytes {
				return out, true, nil // the next page starts at this one
			}
			out = append(out, m)
			bytes += e.bytes
		}
		if len(out) > 0 || !rr.More {
			return out, rr.More, nil
		}
	}
}
