package etcdmeta

// Listing records (docs/design/meta.md, "Listing records"): beside each
// manifest at <p>objects/<bucket>/<key>, a compact record at
// <p>list/<bucket>/<key> carries what a listing shows (cairn.ObjectInfo)
// and the size of the manifest record. Every write that puts or deletes a
// manifest puts or deletes its listing record in the same Txn, so at any
// revision the two ranges hold the same keys. ListObjects reads only
// listing records; ListManifests reads them first to know how many
// manifests fit in a page of meta.ManifestPageBytes, then the manifests
// at the same revision.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/meta"
)

func (k keys) listings(bucket string) string     { return k.p + "list/" + bucket + "/" }
func (k keys) listing(bucket, key string) string { return k.listings(bucket) + key }

// listRecord is the value stored under a listing key: the object's
// listing record and the length of its manifest record in bytes.
type listRecord struct {
	cairn.ObjectInfo
	ManifestBytes int `json:"mbytes"`
}

// encodeListing returns the listing record of m, whose records take
// bytes.
func encodeListing(m *cairn.Manifest, bytes int) string {
	b, _ := json.Marshal(listRecord{ObjectInfo: m.Info(), ManifestBytes: bytes}) // plain fields always marshal
	return string(b)
}

// keyRange returns the range [from, end) under base of the keys that
// start with prefix and sort after startAfter; from >= end if none can.
func keyRange(base, prefix, startAfter string) (from, end string) {
	from = base + prefix
	if startAfter >= prefix {
		from = base + startAfter + "\x00" // the smallest key after startAfter
	}
	return from, clientv3.GetPrefixRangeEnd(base + prefix)
}

// listingPage reads up to limit listing records of bucket in [from, end)
// in one Txn that checks the bucket exists (ErrNotFound), at revision rev
// (0: the current one, returned).
func (s *Store) listingPage(ctx context.Context, op, bucket, from, end string, limit int64) ([]*mvccpb.KeyValue, bool, int64, error) {
	var then []clientv3.Op
	if from < end {
		then = append(then, clientv3.OpGet(from, clientv3.WithRange(end), clientv3.WithLimit(limit)))
	}
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(s.k.bucket(bucket)), ">", 0)).
		Then(then...).
		Commit()
	if err != nil {
		return nil, false, 0, s.wrap(op, err)
	}
	if !resp.Succeeded {
		return nil, false, 0, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	if len(then) == 0 {
		return nil, false, resp.Header.Revision, nil
	}
	rr := resp.Responses[0].GetResponseRange()
	return rr.Kvs, rr.More, resp.Header.Revision, nil
}

func decodeListing(op, base string, kv *mvccpb.KeyValue) (listRecord, error) {
	var r listRecord
	if err := json.Unmarshal(kv.Value, &r); err != nil {
		return r, fmt.Errorf("%s: decoding listing record %q: %w", op, kv.Key, err)
	}
	if key := strings.TrimPrefix(string(kv.Key), base); r.Key != key {
		return r, fmt.Errorf("%s: listing record %q names key %q", op, kv.Key, r.Key)
	}
	return r, nil
}

