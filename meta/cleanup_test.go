package meta

import (
	"fmt"
	"testing"
	"time"

	"cairn"
)

// TestDiscardedSplits: a write that drops more than MaxCleanupFiles files
// queues them in records of at most that many, every file once.
func TestDiscardedSplits(t *testing.T) {
	files := make([]cairn.ShardFile, 2*cairn.MaxCleanupFiles+1)
	for i := range files {
		files[i] = cairn.ShardFile{Disk: "n/d", Name: fmt.Sprint(i)}
	}
	n := 0
	suffix := func() string { n++; return fmt.Sprint(n) }
	since := time.Unix(100, 0)
	cs := Discarded(since, cairn.CleanupDelete, "b", "k", files, suffix)
	if len(cs) != 3 || len(cs[0].Files) != cairn.MaxCleanupFiles || len(cs[2].Files) != 1 {
		t.Fatalf("got %d records", len(cs))
	}
	seen := map[string]bool{}
	for _, c := range cs {
		if c.Since != since || c.Reason != cairn.CleanupDelete || c.ID[:19] != cairn.CleanupPrefix(since) {
			t.Fatalf("record %+v", c)
		}
		for _, f := range c.Files {
			seen[f.Name] = true
		}
	}
	if len(seen) != len(files) {
		t.Fatalf("%d files queued, want %d", len(seen), len(files))
	}
	if Discarded(since, "x", "b", "k", nil, suffix) != nil {
		t.Fatal("records for no files")
	}
}
