package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/node/wire"
)

// blockingStore records damage, each write waiting for release.
type blockingStore struct {
	release chan struct{}
	mu      sync.Mutex
	got     []cairn.Damage
}

func (s *blockingStore) PutDamage(ctx context.Context, d cairn.Damage) error {
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	s.got = append(s.got, d)
	s.mu.Unlock()
	return nil
}

func TestDamageKind(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("block 3: %w", cairn.ErrCorrupt), cairn.DamageCorrupt},
		{&wire.Error{Code: "corrupt", Err: cairn.ErrCorrupt}, cairn.DamageCorrupt},
		{&wire.Error{Code: "not_found", Err: cairn.ErrNotFound}, ""}, // the disk's directory may have vanished
		{&wire.Error{Code: "no_disk", Err: cairn.ErrNotFound}, ""},   // the node does not serve the disk: not the shard's fault
		{fmt.Errorf("node down: %w", cairn.ErrUnavailable), ""},
		{context.Canceled, ""},
	} {
		if got := damageKind(c.err); got != c.want {
			t.Errorf("damageKind(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestDamageReporter: reports never block a read, a shard is reported
// once within damageRepeat, a full queue drops, and Close writes what is
// queued.
func TestDamageReporter(t *testing.T) {
	st := &blockingStore{release: make(chan struct{})}
	r := newDamageReporter(st, slog.New(slog.DiscardHandler))
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	ver := "0123456789abcdef0123456789abcdef"
	corrupt := fmt.Errorf("x: %w", cairn.ErrCorrupt)
	start := time.Now()
	// The writer holds one record (blocked), the queue takes damageQueue.
	for i := range damageQueue + 50 {
		r.Report(client.Damage{Disk: "n1/d1", Name: cairn.ShardName(ver, i), Err: corrupt})
	}
	r.Report(client.Damage{Disk: "n1/d1", Name: cairn.ShardName(ver, 0), Err: corrupt})              // again: skipped
	r.Report(client.Damage{Disk: "n1/d1", Name: "bad name", Err: corrupt})                           // not a shard name
	r.Report(client.Damage{Disk: "n1/d2", Name: cairn.ShardName(ver, 0), Err: cairn.ErrUnavailable}) // not damage
	if d := time.Since(start); d > time.Second {
		t.Fatalf("reports blocked for %v", d)
	}
	close(st.release)
	r.Close()
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.got) < damageQueue || len(st.got) > damageQueue+1 {
		t.Fatalf("%d records written, want the queue's %d (and the one being written)", len(st.got), damageQueue)
	}
	seen := map[string]bool{}
	for _, d := range st.got {
		if d.Source != cairn.DamageRead || d.Kind != cairn.DamageCorrupt || d.Disk != "n1/d1" || seen[d.Shard] {
			t.Fatalf("record %+v (seen before: %v)", d, seen[d.Shard])
		}
		seen[d.Shard] = true
	}
}

// TestDamageReporterRepeat: a shard is reported again after damageRepeat.
func TestDamageReporterRepeat(t *testing.T) {
	st := &blockingStore{release: make(chan struct{})}
	close(st.release)
	r := newDamageReporter(st, slog.New(slog.DiscardHandler))
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	d := client.Damage{Disk: "n1/d1", Name: cairn.ShardName("0123456789abcdef0123456789abcdef", 1), Err: cairn.ErrCorrupt}
	r.Report(d)
	r.Report(d)
	now = now.Add(damageRepeat)
	r.Report(d)
	r.Close()
	if len(st.got) != 2 {
		t.Fatalf("%d records, want 2", len(st.got))
	}
}