// ListObjects implements meta.Store: one range read of listing records
// with the bucket check.
func (s *Store) ListObjects(ctx context.Context, bucket, prefix, startAfter string, limit int) ([]cairn.ObjectInfo, bool, error) {
	op := "list bucket " + bucket
	if err := meta.CheckPageLimit(op, limit); err != nil {
		return nil, false, err
	}
	if err := s.live(); err != nil {
		return nil, false, err
	}
	if strings.Contains(bucket, "/") {
		return nil, false, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	base := s.k.listings(bucket)
	from, end := keyRange(base, prefix, startAfter)
	kvs, more, _, err := s.listingPage(ctx, op, bucket, from, end, int64(limit))
	if err != nil {
		return nil, false, err
	}
	out := make([]cairn.ObjectInfo, 0, len(kvs))
	for _, kv := range kvs {
		r, err := decodeListing(op, base, kv)
		if err != nil {
			return nil, false, err
		}
		out = append(out, r.ObjectInfo)
	}
	return out, more, nil
}

// ListManifests implements meta.Store. A page reads the listing records
// first (with the bucket check), keeps as many as fit in
// meta.ManifestPageBytes by their manifests' sizes, and reads that many
// manifests at the same revision: the same keys, since every write puts
// or deletes both records in one Txn. An unlimited listing reads every
// page at the first page's revision, so it is one consistent snapshot.
func (s *Store) ListManifests(ctx context.Context, bucket, prefix, startAfter string, limit int) ([]*cairn.Manifest, bool, error) {
	op := "list bucket " + bucket
	if err := s.live(); err != nil {
		return nil, false, err
	}
	if strings.Contains(bucket, "/") {
		return nil, false, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	lbase, obase := s.k.listings(bucket), s.k.objects(bucket)
	page := min(limit, meta.MaxPage)
	if limit < 1 {
		page = meta.MaxPage
	}
	var out []*cairn.Manifest
	rev := int64(0)
	for {
		from, end := keyRange(lbase, prefix, startAfter)
		var (
			kvs  []*mvccpb.KeyValue
			more bool
			err  error
		)
		if rev == 0 {
			kvs, more, rev, err = s.listingPage(ctx, op, bucket, from, end, int64(page))
		} else if from < end {
			var gr *clientv3.GetResponse
			gr, err = s.cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(int64(page)), clientv3.WithRev(rev))
			if err != nil {
				return nil, false, s.wrap(op, err)
			}
			kvs, more = gr.Kvs, gr.More
		}
		if err != nil {
			return nil, false, err
		}
		n, bytes := 0, 0
		for _, kv := range kvs {
			r, err := decodeListing(op, lbase, kv)
			if err != nil {
				return nil, false, err
			}
			if n > 0 && bytes+r.ManifestBytes > meta.ManifestPageBytes {
				more = true
				break
			}
			n, bytes = n+1, bytes+r.ManifestBytes
		}
		if n == 0 {
			return out, false, nil
		}
		ofrom, oend := keyRange(obase, prefix, startAfter)
		gr, err := s.cli.Get(ctx, ofrom, clientv3.WithRange(oend), clientv3.WithLimit(int64(n)), clientv3.WithRev(rev))
		if err != nil {
			return nil, false, s.wrap(op, err)
		}
		if len(gr.Kvs) != n {
			return nil, false, fmt.Errorf("%s: %d listing records but %d manifests at revision %d", op, n, len(gr.Kvs), rev)
		}
		for i, kv := range gr.Kvs {
			key := strings.TrimPrefix(string(kv.Key), obase)
			if want := strings.TrimPrefix(string(kvs[i].Key), lbase); key != want {
				return nil, false, fmt.Errorf("%s: manifest %q where the listing has %q", op, key, want)
			}
			m, err := s.loadManifest(ctx, bucket, key, kv, rev)
			if err != nil {
				return nil, false, fmt.Errorf("%s: %w", op, err)
			}
			out = append(out, m)
			startAfter = key
		}
		if limit > 0 || !more {
			return out, more, nil
		}
	}
}

// upgradeBatch is how many listing records one Txn of the upgrade from
// layout 2 writes (within etcd's default --max-txn-ops of 128: a compare
// and a put each).
const upgradeBatch = 64

// upgradeLayout2 brings a store of layout 2 (no listing records, no
// repair queue index) to layout 3: it indexes the repair queue
// (indexRepairTasks) and walks every object key (keys only, a page at a time), reads
// the manifests one by one (a manifest may be megabytes), writes each
// object's listing record in batches, each Txn requiring the batch's
// manifests unchanged since read (else the batch is read again), and
// finally the layout version, unless another process upgraded the store
// meanwhile. As with layout 1, writes by processes still running a build
// of layout 2 during the upgrade get no listing record: upgrade every
// process at once.
func (s *Store) upgradeLayout2(ctx context.Context) error {
	prefix := s.k.p + "objects/"
	from, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
	objects := 0
	for {
		resp, err := s.cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(meta.MaxPage), clientv3.WithKeysOnly())
		if err != nil {
			return err
		}
		for i := 0; i < len(resp.Kvs); i += upgradeBatch {
			batch := resp.Kvs[i:min(i+upgradeBatch, len(resp.Kvs))]
			if err := s.writeListings(ctx, prefix, batch); err != nil {
				return err
			}
			objects += len(batch)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	if err := s.indexRepairTasks(ctx); err != nil {
		return err
	}
	k := s.k.layout()
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(k), "=", "2")).
		Then(clientv3.OpPut(k, "3")).
		Commit()
	if err != nil {
		return err
	}
	if resp.Succeeded {
		s.log.Info("upgraded the metadata key layout from 2 to 3: listing records written", "objects", objects)
	}
	return nil // else another process upgraded it
}

// writeListings writes the listing records of the objects whose keys (under
// prefix, <p>objects/) are in batch, in one Txn, retried while a manifest
// changes under it.
func (s *Store) writeListings(ctx context.Context, prefix string, batch []*mvccpb.KeyValue) error {
	for {
		kvs := make([]*mvccpb.KeyValue, len(batch))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		for i, kv := range batch {
			g.Go(func() error {
				resp, err := s.cli.Get(gctx, string(kv.Key))
				if err == nil && len(resp.Kvs) > 0 {
					kvs[i] = resp.Kvs[0]
				}
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		var (
			cmps []clientv3.Cmp
			ops  []clientv3.Op
		)
		for i, kv := range kvs {
			key := string(batch[i].Key)
			if kv == nil { // deleted meanwhile: must stay absent
				cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
				continue
			}
			bucket, okey, ok := strings.Cut(strings.TrimPrefix(key, prefix), "/")
			if !ok {
				return fmt.Errorf("upgrading key layout 2: object key %q has no bucket", key)
			}
			m, err := s.loadManifest(ctx, bucket, okey, kv, kv.ModRevision)
			if err != nil {
				return fmt.Errorf("upgrading key layout 2: %w", err)
			}
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision))
			ops = append(ops, clientv3.OpPut(s.k.listing(bucket, okey), encodeListing(m, len(kv.Value))))
		}
		resp, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			return err
		}
		if resp.Succeeded {
			return nil
		}
	}
}
