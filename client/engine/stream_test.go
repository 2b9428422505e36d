package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn/internal/golden"
)

// streamDisk writes one block of a stream per perBlock; fail makes the
// stream's final acknowledgement an error, silent withholds it for ever
// (a node cut off after it took the bytes).
type streamDisk struct {
	perBlock time.Duration
	fail     bool
	silent   bool
}

type streamResult struct {
	trace     strings.Builder
	done      time.Duration
	failed    error
	sent      map[ReqID]Action
	acked     map[ReqID]bool
	cancelled map[ReqID]bool
}

// simStream drives a Stream write on a 1 ms virtual clock the way the PUT
// path does: an object of `blocks` stripes; the encoder makes stripe s
// once every open stream is fewer than lag blocks behind it; a stream
// takes its next block when its disk is free (Progress), and is acked
// when it has written all of them. A stream started later (a spare)
// catches up from block 0: the driver still holds every stripe, until
// stopSparesAt (if > 0), when it calls StopSpares.
func simStream(t *testing.T, w *Write, disks []streamDisk, blocks, lag int, stopSparesAt time.Duration) *streamResult {
	t.Helper()
	res := &streamResult{sent: map[ReqID]Action{}, acked: map[ReqID]bool{}, cancelled: map[ReqID]bool{}}
	type stream struct {
		disk      int
		took      int
		busyUntil time.Duration
	}
	open := map[ReqID]*stream{}
	produced := 0
	ended := false
	apply := func(now time.Duration, acts []Action) {
		for _, a := range acts {
			fmt.Fprintf(&res.trace, "%6s  %s\n", now, a)
			switch a.Kind {
			case Send:
				res.sent[a.Req] = a
				open[a.Req] = &stream{disk: a.Disk, busyUntil: now}
			case Cancel:
				res.cancelled[a.Req] = true
				delete(open, a.Req)
			case Done:
				res.done, ended = now, true
			case Fail:
				res.done, res.failed, ended = now, a.Err, true
			}
		}
	}
	apply(0, w.Start(0))
	for now := time.Duration(0); !ended; now += ms {
		if now > time.Hour {
			t.Fatal("simulation ran past an hour of virtual time")
		}
		if stopSparesAt > 0 && now == stopSparesAt {
			w.StopSpares()
			fmt.Fprintf(&res.trace, "%6s  (spares stopped)\n", now)
		}
		// The encoder runs ahead as far as the slowest open stream allows.
		for produced < blocks {
			ok := true
			for _, s := range open {
				if produced-s.took >= lag {
					ok = false
				}
			}
			if !ok {
				break
			}
			produced++
		}
		for _, id := range slices.Sorted(maps.Keys(open)) {
			s, ok := open[id]
			if !ok || ended || s.busyUntil > now { // cancelled meanwhile, or the write ended
				continue
			}
			if s.took == blocks && disks[s.disk].silent {
				continue
			}
			if s.took == blocks {
				delete(open, id)
				ok := !disks[s.disk].fail
				res.acked[id] = true
				fmt.Fprintf(&res.trace, "%6s  finished r%d ok=%v\n", now, id, ok)
				apply(now, w.Acked(id, ok, now))
				continue
			}
			if s.took < produced {
				s.took++
				s.busyUntil = now + disks[s.disk].perBlock
				w.Progress(id, now)
			}
		}
		if !ended && now%(5*ms) == 0 {
			apply(now, w.Tick(now))
		}
	}
	for id := range res.sent {
		if !res.acked[id] && !res.cancelled[id] {
			t.Fatalf("request r%d was neither finished nor cancelled", id)
		}
	}
	return res
}

func streamDisks(perBlock ...time.Duration) []streamDisk {
	var d []streamDisk
	for _, p := range perBlock {
		d = append(d, streamDisk{perBlock: p})
	}
	return d
}

func rsStream(disks int) WriteConfig {
	return WriteConfig{Disks: disks, Primaries: 6, Target: 6, MaxBlock: 256 - 4 + 6, MaxPerDisk: 1,
		Stream: true, Lag: 4, MinWait: 20 * ms}
}

// A 16-stripe rs-4-2 PUT streamed to six disks, one of them 100× slower,
// with two spare disks: the slow stream holds the write back, is replaced
// by spare parity row 6 on a spare disk (which catches up from the
// stripes the driver holds) and cancelled; the write completes without it.
func TestStreamWriteReplacesSlowDisk(t *testing.T) {
	fast := simStream(t, must(NewWrite(rsStream(8))), streamDisks(2*ms, 2*ms, 2*ms, 2*ms, 2*ms, 2*ms, 2*ms, 2*ms), 16, 4, 0)
	w := must(NewWrite(rsStream(8)))
	res := simStream(t, w, streamDisks(2*ms, 2*ms, 2*ms, 200*ms, 2*ms, 2*ms, 2*ms, 2*ms), 16, 4, 0)
	golden.Check(t, "stream_rs_slow_disk.txt", res.trace.String())
	if res.failed != nil {
		t.Fatal(res.failed)
	}
	t.Logf("all disks fast: %v; disk 3 100× slower: %v", fast.done, res.done)
	if res.done > 2*fast.done+rsStream(8).MinWait {
		t.Fatalf("the write took %v, more than twice the %v without a slow disk plus the straggler wait", res.done, fast.done)
	}
	if !res.cancelled[3] {
		t.Fatal("the slow disk's stream was not cancelled")
	}
	blocks := map[int]bool{}
	for _, p := range w.Durable() {
		if p.Disk == 3 {
			t.Fatal("the slow disk counted as durable")
		}
		blocks[p.Block] = true
	}
	if len(w.Durable()) != 6 || !blocks[6] || blocks[3] {
		t.Fatalf("durable %v: want rows 0-2, 4-6", w.Durable())
	}
}

