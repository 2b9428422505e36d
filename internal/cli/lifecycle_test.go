package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/meta/mem"
)

// TestLifecycleTransitionRefuses: the lifecycle runner's transition hook
// refuses, with a permanent error naming the reason, what the cold tier
// cannot take, and a version that changed since the listing with
// ErrConflict — each before touching the object.
func TestLifecycleTransitionRefuses(t *testing.T) {
	store := mem.New()
	ctx := context.Background()
	now := func() time.Time { return time.Unix(1_800_000_000, 0) }
	cur := cairn.ObjectVersion{Key: "k", Version: "v1", Latest: true}
	for _, tc := range []struct {
		name, policy, class string
		v                   cairn.ObjectVersion
		want                error
		mention             string
	}{
		{"another class", "clay-4-2-5/gp=1MiB:2", "WARM", cur, cairn.ErrInvalid, "only COLD moves objects"},
		{"no cold tier", "", ColdClass, cur, cairn.ErrInvalid, "no cold tier"},
		{"noncurrent", "clay-4-2-5/gp=1MiB:2", ColdClass, cairn.ObjectVersion{Key: "k", Version: "v0"}, cairn.ErrInvalid, "noncurrent"},
		{"gone", "clay-4-2-5/gp=1MiB:2", ColdClass, cur, cairn.ErrNotFound, ""},
	} {
		err := lifecycleTransition(store, tc.policy, now)(ctx, "b", tc.v, tc.class)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%s: %v, want %v mentioning %q", tc.name, err, tc.want, tc.mention)
		}
		if errors.Is(tc.want, cairn.ErrInvalid) && !cairn.IsPermanent(err) {
			t.Errorf("%s: %v is not permanent: the runner would retry it forever", tc.name, err)
		}
	}
}

// TestClassOf: the runner does not move an object again into the class
// its policy already is.
func TestClassOf(t *testing.T) {
	for policy, want := range map[string]string{"clay-4-2-5/gp=1MiB:2": ColdClass, cairn.RAIDPPolicy: "WARM", "rs-4-2": "STANDARD", "rep-3": "STANDARD"} {
		if got := classOf(policy); got != want {
			t.Errorf("classOf(%q) = %q, want %q", policy, got, want)
		}
	}
}
