package metatest

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"testing"

	"cairn"
	"cairn/meta"
)

// bucketAttrs checks SetBucketTags and SetBucketCORS on bucket b (already
// created): each replaces its own field and leaves the rest of the record.
func bucketAttrs(t *testing.T, s meta.Store, b cairn.Bucket) {
	t.Helper()
	ctx := context.Background()
	tags := map[string]string{"team": "blue", "cost center": "ünï 42"}
	noErr(t, "SetBucketTags", s.SetBucketTags(ctx, b.Name, tags))
	rules := []cairn.CORSRule{
		{ID: "web", AllowedOrigins: []string{"https://*.example.com"}, AllowedMethods: []string{"GET", "PUT"},
			AllowedHeaders: []string{"*"}, ExposeHeaders: []string{"ETag"}, MaxAgeSeconds: 600},
		{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"HEAD"}},
	}
	noErr(t, "SetBucketCORS", s.SetBucketCORS(ctx, b.Name, rules))
	got, err := s.Bucket(ctx, b.Name)
	noErr(t, "Bucket", err)
	if !maps.Equal(got.Tags, tags) || !reflect.DeepEqual(got.CORS, rules) || got.Policy != b.Policy || got.Owner != b.Owner {
		t.Fatalf("after SetBucketTags and SetBucketCORS: %+v", got)
	}
	wantErr(t, "SetBucketTags of a missing bucket", s.SetBucketTags(ctx, "nope", tags), cairn.ErrNotFound)
	wantErr(t, "SetBucketCORS of a missing bucket", s.SetBucketCORS(ctx, "nope", rules), cairn.ErrNotFound)
	lc := []cairn.LifecycleRule{{ID: "logs", Enabled: true, Filter: cairn.LifecycleFilter{Prefix: "logs/", Tags: map[string]string{"k": "v"}, SizeGreaterThan: 10},
		Expiration: &cairn.LifecycleExpiration{Days: 30}, NoncurrentExpiration: &cairn.NoncurrentExpiration{NoncurrentDays: 7, NewerNoncurrentVersions: 2},
		AbortUploadDays: 3, Transitions: []cairn.LifecycleTransition{{Days: 10, StorageClass: "COLD"}}}}
	noErr(t, "SetBucketLifecycle", s.SetBucketLifecycle(ctx, b.Name, lc))
	if got, err := s.Bucket(ctx, b.Name); err != nil || !reflect.DeepEqual(got.Lifecycle, lc) || !maps.Equal(got.Tags, tags) {
		t.Fatalf("after SetBucketLifecycle: %+v, %v", got, err)
	}
	wantErr(t, "SetBucketLifecycle of a missing bucket", s.SetBucketLifecycle(ctx, "nope", lc), cairn.ErrNotFound)
	noErr(t, "SetBucketLifecycle none", s.SetBucketLifecycle(ctx, b.Name, nil))
	if got, err := s.Bucket(ctx, b.Name); err != nil || got.Lifecycle != nil {
		t.Fatalf("after removing the lifecycle: %+v, %v", got, err)
	}
	if p, err := s.LifecycleProgress(ctx); err != nil || p.Passes != 0 {
		t.Fatalf("lifecycle progress before any: %+v, %v", p, err)
	}
	prog := cairn.LifecycleProgress{Passes: 2, Bucket: b.Name, After: "k", Current: cairn.LifecycleCounts{Expired: 3}}
	noErr(t, "PutLifecycleProgress", s.PutLifecycleProgress(ctx, prog))
	if p, err := s.LifecycleProgress(ctx); err != nil || !reflect.DeepEqual(p, prog) {
		t.Fatalf("lifecycle progress: %+v, %v", p, err)
	}
	noErr(t, "SetBucketTags none", s.SetBucketTags(ctx, b.Name, nil))
	noErr(t, "SetBucketCORS none", s.SetBucketCORS(ctx, b.Name, []cairn.CORSRule{}))
	if got, err := s.Bucket(ctx, b.Name); err != nil || got.Tags != nil || got.CORS != nil {
		t.Fatalf("after removing tags and CORS: %+v, %v", got, err)
	}
	bucketAccess(t, s, b)
}

// bucketAccess checks UpdateBucketAccess on bucket b: update sees the
// stored value, its result replaces it (a zero value removes it), its
// error leaves the bucket as it was, and values returned earlier do not
// change.
func bucketAccess(t *testing.T, s meta.Store, b cairn.Bucket) {
	t.Helper()
	ctx := context.Background()
	want := &cairn.BucketAccess{Policy: `{"Statement":[]}`, ACL: []cairn.Grant{{Group: cairn.GroupAllUsers, Permission: "READ"}},
		PublicAccessBlock: &cairn.PublicAccessBlock{IgnorePublicAcls: true}, Ownership: cairn.OwnershipPreferred}
	noErr(t, "UpdateBucketAccess", s.UpdateBucketAccess(ctx, b.Name, func(a *cairn.BucketAccess) (*cairn.BucketAccess, error) {
		if a != nil {
			t.Fatalf("a new bucket has access %+v", a)
		}
		return want.Clone(), nil
	}))
	got, err := s.Bucket(ctx, b.Name)
	noErr(t, "Bucket", err)
	if !reflect.DeepEqual(got.Access, want) || got.Policy != b.Policy {
		t.Fatalf("after UpdateBucketAccess: %+v", got)
	}
	refused := errors.New("refused")
	err = s.UpdateBucketAccess(ctx, b.Name, func(a *cairn.BucketAccess) (*cairn.BucketAccess, error) {
		if !reflect.DeepEqual(a, want) {
			t.Fatalf("update got %+v, want %+v", a, want)
		}
		a.ACL[0].Permission = "WRITE" // a copy: the stored value must not change
		a.PublicAccessBlock.BlockPublicAcls = true
		return nil, refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("UpdateBucketAccess with a refusing update: %v", err)
	}
	if again, err := s.Bucket(ctx, b.Name); err != nil || !reflect.DeepEqual(again.Access, want) || !reflect.DeepEqual(got.Access, want) {
		t.Fatalf("after a refused update: %+v, %v (earlier copy %+v)", again.Access, err, got.Access)
	}
	wantErr(t, "UpdateBucketAccess of a missing bucket", s.UpdateBucketAccess(ctx, "nope", func(a *cairn.BucketAccess) (*cairn.BucketAccess, error) { return a, nil }), cairn.ErrNotFound)
	noErr(t, "UpdateBucketAccess to none", s.UpdateBucketAccess(ctx, b.Name, func(*cairn.BucketAccess) (*cairn.BucketAccess, error) {
		return &cairn.BucketAccess{}, nil
	}))
	if got, err := s.Bucket(ctx, b.Name); err != nil || got.Access != nil {
		t.Fatalf("after removing access: %+v, %v", got.Access, err)
	}
}
