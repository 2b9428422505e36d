package robustore

import (
	"math"
	"testing"
	"time"
)

// The disks span the paper's 0.52–53 MB/s (scaled), average what its
// numbers imply (~11.6 MB/s for 64), and the background load gives each
// disk exactly its rate on average.
func TestDisks(t *testing.T) {
	const scale = 8
	ds := Disks(64, scale, 0.8, 64<<10, 1)
	lo, hi, sum := math.Inf(1), 0.0, 0.0
	for _, d := range ds {
		lo, hi, sum = min(lo, d.Rate), max(hi, d.Rate), sum+d.Rate
		if d.Load < 0 || d.Load > 0.8 {
			t.Fatalf("load %v", d.Load)
		}
		if d.Load > 0 {
			// Busy share: one request's time over the mean interval.
			busy := float64(d.BgBytes) / d.Raw / d.BgEvery.Seconds()
			if math.Abs(busy-d.Load) > 1e-6 || math.Abs(d.Raw*(1-d.Load)-d.Rate) > 1e-3 {
				t.Fatalf("disk %+v: background takes %.4f of its time", d, busy)
			}
		}
	}
	if math.Abs(lo*scale-PaperMinRate) > 1 || math.Abs(hi*scale-PaperMaxRate) > 1 {
		t.Fatalf("rates span %.0f–%.0f B/s ×%d, want the paper's 0.52–53 MB/s", lo, hi, scale)
	}
	if mean := sum / 64 * scale / 1e6; mean < 11 || mean > 12.5 {
		t.Fatalf("mean rate %.2f MB/s, want about 11.6", mean)
	}
	// The slowest disk is the most loaded; a seed reorders but keeps them.
	other := Disks(64, scale, 0.8, 64<<10, 2)
	same := 0
	for i := range ds {
		if ds[i].Rate == other[i].Rate {
			same++
		}
	}
	if same > 8 {
		t.Fatalf("seeds 1 and 2 put %d of 64 disks in the same place", same)
	}
	if s := ds[0].Spec(); s == "" || (ds[0].Load > 0) != (ds[0].BgEvery > time.Duration(0)) {
		t.Fatalf("spec %q of %+v", s, ds[0])
	}
}
