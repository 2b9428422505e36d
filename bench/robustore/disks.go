package robustore

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Paper's disks: individual disk performance from 0.52 to 53 MB/s, the
// result of block layouts and competing background workloads (RobuSTore
// §4.1.2). Log-spaced between the two, 64 disks average 11.6 MB/s, which
// is what the paper's own numbers imply (RAID-0 writing 1 GB at 30 MB/s
// waits for a ~0.5 MB/s disk; RobuSTore writing 4 GB at 186 MB/s uses
// ~745 MB/s of disk in all).
const (
	PaperMinRate = 0.52e6 // bytes per second
	PaperMaxRate = 53e6
)

// DiskModel is one throttled disk of the experiment (vfs.Throttle).
type DiskModel struct {
	Rate float64 // bytes/s this disk gives the experiment on average: Raw·(1−Load)
	Raw  float64 // its bandwidth alone (bw=)
	Load float64 // share of its time taken by competing background requests
	// Background requests: BgBytes at random times (a Poisson process,
	// seeded by BgSeed) every BgEvery on average (bg=, bgseed=); none if
	// Load is 0.
	BgEvery time.Duration
	BgBytes int64
	BgSeed  uint64
}

// Spec returns the --disk options for the model (after the path).
func (d DiskModel) Spec() string {
	s := fmt.Sprintf("bw=%d", int64(d.Raw))
	if d.Load > 0 {
		s += fmt.Sprintf(",bg=%v:%d,bgseed=%d", d.BgEvery, d.BgBytes, d.BgSeed)
	}
	return s
}

// Disks returns h disks whose rates are log-spaced from PaperMinRate to
// PaperMaxRate, each divided by scale, in an order shuffled by seed. A
// disk is slow partly by itself and partly because it is shared: the
// slowest has background requests taking maxLoad of its time, the fastest
// none, log-linearly in between (so the slow disks also vary most from one
// access to the next, as shared disks do). Background requests are bgBytes
// each.
func Disks(h int, scale, maxLoad float64, bgBytes int64, seed uint64) []DiskModel {
	out := make([]DiskModel, h)
	span := math.Log(PaperMaxRate / PaperMinRate)
	for i := range out {
		frac := 0.0
		if h > 1 {
			frac = float64(i) / float64(h-1)
		}
		rate := PaperMinRate * math.Exp(frac*span) / scale
		load := maxLoad * (1 - frac)
		raw := rate / (1 - load)
		d := DiskModel{Rate: rate, Raw: raw, Load: load}
		if load > 0 {
			// One background request occupies bgBytes/raw; arriving every
			// BgEvery on average, it takes that over BgEvery of the time.
			d.BgBytes = bgBytes
			d.BgEvery = time.Duration(float64(bgBytes) / raw / load * float64(time.Second))
			d.BgSeed = seed*1000 + uint64(i) + 1
		}
		out[i] = d
	}
	rng := rand.New(rand.NewPCG(seed, 0x646b))
	rng.Shuffle(h, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
