package cleanup_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/cleanup"
	"cairn/meta/mem"
)

// files is a fake Deleter: a set of files, and disks whose deletes fail.
type files struct {
	mu      sync.Mutex
	have    map[cairn.ShardFile]bool // guarded by mu
	broken  map[cairn.DiskID]bool    // guarded by mu
	deletes int                      // guarded by mu
}

var _ cleanup.Deleter = (*files)(nil)

func (f *files) DeleteShard(ctx context.Context, disk cairn.DiskID, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes++
	if f.broken[disk] {
		return fmt.Errorf("%w: disk %s does not answer", cairn.ErrUnavailable, disk)
	}
	k := cairn.ShardFile{Disk: disk, Name: name}
	if !f.have[k] {
		return fmt.Errorf("%s: %w", name, cairn.ErrNotFound)
	}
	delete(f.have, k)
	return nil
}

func (f *files) left() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.have)
}

// queue puts a record of n files (on disks d0..d2) dropped at since.
func queue(t *testing.T, s *mem.Store, f *files, since time.Time, version int, n int) {
	t.Helper()
	c := cairn.Cleanup{Since: since, Reason: cairn.CleanupOverwrite, Bucket: "b", Key: fmt.Sprint(version)}
	f.mu.Lock()
	for i := range n {
		sf := cairn.ShardFile{Disk: cairn.DiskID(fmt.Sprintf("n%d/d", i%3)), Name: cairn.ShardName(fmt.Sprintf("%032x", version), i)}
		f.have[sf] = true
		c.Files = append(c.Files, sf)
	}
	f.mu.Unlock()
	if err := s.PutCleanup(t.Context(), c); err != nil {
		t.Fatal(err)
	}
}

func pending(t *testing.T, s *mem.Store) []cairn.Cleanup {
	t.Helper()
	cs, err := s.Cleanups(t.Context(), time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC), 100)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestGrace: files stay for the grace period after they were dropped and
// are deleted once it has passed; files never named (Since zero) go at
// once.
func TestGrace(t *testing.T) {
	s := mem.New()
	f := &files{have: map[cairn.ShardFile]bool{}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	queue(t, s, f, t0, 1, 6)
	queue(t, s, f, time.Time{}, 2, 2) // a failed write's
	w := cleanup.New(s, f, cleanup.Config{})
	st, err := w.Run(t.Context(), t0.Add(cleanup.DefaultGrace-time.Second))
	if err != nil || st.Deleted != 2 || st.Done != 1 || f.left() != 6 {
		t.Fatalf("before the grace period: %+v, %v, %d files left; want only the failed write's 2 deleted", st, err, f.left())
	}
	st, err = w.Run(t.Context(), t0.Add(cleanup.DefaultGrace))
	if err != nil || st.Deleted != 6 || st.Done != 1 || f.left() != 0 || len(pending(t, s)) != 0 {
		t.Fatalf("after the grace period: %+v, %v, %d files left, %d records", st, err, f.left(), len(pending(t, s)))
	}
}

// TestRetries: files on a disk that does not answer are re-queued with
// the backoff, deleted once it answers, and given up after MaxAttempts;
// files already gone count as deleted.
func TestRetries(t *testing.T) {
	// Synthetic time: a failed delete is retried after a second.
	synctest.Test(t, func(t *testing.T) {
		s := mem.New()
		f := &files{have: map[cairn.ShardFile]bool{}, broken: map[cairn.DiskID]bool{"n1/d": true}}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		queue(t, s, f, time.Time{}, 1, 6) // two files on n1/d
		delete(f.have, cairn.ShardFile{Disk: "n0/d", Name: cairn.ShardName(fmt.Sprintf("%032x", 1), 0)})
		w := cleanup.New(s, f, cleanup.Config{Grace: -1, MaxAttempts: 3})
		st, err := w.Run(t.Context(), now)
		if err != nil || st.Deleted != 4 || st.Requeued != 1 || f.left() != 2 {
			t.Fatalf("first attempt: %+v, %v, %d files left", st, err, f.left())
		}
		cs := pending(t, s)
		if len(cs) != 1 || len(cs[0].Files) != 2 || cs[0].Attempts != 1 || cs[0].LastError == "" {
			t.Fatalf("re-queued %+v", cs)
		}
		backoff := cleanup.DefaultBackoff.Delay(0)
		if st, _ := w.Run(t.Context(), now.Add(backoff-time.Second)); st != (cleanup.Stats{}) {
			t.Fatalf("before the backoff: %+v", st)
		}
		st, err = w.Run(t.Context(), now.Add(backoff))
		if err != nil || st.Requeued != 1 || pending(t, s)[0].Attempts != 2 {
			t.Fatalf("second attempt: %+v, %v, %+v", st, err, pending(t, s))
		}
		st, err = w.Run(t.Context(), now.Add(time.Hour+backoff))
		if err != nil || st.Dropped != 1 || len(pending(t, s)) != 0 || f.left() != 2 {
			t.Fatalf("third attempt: %+v, %v, %d records, %d files left; want it given up", st, err, len(pending(t, s)), f.left())
		}

		queue(t, s, f, time.Time{}, 2, 3)
		f.mu.Lock()
		f.broken = nil
		f.mu.Unlock()
		if st, err := w.Run(t.Context(), now); err != nil || st.Deleted != 3 || f.left() != 2 {
			t.Fatalf("with the disk back: %+v, %v", st, err)
		}
	})
}

// TestRate: deletes are paced at Config.Rate over all records.
func TestRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mem.New()
		f := &files{have: map[cairn.ShardFile]bool{}}
		for v := range 10 {
			queue(t, s, f, time.Time{}, v, 10)
		}
		w := cleanup.New(s, f, cleanup.Config{Rate: 20, Page: 3})
		start := time.Now()
		st, err := w.Run(t.Context(), start)
		took := time.Since(start)
		if err != nil || st.Deleted != 100 || st.Done != 10 || f.left() != 0 {
			t.Fatalf("%+v, %v, %d left", st, err, f.left())
		}
		// 100 deletes at 20/s with a burst of 20: 4 s.
		if took < 4*time.Second || took > 5*time.Second {
			t.Fatalf("100 deletes at 20/s took %v", took)
		}
	})
}

// TestStopped: a Run whose ctx ends leaves the records it had not settled
// in the queue.
func TestStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mem.New()
		f := &files{have: map[cairn.ShardFile]bool{}}
		queue(t, s, f, time.Time{}, 1, 100)
		w := cleanup.New(s, f, cleanup.Config{Rate: 10})
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		if _, err := w.Run(ctx, time.Now()); err == nil {
			t.Fatal("a stopped Run returned no error")
		}
		if cs := pending(t, s); len(cs) != 1 || len(cs[0].Files) != 100 {
			t.Fatalf("after a stopped Run: %+v", cs)
		}
	})
}
