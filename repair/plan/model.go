package plan

import (
	"fmt"
	"math"
)

// Rates are one node's measured throughputs, in bytes per second. The time
// of an operation on one request unit is t_x = S_block / rate_x.
type Rates struct {
	Read  float64 // sequential read of local shards (read-ahead region)
	Write float64 // batched sequential write of rebuilt data
	// MixedWrite is the write throughput under PULL-Sur's mixed pattern
	// (one write for every k−1 reads served to peers: the paper's Fig. 6
	// measures < 5 MB/s on HDDs). 0 means Write.
	MixedWrite float64
	// ServeRead is the read throughput of a helper serving pullers one
	// request unit at a time (PULL): on a spinning disk shared by several
	// pullers each unit costs a seek. 0 means Read.
	ServeRead float64
	// SharedDisk says reads and writes go to one device, so their times
	// add up instead of overlapping (one spinning disk per node).
	SharedDisk bool
	Send, Recv float64 // network
}

func (r Rates) mixed() float64 {
	if r.MixedWrite > 0 {
		return r.MixedWrite
	}
	return r.Write
}

func (r Rates) serve() float64 {
	if r.ServeRead > 0 {
		return r.ServeRead
	}
	return r.Read
}

// diskTimes returns the time of the given bytes (or request units) of
// local reads, reads served to pullers and writes at these rates, and the
// binding disk resource: reads and writes overlap, unless SharedDisk.
func (r Rates) diskTimes(read, serve, write float64, mixed bool) (float64, string) {
	wr := r.Write
	if mixed {
		wr = r.mixed()
	}
	rd, wt := read/r.Read+serve/r.serve(), write/wr
	switch {
	case r.SharedDisk:
		return rd + wt, "disk"
	case wt > rd:
		return wt, "write"
	}
	return rd, "read"
}

func (r Rates) valid() bool {
	for _, v := range []float64{r.Read, r.Write, r.Send, r.Recv} {
		if !(v > 0) || math.IsInf(v, 0) {
			return false
		}
	}
	return r.MixedWrite >= 0 && r.ServeRead >= 0 && !math.IsInf(r.ServeRead, 0)
}

// Model holds the inputs of the reconstruction-time models: a (k+r, k)
// code with f failed nodes, each of which held SNode bytes, repaired in
// request units of SBlock bytes.
//
// Assumptions, as in the paper (§4.1, Appendix D): every stripe spans the
// k+r nodes with its shards rotated, so a failed node's data is S_node/S_block
// rows and every survivor is a helper equally often; all resources of a
// node (disk read, disk write, send, recv) work concurrently and the
// slowest one binds (pipelining hides the others); PULL schemes see no
// incast collapse (the paper sets RTO to 200 ms to factor it out); the -Rep
// schemes have f replacement nodes; the -Sur schemes split the rebuilt
// data equally over the k+r−f survivors.
type Model struct {
	K, R, F int
	SNode   float64 // bytes per failed node to rebuild
	SBlock  float64 // request unit, bytes
	// Survivors are the k+r−f surviving nodes' rates; the first K are the
	// helpers of the -Rep chains and pulls. A single entry stands for all.
	Survivors   []Rates
	Replacement Rates
}

// Prediction is one scheme's predicted reconstruction time.
type Prediction struct {
	Scheme Scheme
	// Paper is the paper's equation (Eq names it) evaluated on the inputs,
	// with the slowest node's op times where the equation has a max and
	// the helpers' own times where it has a sum.
	Paper float64
	Eq    string // the equation, e.g. "Eq. 11"
	// Seconds is the bottleneck model of the plans Build makes: each
	// node's per-row work on each resource (read, write, send, recv) with
	// helper roles rotated evenly over the survivors, timed at its own
	// rates; the slowest resource of the slowest node binds. For f = 1 on a
	// uniform cluster it equals Paper wherever the paper's dominance
	// assumptions hold, and it adds the terms the paper drops (e.g.
	// PULL-Sur's network when disks are fast).
	Seconds float64
	Bound   string // the binding node and resource in Seconds
}

