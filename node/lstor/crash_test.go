package lstor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"cairn/internal/vfs"
)

// reopenAfterCrash opens a crash clone, which replays the journal, and
// checks the store is consistent: its Lstor is the XOR of its slots.
func reopenAfterCrash(t *testing.T, c *vfs.MemFS, step string) *Store {
	t.Helper()
	s, err := Open(context.Background(), testConfig(c))
	if err != nil {
		t.Fatalf("%s: reopen: %v", step, err)
	}
	rep, err := s.Verify(context.Background())
	if err != nil || !rep.OK() {
		t.Fatalf("%s: after replay: %v: %v", step, err, rep)
	}
	return s
}

// checkRecords checks the write in progress: each of its records' ranges
// holds all its old bytes or all its new ones, and records are applied in
// order: once one is old, every later one is too. A Zero's records run
// from the end of its range backwards.
func checkRecords(t *testing.T, s *Store, step string, slot int, off int64, old, new []byte) {
	checkRecordOrder(t, s, step, slot, off, old, new, false)
}

func checkRecordOrder(t *testing.T, s *Store, step string, slot int, off int64, old, new []byte, backwards bool) {
	t.Helper()
	got := make([]byte, len(new))
	if err := s.ReadAt(slot, got, off); err != nil {
		t.Fatal(err)
	}
	var ranges [][2]int
	for i := 0; i < len(new); i += testCap {
		ranges = append(ranges, [2]int{i, min(i+testCap, len(new))})
	}
	if backwards {
		ranges = ranges[:0]
		for e := len(new); e > 0; e -= testCap {
			ranges = append(ranges, [2]int{max(0, e-testCap), e})
		}
	}
	sawOld := false
	for _, r := range ranges {
		i, e := r[0], r[1]
		switch {
		case bytes.Equal(got[i:e], new[i:e]) && !sawOld:
		case bytes.Equal(got[i:e], old[i:e]):
			sawOld = true
		default:
			t.Fatalf("%s: record [%d, %d) of the operation in progress is torn or out of order", step, i, e)
		}
	}
}

// TestCrashAtEveryStepOfWrite crashes before every write and sync of a
// write that spans several records (and after it returns), keeping only
// synced state or random unsynced parts too: after replay the Lstor is the
// XOR of the slots, acknowledged bytes are intact, and each record of the
// write in progress is old or new.
func TestCrashAtEveryStepOfWrite(t *testing.T) {
	r := testRand(t)
	for _, pct := range []int{0, 50, 100} {
		t.Run(fmt.Sprintf("unsynced=%d%%", pct), func(t *testing.T) {
			ctx := context.Background()
			mem := vfs.NewCrashableMem()
			h := &hookFS{FS: mem}
			s := openTest(t, h)
			m := newModel()
			first := randBytes(r, 2*BlockSize)
			if err := s.Write(ctx, 1, 100, first); err != nil {
				t.Fatal(err)
			}
			copy(m[1][100:], first)
			const off = BlockSize - 300
			p := randBytes(r, 2*testCap+500)
			old := bytes.Clone(m[1][off : off+int64(len(p))])
			cfg := vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: r}
			var clones []*vfs.MemFS
			var ops []string
			h.hook = func(op string) {
				clones = append(clones, mem.CrashClone(cfg))
				ops = append(ops, op)
			}
			if err := s.Write(ctx, 1, off, p); err != nil {
				t.Fatal(err)
			}
			h.hook = nil
			if len(clones) < 3*8 {
				t.Fatalf("only %d crash points in a 3-record write", len(clones))
			}
			for i, c := range clones {
				step := fmt.Sprintf("crash before op %d (%s)", i, ops[i])
				cs := reopenAfterCrash(t, c, step)
				checkRecords(t, cs, step, 1, off, old, p)
				// Bytes outside the write in progress are the acknowledged ones.
				want := *m
				got := make([]byte, testSize)
				for slot := range testSlots {
					if err := cs.ReadAt(slot, got, 0); err != nil {
						t.Fatal(err)
					}
					if slot == 1 {
						copy(got[off:], old)
					}
					if !bytes.Equal(got, want[slot]) {
						t.Fatalf("%s: slot %d lost acknowledged bytes", step, slot)
					}
				}
				cs.Close()
			}
			copy(m[1][off:], p)
			cs := reopenAfterCrash(t, mem.CrashClone(cfg), "after ack")
			m.check(t, cs, "after ack")
			cs.Close()
		})
	}
}

