package gpbench

import (
	"fmt"
	"time"

	"cairn/bench/codecbench"
	"cairn/codec"
	"cairn/codec/all"
)

// MeasureShard is the shard size the decode rates are measured at: the
// chunk of repair weight 1.
const MeasureShard = 4 << 20

// Measure runs the real codecs on one core of this machine for about d
// per op and returns clay's sub-chunk repair rate (bytes rebuilt per
// second: one lost shard rebuilt from its helpers' β/α) and RS's decode
// rate (data bytes per second of a decode with one data shard lost, as
// cairn bench codec reports it: K·shard per call).
func Measure(clayCode, rsCode codec.Code, d time.Duration) (clayRepair, rsDecode float64, err error) {
	rate := func(c codec.Code, name string) (float64, error) {
		ops, err := codecbench.Ops(c, MeasureShard, 1)
		if err != nil {
			return 0, err
		}
		for _, op := range ops {
			if op.Name == name {
				r, err := codecbench.Measure(op, 1, d)
				return r.BytesPerS, err
			}
		}
		return 0, fmt.Errorf("gpbench: %s has no %s op", c.Policy(), name)
	}
	if clayRepair, err = rate(clayCode, "repair"); err != nil {
		return 0, 0, err
	}
	if rsDecode, err = rate(rsCode, "decode1"); err != nil {
		return 0, 0, err
	}
	return clayRepair, rsDecode, nil
}

// Codes returns the experiment's codes: clay-K-M-(K+M−1) and rs-K-M.
func Codes(k, m int) (clay, rs codec.Code, err error) {
	if clay, err = all.New(fmt.Sprintf("clay-%d-%d-%d", k, m, k+m-1)); err != nil {
		return nil, nil, err
	}
	if rs, err = all.New(fmt.Sprintf("rs-%d-%d", k, m)); err != nil {
		return nil, nil, err
	}
	return clay, rs, nil
}
