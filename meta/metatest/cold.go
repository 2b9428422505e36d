package metatest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"cairn"
	"cairn/meta"
)

// testCold checks the cold tier's records: compare-and-swap of several
// keys at once (all or nothing), blind writes, deletes and pages.
func testCold(t *testing.T, s meta.Store) {
	ctx := context.Background()
	_, err := s.ColdGet(ctx, "g/1")
	wantErr(t, "get of a missing record", err, cairn.ErrNotFound)
	noErr(t, "create", s.ColdUpdate(ctx, []meta.ColdOp{
		{Key: "g/1", Value: []byte("a"), Check: true},
		{Key: "g/1/free/0", Value: []byte{0, 1}},
	}))
	wantErr(t, "create again", s.ColdUpdate(ctx, []meta.ColdOp{{Key: "g/1", Value: []byte("b"), Check: true}}), cairn.ErrConflict)
	// A failed compare writes nothing, not even the blind op beside it.
	wantErr(t, "swap from a wrong value", s.ColdUpdate(ctx, []meta.ColdOp{
		{Key: "g/1/free/1", Value: []byte("x")},
		{Key: "g/1", Value: []byte("b"), Check: true, Prev: []byte("z")},
	}), cairn.ErrConflict)
	if _, err := s.ColdGet(ctx, "g/1/free/1"); err == nil {
		t.Fatal("a failed update wrote its blind op")
	}
	noErr(t, "swap", s.ColdUpdate(ctx, []meta.ColdOp{
		{Key: "g/1", Value: []byte("b"), Check: true, Prev: []byte("a")},
		{Key: "g/1/free/0", Check: true, Prev: []byte{0, 1}}, // delete
	}))
	v, err := s.ColdGet(ctx, "g/1")
	noErr(t, "get", err)
	if string(v) != "b" {
		t.Fatalf("g/1 = %q, want b", v)
	}
	_, err = s.ColdGet(ctx, "g/1/free/0")
	wantErr(t, "get of a deleted record", err, cairn.ErrNotFound)
	wantErr(t, "an empty update", s.ColdUpdate(ctx, nil), cairn.ErrInvalid)
	wantErr(t, "a key twice", s.ColdUpdate(ctx, []meta.ColdOp{{Key: "k", Value: []byte{1}}, {Key: "k"}}), cairn.ErrInvalid)
	wantErr(t, "an empty key", s.ColdUpdate(ctx, []meta.ColdOp{{Key: "", Value: []byte{1}}}), cairn.ErrInvalid)
	wantErr(t, "a huge value", s.ColdUpdate(ctx, []meta.ColdOp{{Key: "k", Value: make([]byte, meta.MaxColdValue+1)}}), cairn.ErrInvalid)

	// Pages: 25 keys under q/, others around them.
	var want []string
	for i := range 25 {
		k := fmt.Sprintf("q/%03d", i)
		want = append(want, k)
		noErr(t, "put "+k, s.ColdUpdate(ctx, []meta.ColdOp{{Key: k, Value: []byte(k)}}))
	}
	noErr(t, "put p", s.ColdUpdate(ctx, []meta.ColdOp{{Key: "p", Value: []byte{1}}, {Key: "r", Value: []byte{1}}}))
	var got []string
	after := ""
	for {
		page, more, err := s.ColdPage(ctx, "q/", after, 10)
		noErr(t, "page", err)
		for _, r := range page {
			if string(r.Value) != r.Key {
				t.Fatalf("record %q holds %q", r.Key, r.Value)
			}
			got = append(got, r.Key)
		}
		if !more {
			break
		}
		after = page[len(page)-1].Key
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages of q/: %v, want %v", got, want)
	}
	if page, more, err := s.ColdPage(ctx, "q/", "z", 10); err != nil || len(page) != 0 || more {
		t.Fatalf("page after the prefix: %v %v %v", page, more, err)
	}
	_, _, err = s.ColdPage(ctx, "q/", "", 0)
	wantErr(t, "page of 0", err, cairn.ErrInvalid)
}
