package gpbench

import (
	"fmt"
	"strings"
	"testing"

	"cairn/codec/clay"
	"cairn/internal/golden"
)

func testModel(t *testing.T) *Model {
	t.Helper()
	c, err := clay.New(10, 4, 13)
	if err != nil {
		t.Fatal(err)
	}
	md, err := NewModel(PaperMachine, c, LRCRead)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// TestHelperReads checks the model's helper reads against Clay's
// structure (codec/clay doc): each helper reads β/α = 1/4 of the shard, in
// q^{y0} runs for a lost node in y-section y0.
func TestHelperReads(t *testing.T) {
	md := testModel(t)
	// clay-10-4-13: q = 4, ν = 2 virtual nodes after the data; nodes
	// 0-3 y0=0, 4-7 y0=1, 8-9 y0=2 (10, 11 virtual), parity 12-15 y0=3.
	wantRuns := []int{1, 1, 1, 1, 4, 4, 4, 4, 16, 16, 64, 64, 64, 64}
	for lost, want := range wantRuns {
		if got := len(md.runs[lost]); got != want {
			t.Errorf("shard %d: %d runs, want %d", lost, got, want)
		}
		if _, b := md.helperRead(lost, 64<<20); b != 16<<20 {
			t.Errorf("shard %d: a helper reads %v bytes of 64 MiB, want 16 MiB", lost, b)
		}
		if md.helpers[lost] != 13 {
			t.Errorf("shard %d: %d helpers, want 13", lost, md.helpers[lost])
		}
	}
	// One run: one seek and the bytes. 64 runs of 4 KiB sub-chunks 12 KiB
	// apart: reading through a gap beats a seek.
	seek := md.seek()
	if got, _ := md.helperRead(0, 256<<20); !near(got, seek+float64(64<<20)/md.M.DiskRate) {
		t.Errorf("one run of 64 MiB: %v s", got)
	}
	got, _ := md.helperRead(13, 1<<20)
	if want := seek + float64((1<<20)-3*(4<<10))/md.M.DiskRate; !near(got, want) {
		t.Errorf("64 runs of 4 KiB: %v s, want %v (read through the gaps)", got, want)
	}
}

// modelRows runs the model of every scheme on count objects of W1.
func modelRows(t *testing.T, count int) []Row {
	t.Helper()
	w := W1
	w.Count = count
	rows, err := testModel(t).Run(Schemes, w.Sizes())
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func near(a, b float64) bool { return a > b*0.999999 && a < b*1.000001 }

// TestModelGolden prints the model's rows for a small W1 on the paper's
// machine with fixed decode rates: review changes to the model as diffs.
func TestModelGolden(t *testing.T) {
	rows := modelRows(t, 400)
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%-10s recovery %6.3f GB/s (%s)  normal %.4f s  degraded %.4f s  small %.4f\n",
			r.Scheme, r.RecoveryBps/1e9, r.Bound, r.NormalRead, r.DegradedRead, r.SmallShare)
	}
	s := Summarize(rows)
	fmt.Fprintf(&b, "summary %+v\n", s)
	golden.Check(t, "model.txt", b.String())
}

// TestModelShape checks relations the paper explains by mechanism, which
// any faithful model must keep: tiny Clay strips recover slower than RS
// (scattered sub-chunks), bigger contiguous chunks recover faster but read
// slower degraded (whole-chunk repair), and a bigger s0 puts more bytes in
// the small-size bucket.
func TestModelShape(t *testing.T) {
	rows := modelRows(t, 300)
	by := map[string]Row{}
	for _, r := range rows {
		by[r.Scheme] = r
	}
	if by["stripe"].RecoveryBps >= by["rs"].RecoveryBps {
		t.Errorf("Clay in 256 KiB strips recovers at %v, RS at %v", by["stripe"].RecoveryBps, by["rs"].RecoveryBps)
	}
	if by["con-16M"].RecoveryBps >= by["con-256M"].RecoveryBps || by["con-16M"].DegradedRead >= by["con-256M"].DegradedRead {
		t.Errorf("contiguous 16M vs 256M: %+v %+v", by["con-16M"], by["con-256M"])
	}
	if !(by["geo-1M"].SmallShare < by["geo-4M"].SmallShare && by["geo-4M"].SmallShare < by["geo-16M"].SmallShare) {
		t.Errorf("small-size bucket shares: %v %v %v", by["geo-1M"].SmallShare, by["geo-4M"].SmallShare, by["geo-16M"].SmallShare)
	}
	for _, r := range rows {
		if r.DegradedRead < r.NormalRead*0.999 {
			t.Errorf("%s: degraded read %v faster than normal %v", r.Scheme, r.DegradedRead, r.NormalRead)
		}
	}
}