// Without a spare disk, or once the driver can no longer start a stream
// from the beginning, the slow stream is waited for: the write still
// completes, with every block on its own disk.
func TestStreamWriteWaitsWithoutSpares(t *testing.T) {
	slow := streamDisks(2*ms, 2*ms, 2*ms, 200*ms, 2*ms, 2*ms, 2*ms, 2*ms)
	for _, tc := range []struct {
		name  string
		disks int
		stop  time.Duration
	}{{"no spare disk", 6, 0}, {"spares stopped", 8, 5 * ms}} {
		t.Run(tc.name, func(t *testing.T) {
			w := must(NewWrite(rsStream(tc.disks)))
			res := simStream(t, w, slow[:tc.disks], 16, 4, tc.stop)
			if res.failed != nil {
				t.Fatal(res.failed)
			}
			if res.done < 16*200*ms || len(res.cancelled) != 0 || len(w.Durable()) != 6 {
				t.Fatalf("done at %v, %d cancelled, %d durable: want the slow disk waited for", res.done, len(res.cancelled), len(w.Durable()))
			}
		})
	}
}

// A stream that fails at the end is replaced by a spare; with spares
// stopped the write fails with ErrUnavailable rather than acknowledging
// less redundancy.
func TestStreamWriteFailure(t *testing.T) {
	d := streamDisks(2*ms, 2*ms, 2*ms, 2*ms, 2*ms, 2*ms, 2*ms)
	d[1].fail = true
	w := must(NewWrite(rsStream(7)))
	res := simStream(t, w, d, 8, 4, 0)
	if res.failed != nil || len(w.Durable()) != 6 {
		t.Fatalf("one failed stream, one spare: %v, %d durable", res.failed, len(w.Durable()))
	}
	w = must(NewWrite(rsStream(7)))
	res = simStream(t, w, d, 8, 4, 3*ms)
	if !errors.Is(res.failed, ErrUnavailable) {
		t.Fatalf("a failed stream with spares stopped: %v, want ErrUnavailable", res.failed)
	}
}

// Streams of a slow body (the encoder, not a disk, sets the pace) are all
// equally slow: nobody holds the write back, so nothing is replaced.
func TestStreamWriteSlowBodyReplacesNothing(t *testing.T) {
	w := must(NewWrite(rsStream(8)))
	res := simStream(t, w, streamDisks(100*ms, 100*ms, 100*ms, 100*ms, 100*ms, 100*ms, 2*ms, 2*ms), 8, 4, 0)
	if res.failed != nil || len(res.cancelled) != 0 {
		t.Fatalf("uniformly slow disks: %v, %d cancelled", res.failed, len(res.cancelled))
	}
}

// A disk that takes a stream's every block and never answers (its node
// cut off from the network) holds nothing back, but the write must not
// wait for it: once the others are durable and it is overdue by the
// straggler limit, a spare row replaces it and it is cancelled — for a
// one-stripe object as for a longer one. With spares stopped it is
// waited for (the driver's timeouts end it).
func TestStreamWriteReplacesSilentDisk(t *testing.T) {
	for _, blocks := range []int{1, 16} {
		t.Run(fmt.Sprint(blocks, " stripes"), func(t *testing.T) {
			d := streamDisks(2*ms, 2*ms, 2*ms, 2*ms, 2*ms, 2*ms, 2*ms, 2*ms)
			d[2].silent = true
			w := must(NewWrite(rsStream(8)))
			res := simStream(t, w, d, blocks, 4, 0)
			if blocks == 1 {
				golden.Check(t, "stream_rs_silent_disk.txt", res.trace.String())
			}
			if res.failed != nil {
				t.Fatal(res.failed)
			}
			if !res.cancelled[2] || len(w.Durable()) != 6 {
				t.Fatalf("silent disk cancelled: %v, %d durable", res.cancelled[2], len(w.Durable()))
			}
			for _, p := range w.Durable() {
				if p.Disk == 2 {
					t.Fatal("the silent disk counted as durable")
				}
			}
			// The limit is 3× the others' latency (at least MinWait), then a
			// spare writes the whole object.
			if limit := 3*time.Duration(blocks)*2*ms + rsStream(8).MinWait + time.Duration(blocks)*2*ms + 10*ms; res.done > limit {
				t.Fatalf("done at %v, want by %v", res.done, limit)
			}
		})
	}
}

func must(w *Write, err error) *Write {
	if err != nil {
		panic(err)
	}
	return w
}
