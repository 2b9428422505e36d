package decide

import (
	"testing"

	"cairn/codec"
	"cairn/codec/all"
	"cairn/repair/plan"
)

// TestChooseScheme: with rates the time models pick between the
// PUSH and PULL form of the scheme the targets allow. On the paper's disks
// (PULL-Sur writes at 5 MB/s under mixed I/O) PUSH wins; with fast disks
// behind slow links, a -Sur stripe that lost two shards is pulled (one pull
// serves both, while a push hop carries two partials); LRC keeps the
// configured scheme.
func TestChooseScheme(t *testing.T) {
	hdd := plan.Rates{Read: 120e6, Write: 110e6, MixedWrite: 5e6, Send: 100e6, Recv: 100e6}
	fast := plan.Rates{Read: 2e9, Write: 1e9, Send: 125e6, Recv: 125e6}
	rs, _ := all.New("rs-6-3")
	lrc, _ := all.New("lrc-4-2-1")
	for _, c := range []struct {
		rates       *plan.Rates
		code        codec.Code
		f           int
		given, want plan.Scheme
	}{
		{nil, rs, 2, plan.PushSur, plan.PushSur},
		{&hdd, rs, 1, plan.PushSur, plan.PushSur},
		{&hdd, rs, 2, plan.PushSur, plan.PushSur},
		{&hdd, rs, 1, plan.PullSur, plan.PushSur},
		{&fast, rs, 1, plan.PushSur, plan.PushSur}, // a tie: PUSH first
		{&fast, rs, 2, plan.PushSur, plan.PullSur},
		{&fast, rs, 2, plan.PushRep, plan.PushRep}, // -Rep: the replacement's link binds PULL
		{&fast, rs, 2, plan.PullRep, plan.PushRep},
		{&fast, lrc, 2, plan.PushSur, plan.PushSur},
	} {
		if got := Choose(c.given, c.code, c.f, 64<<20, c.rates, 1<<20); got != c.want {
			t.Errorf("rates %+v, %d lost, given %s: chose %s, want %s", c.rates, c.f, c.given, got, c.want)
		}
	}
}