// TestRandomKill is the kill -9 test in memory: 150 runs of random writes,
// appends at the high-water mark (the zero-region shortcut) and online
// deletes, each run crashed at a random operation; after replay the Lstor
// is the XOR of the slots, no slot holds data past its high-water mark,
// and every acknowledged operation reads back byte-exact.
func TestRandomKill(t *testing.T) {
	r := testRand(t)
	for iter := range 150 {
		ctx := context.Background()
		mem := vfs.NewCrashableMem()
		h := &hookFS{FS: mem}
		s, err := Open(ctx, testConfig(h))
		if err != nil {
			t.Fatal(err)
		}
		m := newModel()
		crashAt, ops := r.IntN(120), 0
		var crashed *vfs.MemFS
		h.hook = func(string) {
			if ops == crashAt {
				crashed = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: r.IntN(101), RNG: r})
			}
			ops++
		}
		type pending struct {
			slot     int
			off      int64
			old, new []byte
			zero     bool
		}
		var inflight *pending
		for crashed == nil {
			slot, off := r.IntN(testSlots), r.Int64N(testSize)
			op := r.IntN(10)
			if op < 3 && s.HWM(slot) < testSize {
				off = s.HWM(slot) // an append: no old-data read
			}
			p := randBytes(r, int(r.Int64N(min(testSize-off, 2*testCap)+1)))
			inflight = &pending{slot, off, bytes.Clone(m[slot][off : off+int64(len(p))]), p, op >= 7}
			var err error
			if inflight.zero {
				clear(p)
				err = s.Zero(ctx, slot, off, int64(len(p)))
			} else {
				err = s.Write(ctx, slot, off, p)
			}
			if err != nil {
				t.Fatal(err)
			}
			if crashed != nil {
				break // the crash hit this write: it is not acknowledged
			}
			copy(m[slot][off:], p)
		}
		s.Close()
		step := fmt.Sprintf("iteration %d, crash at op %d", iter, crashAt)
		cs := reopenAfterCrash(t, crashed, step)
		checkRecordOrder(t, cs, step, inflight.slot, inflight.off, inflight.old, inflight.new, inflight.zero)
		copy(m[inflight.slot][inflight.off:], inflight.old)
		got := make([]byte, testSize)
		for slot := range testSlots {
			if err := cs.ReadAt(slot, got, 0); err != nil {
				t.Fatal(err)
			}
			if slot == inflight.slot {
				copy(got[inflight.off:], inflight.old)
			}
			if !bytes.Equal(got, m[slot]) {
				t.Fatalf("%s: slot %d lost acknowledged bytes", step, slot)
			}
		}
		cs.Close()
	}
}

// TestCorruptJournalRecord: a durable record damaged on the Lstor fails
// its CRC at open; it is not replayed, the store is marked for
// verification (durably), writes are refused until a resync, and the
// resync makes the Lstor the XOR of the slots again.
func TestCorruptJournalRecord(t *testing.T) {
	r := testRand(t)
	ctx := context.Background()
	mem := vfs.NewCrashableMem()
	h := &hookFS{FS: mem}
	s := openTest(t, h)
	old := randBytes(r, 1000)
	if err := s.Write(ctx, 2, 5000, old); err != nil {
		t.Fatal(err)
	}
	// Crash right after the record's header is synced: a complete record.
	var clone *vfs.MemFS
	syncs := 0
	h.hook = func(op string) {
		if op == "sync" {
			if syncs++; syncs == 3 { // payload sync, header sync, then the data's
				clone = mem.CrashClone(vfs.CrashCloneCfg{})
			}
		}
	}
	if err := s.Write(ctx, 2, 5000, randBytes(r, 1000)); err != nil {
		t.Fatal(err)
	}
	h.hook = nil
	// The intact record replays.
	ok := clone.CrashClone(vfs.CrashCloneCfg{})
	reopenAfterCrash(t, ok, "intact record").Close()
	// A damaged one does not.
	probe := &Store{cfg: testConfig(clone)}
	flip(t, clone, "/lstor/disk/LSTOR", probe.journalOff()+RecordHeaderSize+10)
	cs, err := Open(ctx, testConfig(clone))
	if err != nil {
		t.Fatal(err)
	}
	if !cs.NeedsVerify() {
		t.Fatal("a record failing its CRC did not mark the store for verification")
	}
	got := make([]byte, 1000)
	if err := cs.ReadAt(2, got, 5000); err != nil || !bytes.Equal(got, old) {
		t.Fatalf("the corrupt record was replayed (or the read failed: %v)", err)
	}
	if err := cs.Write(ctx, 0, 0, []byte{1}); !errors.Is(err, ErrNeedsVerify) {
		t.Fatalf("write on a marked store: %v, want ErrNeedsVerify", err)
	}
	rep, err := cs.Verify(ctx)
	if err != nil || rep.OK() || !rep.NeedsVerify || !rep.Journal {
		t.Fatalf("verify of a marked store: %v %v", err, rep)
	}
	cs.Close()
	// The mark survives a restart.
	cs, err = Open(ctx, testConfig(clone))
	if err != nil || !cs.NeedsVerify() {
		t.Fatalf("reopen: %v, marked %v", err, cs != nil && cs.NeedsVerify())
	}
	if err := cs.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, cs)
	if err := cs.Write(ctx, 0, 0, []byte{1}); err != nil {
		t.Fatalf("write after resync: %v", err)
	}
	cs.Close()
	fsck(t, clone)
}
