package client

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"cairn"
)

// raceMeta lets a rival write land just before each of the first rivals
// CommitManifest calls: the window between the condition's read and the
// compare-and-swap that a check-then-write gateway would lose.
type raceMeta struct {
	Meta
	rivals int
	rival  func() error
}

func (m *raceMeta) CommitManifest(ctx context.Context, mf *cairn.Manifest, prev string) error {
	if m.rivals > 0 {
		m.rivals--
		if err := m.rival(); err != nil {
			return err
		}
	}
	return m.Meta.CommitManifest(ctx, mf, prev)
}

func TestConditionalPut(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024})
	put := func(key, body string, cond Condition) (*cairn.Manifest, error) {
		return e.c.Put(ctx, "bkt", key, bytes.NewReader([]byte(body)), PutOptions{Size: int64(len(body)), If: cond})
	}
	m, err := put("k", "one", Condition{IfNoneMatch: true})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := put("k", "two", Condition{IfNoneMatch: true}); !errors.Is(err, ErrPreconditionFailed) {
		t.Fatalf("If-None-Match on an existing key: %v, want ErrPreconditionFailed", err)
	}
	if _, err := put("k", "two", Condition{IfMatch: "0123"}); !errors.Is(err, ErrPreconditionFailed) {
		t.Fatalf("If-Match with a wrong ETag: %v, want ErrPreconditionFailed", err)
	}
	if _, err := put("nokey", "two", Condition{IfMatch: m.ETag}); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("If-Match on a missing key: %v, want ErrNotFound", err)
	}
	if _, err := put("nokey", "two", Condition{IfMatch: "*"}); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("If-Match: * on a missing key: %v, want ErrNotFound", err)
	}
	if _, err := put("k", "one", Condition{IfMatch: "*"}); err != nil {
		t.Fatalf("If-Match: * on an existing key: %v", err)
	}
	m2, err := put("k", "two", Condition{IfMatch: `"` + m.ETag + `"`})
	if err != nil {
		t.Fatalf("If-Match with the current ETag: %v", err)
	}
	if got := string(e.get(t, "k", 0, -1)); got != "two" {
		t.Fatalf("content %q, want two", got)
	}
	if m2.ETag == m.ETag {
		t.Fatal("the ETag did not change")
	}
	// The refused writes left no shards behind: only "k"'s current version.
	want := len(m2.Layout.Files(m2.Version))
	if n := e.files(t); n != want {
		t.Fatalf("%d shard files, want %d (the refused writes' must be gone)", n, want)
	}
}

// TestConditionalPutRace: the condition holds when the write starts, but a
// rival commits between the write's read and its compare-and-swap. The
// write must then see the rival's object and fail, not overwrite it.
// It runs in a synctest bubble: the commit retries' backoff is virtual.
func TestConditionalPutRace(t *testing.T) {
	synctest.Test(t, testConditionalPutRace)
}

func testConditionalPutRace(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024})
	plain := New(e.meta, e.shards, Config{BlockSize: 1024})
	rm := &raceMeta{Meta: e.meta, rivals: 1}
	rm.rival = func() error {
		_, err := plain.Put(ctx, "bkt", "k", bytes.NewReader([]byte("rival")), PutOptions{Size: 5})
		return err
	}
	c := New(rm, e.shards, Config{BlockSize: 1024})
	if _, err := c.Put(ctx, "bkt", "k", bytes.NewReader([]byte("mine")), PutOptions{Size: 4, If: Condition{IfNoneMatch: true}}); !errors.Is(err, ErrPreconditionFailed) {
		t.Fatalf("create that lost the race: %v, want ErrPreconditionFailed", err)
	}
	if got := string(e.get(t, "k", 0, -1)); got != "rival" {
		t.Fatalf("content %q, want the rival's", got)
	}

	// If-Match: a rival overwrites the matched version in the window.
	cur, err := e.c.Stat(ctx, "bkt", "k")
	if err != nil {
		t.Fatal(err)
	}
	rm.rivals = 1
	rm.rival = func() error {
		_, err := plain.Put(ctx, "bkt", "k", bytes.NewReader([]byte("rival 2")), PutOptions{Size: 7})
		return err
	}
	if _, err := c.Put(ctx, "bkt", "k", bytes.NewReader([]byte("mine")), PutOptions{Size: 4, If: Condition{IfMatch: cur.ETag}}); !errors.Is(err, ErrPreconditionFailed) {
		t.Fatalf("update that lost the race: %v, want ErrPreconditionFailed", err)
	}

	// A rival on every attempt that rewrites the same bytes: a new version
	// with the same ETag, so the condition keeps holding but every
	// compare-and-swap loses. The write gives up with a conflict.
	cur, err = e.c.Stat(ctx, "bkt", "k")
	if err != nil {
		t.Fatal(err)
	}
	rm.rivals = 1000
	if _, err := c.Put(ctx, "bkt", "k", bytes.NewReader([]byte("mine")), PutOptions{Size: 4, If: Condition{IfMatch: cur.ETag}}); !errors.Is(err, ErrConditionalConflict) {
		t.Fatalf("update under constant churn: %v, want ErrConditionalConflict", err)
	}
	if got := string(e.get(t, "k", 0, -1)); got != "rival 2" {
		t.Fatalf("content %q, want the rival's", got)
	}
}

