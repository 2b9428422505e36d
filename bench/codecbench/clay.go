package codecbench

import "cairn/codec"

// subChunkRepairOp is the repair op of codes that rebuild a shard from
// sub-chunks of their helpers (Clay): shard 0 is lost, every other shard is
// available, and each helper's planned runs are gathered once, as the
// helper would send them; the timed call rebuilds the shard from those
// bytes alone. Extra fields: repair_read_bytes = bytes read from helpers
// per byte rebuilt (d·β/α for Clay), helpers = number of helpers read.
func subChunkRepairOp(c codec.Code, r codec.SubChunkRepairer, shard int, stripe func() ([][]byte, error)) (Op, bool, error) {
	p := c.Params()
	avail := make([]int, 0, p.N()-1)
	for i := 1; i < p.N(); i++ {
		avail = append(avail, i)
	}
	plan, err := r.SubChunkPlan(0, avail, shard)
	if err != nil {
		return Op{}, false, err
	}
	return Op{
		Name: "repair", Bytes: int64(shard),
		Extra: map[string]float64{
			"repair_read_bytes": float64(plan.ReadBytes()) / float64(shard),
			"helpers":           float64(len(plan.Helpers)),
		},
		New: func() (func() error, error) {
			s, err := stripe()
			reads := make([][]byte, len(plan.Helpers))
			for i, h := range plan.Helpers {
				reads[i] = h.Gather(make([]byte, 0, h.Bytes()), s[h.Shard])
			}
			out := make([]byte, shard)
			return func() error { return plan.Repair(reads, out) }, err
		},
	}, true, nil
}
