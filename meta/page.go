package meta

import (
	"context"
	"fmt"

	"cairn"
)

// Paging (docs/design/meta.md, "Paging and limits"). Every listing of the
// store is paged: a call returns at most a page of records, whose size is
// bounded by count and, since every record has a bounded size, in bytes,
// so no reply approaches the etcd client's 16 MiB limit however many
// records there are.

// MaxPage is the largest page a paged listing returns; a larger limit is
// ErrInvalid. A repair task is at most a few KiB (its Lost, Targets and
// Bad lists are bounded by a stripe's width, 256 shards), so a page of
// tasks stays under 4 MiB.
const MaxPage = 1000

// ManifestPageBytes bounds the encoded manifests of one ListManifests
// page: a page stops before the manifest that would take it past this
// (but holds at least one). A manifest is bounded by the store's request
// limit (MaxManifestBytes), so a reply stays under ManifestPageBytes +
// MaxManifestBytes.
const ManifestPageBytes = 4 << 20

// MaxManifestBytes is the largest encoded manifest a store accepts
// (ErrInvalid beyond): about 14,000 parts at the usual ~550 bytes per
// part of an rs-6-3 object, above S3's 10,000. It fits the embedded etcd
// member's request limit with room for the counters and cleanup records
// that share the commit's transaction.
const MaxManifestBytes = 8 << 20

// CheckPageLimit returns cairn.ErrInvalid unless 1 ≤ limit ≤ MaxPage.
func CheckPageLimit(op string, limit int) error {
	if limit < 1 || limit > MaxPage {
		return fmt.Errorf("%s: %w: page limit %d outside 1..%d", op, cairn.ErrInvalid, limit, MaxPage)
	}
	return nil
}

// UploadPosition is an upload's position in UploadPage's order, which is
// the byte order of "BUCKET/ID" (bucket names hold no "/"): the after of
// the next page.
func UploadPosition(u cairn.Upload) string { return u.Bucket + "/" + u.ID }

// UploadPager is the part of a Store that pages the uploads.
type UploadPager interface {
	UploadPage(ctx context.Context, bucket, after string, limit int) ([]cairn.Upload, bool, error)
}

// EachUpload calls f for every upload in progress of a bucket ("" = of
// all buckets), in UploadPosition order, one page (MaxPage uploads) at a
// time, and stops at f's first error. Uploads created or deleted
// meanwhile may or may not be seen; none that exists throughout is
// missed or seen twice.
func EachUpload(ctx context.Context, s UploadPager, bucket string, f func(cairn.Upload) error) error {
	return walk(func(after string) ([]cairn.Upload, bool, error) { return s.UploadPage(ctx, bucket, after, MaxPage) },
		UploadPosition, f)
}

// UploadSummary returns the fields of u that UploadKeyPage returns: those
// that never change over the upload's life.
func UploadSummary(u cairn.Upload) cairn.Upload {
	return cairn.Upload{Bucket: u.Bucket, Key: u.Key, ID: u.ID, Created: u.Created, Policy: u.Policy, Cold: u.Cold,
		ChecksumAlgorithm: u.ChecksumAlgorithm, ChecksumType: u.ChecksumType}
}

// PartPager is the part of a Store that pages an upload's parts.
type PartPager interface {
	PartPage(ctx context.Context, bucket, id string, after, limit int) ([]cairn.Part, bool, error)
}

// EachPart calls f for every part of an upload, in number order, one page
// (MaxPage parts) at a time, and stops at f's first error; ErrNotFound if
// the upload does not exist (or is completed or aborted between pages).
func EachPart(ctx context.Context, s PartPager, bucket, id string, f func(cairn.Part) error) error {
	return walk(func(after int) ([]cairn.Part, bool, error) { return s.PartPage(ctx, bucket, id, after, MaxPage) },
		func(p cairn.Part) int { return p.Number }, f)
}

// BucketPager is the part of a Store that pages the buckets.
type BucketPager interface {
	BucketPage(ctx context.Context, after string, limit int) ([]cairn.Bucket, bool, error)
}

// EachBucket calls f for every bucket, in name order, one page (MaxPage
// buckets) at a time, and stops at f's first error; as EachUpload, a
// bucket that exists throughout is seen once.
func EachBucket(ctx context.Context, s BucketPager, f func(cairn.Bucket) error) error {
	return walk(func(after string) ([]cairn.Bucket, bool, error) { return s.BucketPage(ctx, after, MaxPage) },
		func(b cairn.Bucket) string { return b.Name }, f)
}

// RepairTaskPager is the part of a Store that pages the repair queue.
type RepairTaskPager interface {
	RepairTaskPage(ctx context.Context, after string, limit int) ([]cairn.RepairTask, bool, error)
}

