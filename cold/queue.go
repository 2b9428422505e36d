package cold

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"cairn"
	"cairn/codec"
	"cairn/codec/all"
	"cairn/layout/gp"
	"cairn/meta"
)

// codes returns the chunk code (clay-K-M-D) and the small-size buckets'
// code (rs-K-M) of a policy.
func codes(p gp.Policy) (chunk, rs codec.Code, err error) {
	if chunk, err = all.FromPolicy(p.Code); err != nil {
		return nil, nil, err
	}
	if rs, err = all.FromPolicy(p.Small); err != nil {
		return nil, nil, err
	}
	return chunk, rs, nil
}

// The staging queue: one record per staged object at
// staged/<bucket>/<key> (bucket names hold no "/"), written before the
// staged manifest commits, so that every staged object has one; the
// export job drops the records whose object is gone or no longer staged.
const stagedPrefix = "staged/"

func stagedKey(bucket, key string) string { return stagedPrefix + bucket + "/" + key }

// staged is a staging queue record's value.
type staged struct {
	Version string    `json:"version"` // the staged manifest's version
	Since   time.Time `json:"since"`   // when it was queued
}

// StageOp returns the write that queues the object version m for export
// (m's Policy must be a cold policy): the writer of a staged manifest
// applies it with meta.Store.ColdUpdate before the manifest commits, and
// the export job finds the object through it.
func StageOp(m *cairn.Manifest, now time.Time) (meta.ColdOp, error) {
	if !cairn.IsColdPolicy(m.Policy) || m.Cold != nil {
		return meta.ColdOp{}, fmt.Errorf("%w: staging %s/%s of policy %s", cairn.ErrInvalid, m.Bucket, m.Key, m.Policy)
	}
	v, err := json.Marshal(staged{Version: m.Version, Since: now.UTC()})
	if err != nil {
		return meta.ColdOp{}, err
	}
	return meta.ColdOp{Key: stagedKey(m.Bucket, m.Key), Value: v}, nil
}

// Stage marks the current version of bucket/key, a warm object, as
// staged for the cold tier of policy (a lifecycle Transition to COLD
// calls it; the export job moves the object later): its manifest gets the
// cold policy, keeping its warm layout (Layout.Code), by compare-and-swap,
// after its queue record. cairn.ErrInvalid for an already cold or staged
// object or a policy gp.ParsePolicy refuses; cairn.ErrConflict if the
// object changed meanwhile.
func Stage(ctx context.Context, m Meta, bucket, key, policy string, now time.Time) error {
	if _, err := gp.ParsePolicy(policy); err != nil {
		return fmt.Errorf("%w: %v", cairn.ErrInvalid, err)
	}
	cur, err := m.Manifest(ctx, bucket, key)
	if err != nil {
		return err
	}
	if cur.Cold != nil || cairn.IsColdPolicy(cur.Policy) {
		return fmt.Errorf("%w: %s/%s cannot move to the cold tier (cold or staged already)", cairn.ErrInvalid, bucket, key)
	}
	next := *cur
	next.Policy, next.Code = policy, cur.LayoutCode()
	op, err := StageOp(&next, now)
	if err != nil {
		return err
	}
	if err := m.ColdUpdate(ctx, []meta.ColdOp{op}); err != nil {
		return err
	}
	return m.UpdateManifest(ctx, &next, cur)
}

// parseStaged splits a staging queue record.
func parseStaged(r meta.ColdRecord) (bucket, key string, s staged, err error) {
	rest := strings.TrimPrefix(r.Key, stagedPrefix)
	bucket, key, ok := strings.Cut(rest, "/")
	if err := json.Unmarshal(r.Value, &s); err != nil || !ok || s.Version == "" {
		return "", "", staged{}, fmt.Errorf("%w: staging record %q", cairn.ErrCorrupt, r.Key)
	}
	return bucket, key, s, nil
}