// Validate checks the model's inputs.
func (m Model) Validate() error {
	switch {
	case m.K < 1 || m.R < 1 || m.F < 1 || m.F > m.R:
		return fmt.Errorf("%w: model k=%d r=%d f=%d (need k ≥ 1, 1 ≤ f ≤ r)", ErrInvalid, m.K, m.R, m.F)
	case !(m.SNode > 0) || !(m.SBlock > 0):
		return fmt.Errorf("%w: model S_node=%v S_block=%v must be positive", ErrInvalid, m.SNode, m.SBlock)
	case len(m.Survivors) != 1 && len(m.Survivors) != m.K+m.R-m.F:
		return fmt.Errorf("%w: model has %d survivor rates, want 1 or k+r−f = %d", ErrInvalid, len(m.Survivors), m.K+m.R-m.F)
	case !m.Replacement.valid():
		return fmt.Errorf("%w: replacement rates %+v", ErrInvalid, m.Replacement)
	}
	for _, r := range m.Survivors {
		if !r.valid() {
			return fmt.Errorf("%w: survivor rates %+v", ErrInvalid, r)
		}
	}
	return nil
}

func (m Model) sur(i int) Rates {
	if len(m.Survivors) == 1 {
		return m.Survivors[0]
	}
	return m.Survivors[i]
}

// work is one node's per-row work, in request units, on each resource:
// read is of local shards (sequential), serve is read for pullers on
// other nodes (one unit per request).
type work struct{ read, serve, write, send, recv float64 }

// time returns the node's per-row time and its binding resource.
func (w work) time(r Rates, mixed bool) (float64, string) {
	best, name := r.diskTimes(w.read, w.serve, w.write, mixed)
	for _, x := range []struct {
		t    float64
		name string
	}{{w.send / r.Send, "send"}, {w.recv / r.Recv, "recv"}} {
		if x.t > best {
			best, name = x.t, x.name
		}
	}
	return best, name
}

// Predict evaluates one scheme's model. Paper is, with t_x = S_block/rate_x
// and t_recv(X) = S_block/min(sender's Send, receiver's Recv):
//
//	(9)  T_PULL-Rep = [Σ_{i=1..k} t_recv(S_i)] · S_node/S_block
//	(14) T_PULL-Sur = max_{i<k+r−f} t_write(D_i) · f·S_node/((k+r−f)·S_block)
//	     (Eq. 10 is f = 1; t_write uses MixedWrite)
//	(11) T_PUSH-Rep = max_{i=1..k} {t_recv(I_i), t_read(S_i)} · S_node/S_block
//	     (for f > 1, I_i is f partials: t_recv(I_i) is f times longer)
//	(12) T_PUSH-Sur = max{Σ_{i=1..k−1} t_recv(I_i), t_write(D)} · f·S_node/((k+r−f)·S_block)
//	     (generalised to f failures the way Eq. 14 generalises Eq. 10;
//	     the sum uses the survivors' mean t_recv)
//
// Seconds charges each of the n = k+r−f survivors, per row (S_node/S_block
// rows), with the average work of the plans Build makes, in request units:
//
//	PULL-Rep  survivor: serve and send f·k/n; replacement: recv k, write 1
//	PULL-Sur  survivor: read 1/n, serve, send and recv (k−1)/n, mixed write f/n
//	PUSH-Rep  survivor: read k/n, recv f(k−1)/n, send f·k/n; replacement: recv 1, write 1
//	PUSH-Sur  survivor: read k/n, recv and send f(k−1)/n, write f/n
//
// (one replacement per lost shard; serve is read at ServeRead). Seconds
// is the largest node time.
func (m Model) Predict(s Scheme) (Prediction, error) {
	if err := m.Validate(); err != nil {
		return Prediction{}, err
	}
	k, f := float64(m.K), float64(m.F)
	n := m.K + m.R - m.F
	nf := float64(n)
	B := m.SBlock
	rows := m.SNode / B
	rep := m.Replacement
	tnet := func(from, to Rates) float64 { return B / math.Min(from.Send, to.Recv) }

	var eq string
	var paper float64
	var sw work           // each survivor's per-row work
	var rw *work          // the replacement's, for -Rep schemes
	mixed := s == PullSur // PULL-Sur writes under mixed I/O
	repRecv := rep.Recv   // the replacement's effective receive rate
	switch s {
	case PullRep:
		eq = "Eq. 9"
		sum := 0.0
		for i := range m.K {
			sum += tnet(m.sur(i), rep)
		}
		paper = sum * rows
		// The replacement receives k blocks per row, no faster than its
		// link or the helpers' (Eq. 9's sum).
		repRecv = k * B / sum
		sw = work{serve: f * k / nf, send: f * k / nf} // each replacement pulls its own k
		rw = &work{recv: k, write: 1}
	case PullSur:
		eq = "Eq. 14"
		if m.F == 1 {
			eq = "Eq. 10"
		}
		w := 0.0
		for i := range n {
			w = math.Max(w, B/m.sur(i).mixed())
		}
		paper = w * f * m.SNode / (nf * B)
		sw = work{read: 1 / nf, serve: (k - 1) / nf, send: (k - 1) / nf, recv: (k - 1) / nf, write: f / nf}
	case PushRep:
		eq = "Eq. 11"
		t := 0.0
		for i := range m.K {
			t = math.Max(t, B/m.sur(i).Read)
			if i > 0 {
				t = math.Max(t, f*tnet(m.sur(i-1), m.sur(i)))
			}
		}
		t = math.Max(t, tnet(m.sur(m.K-1), rep)) // I_k to the replacement
		paper = t * rows
		sw = work{read: k / nf, recv: f * (k - 1) / nf, send: f * k / nf}
		rw = &work{recv: 1, write: 1}
	case PushSur:
		eq = "Eq. 12"
		mean, w := 0.0, 0.0
		for i := range n {
			r := m.sur(i)
			mean += B / math.Min(r.Send, r.Recv) / nf
			w = math.Max(w, B/r.Write)
		}
		paper = math.Max((k-1)*mean, w) * f * m.SNode / (nf * B)
		sw = work{read: k / nf, recv: f * (k - 1) / nf, send: f * (k - 1) / nf, write: f / nf}
	default:
		return Prediction{}, fmt.Errorf("%w: %v", ErrInvalid, s)
	}
	worst, bound := 0.0, ""
	for i := range n {
		if t, res := sw.time(m.sur(i), mixed); t > worst {
			worst, bound = t, fmt.Sprintf("survivor %d %s", i, res)
		}
	}
	if rw != nil {
		r := rep
		r.Recv = repRecv
		if t, res := rw.time(r, false); t > worst {
			worst, bound = t, "replacement "+res
		}
	}
	// Per-row times are in request units of B bytes.
	return Prediction{Scheme: s, Paper: paper, Eq: eq, Seconds: worst * B * rows, Bound: bound}, nil
}