// EachRepairTask calls f for every queued repair task, in ID order, one
// page (MaxPage tasks) at a time, and stops at f's first error. Tasks put
// or deleted meanwhile may or may not be seen; no task that stays queued
// throughout is missed or seen twice.
func EachRepairTask(ctx context.Context, s RepairTaskPager, f func(cairn.RepairTask) error) error {
	return walk(func(after string) ([]cairn.RepairTask, bool, error) { return s.RepairTaskPage(ctx, after, MaxPage) },
		func(t cairn.RepairTask) string { return t.ID }, f)
}

// walk calls f for every record of a paged listing, in its order: page
// returns the records after a position (the zero C: from the first) and
// whether more follow, pos the position of a record. It stops at f's
// first error or page's.
func walk[T, C any](page func(after C) ([]T, bool, error), pos func(T) C, f func(T) error) error {
	var after C
	for {
		ts, more, err := page(after)
		if err != nil {
			return err
		}
		for _, t := range ts {
			if err := f(t); err != nil {
				return err
			}
			after = pos(t)
		}
		if !more || len(ts) == 0 {
			return nil
		}
	}
}

// AllRepairTasks returns every queued task, riskiest first
// (SortRepairTasks), read a page at a time: for tools and tests that need
// the whole queue in memory. Services use RiskiestRepairTasks, which reads
// only as far as it needs.
func AllRepairTasks(ctx context.Context, s RepairTaskPager) ([]cairn.RepairTask, error) {
	var out []cairn.RepairTask
	err := EachRepairTask(ctx, s, func(t cairn.RepairTask) error {
		out = append(out, t)
		return nil
	})
	SortRepairTasks(out)
	return out, err
}

// RepairQueuePager is the part of a Store that reads the repair queue in
// queue order.
type RepairQueuePager interface {
	RepairQueuePage(ctx context.Context, after *cairn.RepairTask, limit int) ([]cairn.RepairTask, bool, error)
}

// RiskiestRepairTasks returns the n riskiest queued tasks
// (SortRepairTasks order) for which keep returns true (nil keeps all),
// reading the queue in its order a page at a time until it has n: the
// cost is the tasks up to the n-th kept one, not the queue's length.
// ErrInvalid if n < 1.
func RiskiestRepairTasks(ctx context.Context, s RepairQueuePager, n int, keep func(cairn.RepairTask) bool) ([]cairn.RepairTask, error) {
	if n < 1 {
		return nil, fmt.Errorf("riskiest repair tasks: %w: n = %d", cairn.ErrInvalid, n)
	}
	var out []cairn.RepairTask
	var after *cairn.RepairTask
	for {
		ts, more, err := s.RepairQueuePage(ctx, after, MaxPage)
		if err != nil {
			return out, err
		}
		for _, t := range ts {
			if keep == nil || keep(t) {
				out = append(out, t)
				if len(out) == n {
					return out, nil
				}
			}
		}
		if !more || len(ts) == 0 {
			return out, nil
		}
		after = &ts[len(ts)-1]
	}
}

// CheckManifestBytes returns cairn.ErrInvalid if a manifest of n encoded
// bytes is larger than MaxManifestBytes.
func CheckManifestBytes(m *cairn.Manifest, n int) error {
	if n > MaxManifestBytes {
		return fmt.Errorf("manifest of %s/%s: %w: %d bytes encoded (%d parts), more than %d",
			m.Bucket, m.Key, cairn.ErrInvalid, n, len(m.Parts), MaxManifestBytes)
	}
	return nil
}

// OnlyPart returns m with only part n in Parts (what ManifestPart
// returns), or ErrNotFound if m has no such part.
func OnlyPart(op string, m *cairn.Manifest, n int) (*cairn.Manifest, error) {
	for _, p := range m.Parts {
		if p.Number == n {
			out := *m
			out.Parts = []cairn.Part{p}
			return &out, nil
		}
	}
	return nil, fmt.Errorf("%s: %w (no such part)", op, cairn.ErrNotFound)
}

// CheckPartUpdate returns cairn.ErrInvalid unless p is a valid part
// (cairn.Part.Validate) with prev's number, version and size: an update
// moves a part's shards, it does not replace the part.
func CheckPartUpdate(op string, p, prev cairn.Part) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if p.Number != prev.Number || p.Version != prev.Version || p.Size != prev.Size {
		return fmt.Errorf("%s: %w: part %d version %s of %d bytes over part %d version %s of %d bytes",
			op, cairn.ErrInvalid, p.Number, p.Version, p.Size, prev.Number, prev.Version, prev.Size)
	}
	return nil
}
