package etcdmeta

// Uploads by key (docs/design/meta.md, "Uploads by key"): beside each
// upload record at <p>uploads/<bucket>/<id>, an index record at
//
//	<p>upkeys/<bucket>/<escKey(key)>\x00\x00<created><id>
//
// holds the upload's summary (meta.UploadSummary, JSON). escKey writes
// each NUL of the key as NUL 0x01 and NUL NUL ends it (as in the version
// records' keys, versions.go), so the byte order of index keys is the order of (key, created, ID) whatever
// bytes the object key holds (a key is valid UTF-8, which may contain
// NUL); created is the creation time in 16 hex digits (UnixNano with its
// sign bit flipped: the order of times). CreateUpload puts the index
// record in the Txn that puts the upload record; DeleteUpload and
// CompleteUpload delete both in one Txn, and DeleteBucket deletes uploads
// through DeleteUpload: at any revision the two ranges name the same
// uploads. UploadKeyPage reads only the index.

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

func (k keys) upkeys(bucket string) string { return k.p + "upkeys/" + bucket + "/" }

// upkey is the index key of upload u.
func (k keys) upkey(u cairn.Upload) string {
	t := uint64(u.Created.UnixNano()) ^ 1<<63
	return fmt.Sprintf("%s%s\x00\x00%016x%s", k.upkeys(u.Bucket), escKey(u.Key), t, u.ID)
}

// encodeUpkey returns the value of u's index record.
func encodeUpkey(u cairn.Upload) string {
	b, _ := json.Marshal(meta.UploadSummary(u)) // plain fields always marshal
	return string(b)
}

// upkeyOf returns the index key of the upload whose record was read as
// rec.
func (s *Store) upkeyOf(op string, rec *mvccpb.KeyValue) (string, error) {
	var u cairn.Upload
	if err := json.Unmarshal(rec.Value, &u); err != nil {
		return "", fmt.Errorf("%s: decoding upload record %q: %w", op, rec.Key, err)
	}
	return s.k.upkey(u), nil
}

// UploadKeyPage implements meta.Store: with an idMarker, a read of that
// upload's record (its creation time places it in the index), then one
// range read of the index with the bucket check.
func (s *Store) UploadKeyPage(ctx context.Context, bucket, prefix, keyMarker, idMarker string, limit int) ([]cairn.Upload, bool, error) {
	op := "uploads by key of bucket " + bucket
	if err := meta.CheckPageLimit(op, limit); err != nil {
		return nil, false, err
	}
	if err := s.live(); err != nil {
		return nil, false, err
	}
	if strings.Contains(bucket, "/") {
		return nil, false, fmt.Errorf("%s: %w", op, cairn.ErrNotFound)
	}
	base := s.k.upkeys(bucket)
	from, end := base+escKey(prefix), clientv3.GetPrefixRangeEnd(base+escKey(prefix))
	var after string // the smallest index key the page may start at
	switch {
	case keyMarker == "": // S3 ignores upload-id-marker without key-marker
	case idMarker == "":
		after = base + escKey(keyMarker) + "\x00\x01" // after every upload of keyMarker
	default:
		after = base + escKey(keyMarker) + "\x00\x00" // keyMarker's first upload
		if !badName(bucket, idMarker) {
			resp, err := s.cli.Get(ctx, s.k.upload(bucket, idMarker))
			if err != nil {
				return nil, false, s.wrap(op, err)
			}
			if len(resp.Kvs) > 0 {
				var u cairn.Upload
				if err := json.Unmarshal(resp.Kvs[0].Value, &u); err != nil {
					return nil, false, fmt.Errorf("%s: decoding upload record %q: %w", op, resp.Kvs[0].Key, err)
				}
				if u.Key == keyMarker {
					after = s.k.upkey(u) + "\x00"
				}
			}
		}
	}
	from = max(from, after)
	kvs, more, _, err := s.listingPage(ctx, op, bucket, from, end, int64(limit))
	if err != nil {
		return nil, false, err
	}
	out := make([]cairn.Upload, 0, len(kvs))
	for _, kv := range kvs {
		var u cairn.Upload
		if err := json.Unmarshal(kv.Value, &u); err != nil {
			return nil, false, fmt.Errorf("%s: decoding index record %q: %w", op, kv.Key, err)
		}
		out = append(out, u)
	}
	return out, more, nil
}

// upgradeLayout3 brings a store of layout 3 (uploads without index
// records) to layout 4: it walks every upload record, a page at a time,
// and puts each one's index record in a Txn that requires the record to
// be the one read (same creation revision: not completed, aborted or
// re-created meanwhile); then the layout version, unless another process
// upgraded the store meanwhile. As with layout 2, uploads created by
// processes still running a build of layout 3 during the upgrade get no
// index record (they are missing from ListMultipartUploads, not from the
// sweep of abandoned uploads, which walks the records): upgrade every
// process at once.
func (s *Store) upgradeLayout3(ctx context.Context) error {
	prefix := s.k.p + "uploads/"
	from, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
	uploads := 0
	for {
		resp, err := s.cli.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(meta.MaxPage))
		if err != nil {
			return err
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		for _, kv := range resp.Kvs {
			ik, err := s.upkeyOf("upgrading key layout 3", kv)
			if err != nil {
				return err
			}
			var u cairn.Upload
			_ = json.Unmarshal(kv.Value, &u) // upkeyOf decoded it
			g.Go(func() error {
				_, err := s.cli.Txn(gctx).
					If(clientv3.Compare(clientv3.CreateRevision(string(kv.Key)), "=", kv.CreateRevision)).
					Then(clientv3.OpPut(ik, encodeUpkey(u))).
					Commit()
				return err // a Txn that fails found the upload gone: nothing to index
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		uploads += len(resp.Kvs)
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(s.k.layout()), "=", "3")).
		Then(clientv3.OpPut(s.k.layout(), "4")).
		Commit()
	if err != nil {
		return err
	}
	if resp.Succeeded {
		s.log.Info("upgraded the metadata key layout from 3 to 4: uploads indexed by key", "uploads", uploads)
	}
	return nil // else another process upgraded it
}
