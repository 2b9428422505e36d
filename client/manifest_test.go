package client

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"cairn"
)

// A stored manifest that does not fit its code (here a shard short of
// rs-4-2's six, which the store cannot tell) is cairn.ErrCorrupt on GET,
// not the caller's cairn.ErrInvalid.
func TestGetRefusesManifestThatDoesNotFitItsCode(t *testing.T) {
	e := newEnv(t, 6, 1, "rs-4-2", Config{BlockSize: 1024})
	ctx := context.Background()
	m, err := e.c.Put(ctx, "bkt", "k", bytes.NewReader(randBytes(1, 5000)), PutOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	broken := *m
	broken.Shards = m.Shards[:5]
	if err := e.meta.UpdateManifest(ctx, &broken, m); err != nil {
		t.Fatal(err)
	}
	_, rc, err := e.c.Get(ctx, "bkt", "k", 0, -1)
	if err == nil {
		rc.Close()
	}
	if !errors.Is(err, cairn.ErrCorrupt) || errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("Get: %v, want ErrCorrupt and not ErrInvalid", err)
	}
}
