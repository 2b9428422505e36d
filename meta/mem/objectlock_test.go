package mem_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/meta/mem"
)

// TestRetentionExpires: a version retained for an hour cannot be deleted
// until the hour has passed on the store's clock, and then can (virtual
// time).
func TestRetentionExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s := mem.New()
		if err := s.CreateBucket(ctx, cairn.Bucket{Name: "lock", Policy: "rep-1"}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetBucketVersioning(ctx, "lock", cairn.VersioningEnabled); err != nil {
			t.Fatal(err)
		}
		if err := s.SetBucketObjectLock(ctx, "lock", cairn.ObjectLock{}); err != nil {
			t.Fatal(err)
		}
		m := &cairn.Manifest{Bucket: "lock", Key: "k", Version: "0123456789abcdef0123456789abcdef", Size: 8, Policy: "rep-1", Versioned: true,
			Layout:    cairn.Layout{BlockSize: 8, Shards: []cairn.ShardLoc{{Disk: "n1/d1", Size: 8}}},
			Retention: &cairn.Retention{Mode: cairn.LockCompliance, Until: time.Now().Add(time.Hour)}}
		if err := s.CommitManifest(ctx, m, ""); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour - time.Second)
		if _, err := s.DeleteVersion(ctx, "lock", "k", m.Version); !errors.Is(err, cairn.ErrLocked) {
			t.Fatalf("DeleteVersion a second before the date: %v, want ErrLocked", err)
		}
		time.Sleep(time.Second)
		if _, err := s.DeleteVersion(ctx, "lock", "k", m.Version); err != nil {
			t.Fatalf("DeleteVersion at the date: %v", err)
		}
	})
}