// Choose predicts every allowed scheme (nil means all four) and returns
// the fastest, with all predictions in Schemes order. Predictions within
// 1% of the fastest count as ties, won by the earlier scheme in Schemes
// (PUSH-Sur, PUSH-Rep, PULL-Sur, PULL-Rep).
func Choose(m Model, allowed []Scheme) (Prediction, []Prediction, error) {
	if allowed == nil {
		allowed = Schemes
	}
	var all []Prediction
	for _, s := range Schemes {
		for _, a := range allowed {
			if a != s {
				continue
			}
			p, err := m.Predict(s)
			if err != nil {
				return Prediction{}, nil, err
			}
			all = append(all, p)
		}
	}
	if len(all) == 0 {
		return Prediction{}, nil, fmt.Errorf("%w: no scheme allowed", ErrInvalid)
	}
	fastest := all[0].Seconds
	for _, p := range all {
		fastest = math.Min(fastest, p.Seconds)
	}
	for _, p := range all {
		if p.Seconds <= fastest*1.01 {
			return p, all, nil
		}
	}
	return all[0], all, nil // unreachable
}

// Estimate is the plan-driven form of the same bottleneck model: given
// each node's total Load (summed over every stripe's plan) and Rates, the
// repair takes as long as the busiest resource of the busiest node. Writes
// use MixedWrite when mixed is true (PULL-Sur). Nodes missing from rates
// make it return an error.
func Estimate(loads map[string]*Load, rates map[string]Rates, mixed bool) (float64, error) {
	t := 0.0
	for n, l := range loads {
		r, ok := rates[n]
		if !ok || !r.valid() {
			return 0, fmt.Errorf("%w: no valid rates for node %q", ErrInvalid, n)
		}
		disk, _ := r.diskTimes(float64(l.Read-l.Serve), float64(l.Serve), float64(l.Write), mixed)
		t = max(t, disk, float64(l.Send)/r.Send, float64(l.Recv)/r.Recv)
	}
	return t, nil
}