// TestConditionalCommitUnknownOutcome: an If-None-Match commit that the
// store applied but did not acknowledge is retried; the retry finds the
// write's own version current and succeeds, instead of failing the
// condition against itself.
func TestConditionalCommitUnknownOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 8, 1, "rs-4-2", Config{BlockSize: 4096})
		flaky := newFlakyMeta(e.meta, errNoLeader, nil)
		flaky.applyThenFail = 1
		c := New(flaky, e.shards, Config{BlockSize: 4096})
		data := randBytes(3, 20000)
		m, err := c.Put(t.Context(), "bkt", "k", bytes.NewReader(data), PutOptions{Size: int64(len(data)), If: Condition{IfNoneMatch: true}})
		if err != nil {
			t.Fatalf("create whose commit was applied but unanswered: %v", err)
		}
		if flaky.calls["CommitManifest"] != 2 {
			t.Fatalf("%d commits, want 1 applied but unanswered, 1 found current", flaky.calls["CommitManifest"])
		}
		cur, err := e.meta.Manifest(t.Context(), "bkt", "k")
		if err != nil || cur.Version != m.Version {
			t.Fatalf("current manifest %v, %v; want version %s", cur, err, m.Version)
		}
	})
}

// raceCompleteMeta lets a rival write land just before the first
// CompleteUpload, as raceMeta does for CommitManifest.
type raceCompleteMeta struct {
	Meta
	rival func() error
}

func (m *raceCompleteMeta) CompleteUpload(ctx context.Context, mf *cairn.Manifest, prev, id string, stamp int64) ([]cairn.Part, error) {
	if m.rival != nil {
		rival := m.rival
		m.rival = nil
		if err := rival(); err != nil {
			return nil, err
		}
	}
	return m.Meta.CompleteUpload(ctx, mf, prev, id, stamp)
}

// TestConditionalCompleteRace: a CompleteUploadIf whose condition held
// when it read the key, but a rival PUT committed before its
// compare-and-swap, fails the condition against the rival's object and
// leaves the upload in progress.
func TestConditionalCompleteRace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024})
		rm := &raceCompleteMeta{Meta: e.meta}
		rm.rival = func() error {
			_, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader([]byte("rival")), PutOptions{Size: 5})
			return err
		}
		c := New(rm, e.shards, Config{BlockSize: 1024})
		u, err := c.CreateUpload(ctx, "bkt", "k", PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.UploadPart(ctx, "bkt", "k", u.ID, 1, bytes.NewReader([]byte("part one")), PutOptions{Size: 8})
		if err != nil {
			t.Fatal(err)
		}
		list := []CompletePart{{Number: 1, ETag: p.ETag}}
		if _, err := c.CompleteUploadIf(ctx, "bkt", "k", u.ID, list, Condition{IfNoneMatch: true}); !errors.Is(err, ErrPreconditionFailed) {
			t.Fatalf("complete that lost the race: %v, want ErrPreconditionFailed", err)
		}
		if got := string(e.get(t, "k", 0, -1)); got != "rival" {
			t.Fatalf("content %q, want the rival's", got)
		}
		rival, err := c.Stat(ctx, "bkt", "k")
		if err != nil {
			t.Fatal(err)
		}
		// The upload is still there: it completes once the condition holds.
		m, err := c.CompleteUploadIf(ctx, "bkt", "k", u.ID, list, Condition{IfMatch: rival.ETag})
		if err != nil {
			t.Fatalf("complete with If-Match of the current ETag: %v", err)
		}
		if got := string(e.get(t, "k", 0, -1)); got != "part one" || m.Upload != u.ID {
			t.Fatalf("content %q, upload %q; want the upload's", got, m.Upload)
		}
	})
}
