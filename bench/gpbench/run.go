package gpbench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"cairn/layout/gp"
)

// Workload is the objects of the experiment: Count sizes drawn
// log-uniformly from [Min, Max] with a seeded source.
type Workload struct {
	Count    int
	Min, Max int64
	Seed     uint64
}

// W1 is the paper's W1 (4 MB – 4 GB, mean 102.8 MB) reshaped to the
// log-uniform law the issue asks for: 1 MiB – 700 MiB has a mean of
// ≈ 107 MiB, about 100× the smallest s0 and close to W1's mean.
var W1 = Workload{Count: 20000, Min: 1 << 20, Max: 700 << 20, Seed: 1}

// Sizes draws the object sizes.
func (w Workload) Sizes() []int64 {
	rng := rand.New(rand.NewPCG(w.Seed, 0x6770))
	lo, hi := math.Log(float64(w.Min)), math.Log(float64(w.Max))
	out := make([]int64, w.Count)
	for i := range out {
		out[i] = int64(math.Exp(lo + rng.Float64()*(hi-lo)))
	}
	return out
}

// Row is one scheme's modelled results.
type Row struct {
	Scheme string
	// RecoveryBps is the cluster's rate of rebuilding one lost disk, in
	// bytes rebuilt per second, and Bound the resource that limits it
	// (disk, network or cpu).
	RecoveryBps float64
	Bound       string
	// NormalRead and DegradedRead are mean whole-object read times in
	// seconds; a degraded read is of an object with a piece on the lost
	// disk (for Geo and Contiguous: all of it).
	NormalRead, DegradedRead float64
	// SmallShare is the share of the bytes in the small-size bucket (Geo).
	SmallShare float64
}

// Run models every scheme on the workload's objects.
func (md *Model) Run(schemes []Scheme, sizes []int64) ([]Row, error) {
	rows := make([]Row, 0, len(schemes))
	for _, s := range schemes {
		r, err := md.row(s, sizes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// work is the cluster's recovery work: disk seconds, network bytes, cpu
// seconds, and the bytes rebuilt.
type work struct{ disk, net, cpu, bytes float64 }

func (w *work) add(disk, net, cpu, bytes, times float64) {
	w.disk += disk * times
	w.net += net * times
	w.cpu += cpu * times
	w.bytes += bytes * times
}

// rate is the recovery rate: every surviving disk, node link and core
// shares the work (the lost disk's stripes lie in many groups).
func (md *Model) rate(w work) (float64, string) {
	m := md.M
	disk := w.disk / float64(m.Disks-1)
	net := w.net / (float64(m.Nodes) * m.ServerLink)
	cpu := w.cpu / float64(m.Nodes*m.Cores)
	t, bound := disk, "disk"
	if net > t {
		t, bound = net, "network"
	}
	if cpu > t {
		t, bound = cpu, "cpu"
	}
	return w.bytes / t, bound
}

func (md *Model) row(s Scheme, sizes []int64) (Row, error) {
	k, n := float64(md.K), float64(md.K+md.R)
	row := Row{Scheme: s.Name}
	var w work
	var normal, degraded float64
	clay := map[int64][3]float64{}
	clayAdd := func(size int64, times float64) {
		c, ok := clay[size]
		if !ok {
			d, nb, cpu := md.clayWork(size)
			c = [3]float64{d, nb, cpu}
			clay[size] = c
		}
		w.add(c[0], c[1], c[2], float64(size), times)
	}
	repairTime := map[int64]float64{}
	repair := func(size int64) float64 {
		t, ok := repairTime[size]
		if !ok {
			t = md.clayRepairTime(size, 0)
			repairTime[size] = t
		}
		return t
	}
	var total, small float64
	switch s.Kind {
	case Geo:
		g, err := gp.NewGeometry(s.Param, 2, 0)
		if err != nil {
			return Row{}, err
		}
		for _, size := range sizes {
			p := g.Partition(size)
			total += float64(size)
			small += float64(p.Front)
			var steps []gp.Step
			var pieces []int64
			if p.Front > 0 {
				f := float64(p.Front)
				steps = append(steps, gp.Step{
					Produce: dur(max(md.read(f), k*f/md.M.ServerLink) + k*f/md.M.RSDecode),
					Send:    dur(f / md.M.ClientLink)})
				pieces = append(pieces, p.Front)
			}
			for i, c := range p.Counts {
				cs := g.Size(i)
				clayAdd(cs, float64(c)*n/k)
				for range c {
					steps = append(steps, gp.Step{Produce: dur(repair(cs)), Send: dur(float64(cs) / md.M.ClientLink)})
					pieces = append(pieces, cs)
				}
			}
			normal += md.oneDisk(pieces)
			degraded += gp.Pipeline(steps, 2).Done.Seconds()
		}
		d, nb, cpu := md.scalarWork(1, k)
		w.add(d, nb, cpu, 1, small*n/k)
		row.SmallShare = small / total
	case Contiguous:
		c := s.Param
		rng := rand.New(rand.NewPCG(7, 0x636f))
		for _, size := range sizes {
			total += float64(size)
			off := rng.Int64N(c)
			var steps []gp.Step
			for pos := int64(0); pos < size; {
				n := min(c-(off+pos)%c, size-pos)
				steps = append(steps, gp.Step{Produce: dur(repair(c)), Send: dur(float64(n) / md.M.ClientLink)})
				pos += n
			}
			normal += md.oneDisk([]int64{size})
			degraded += gp.Pipeline(steps, 2).Done.Seconds()
		}
		clayAdd(c, math.Ceil(total/float64(c))*n/k)
	case Stripe, RS, LRC:
		strip := s.Param
		reads := k
		if s.Kind == LRC {
			reads = md.lrcRead
		}
		for _, size := range sizes {
			total += float64(size)
			rows := (size + int64(md.K)*strip - 1) / (int64(md.K) * strip)
			var ready, send []float64
			var steps []gp.Step
			for r := range rows {
				b := min(size-r*int64(md.K)*strip, int64(md.K)*strip)
				ready = append(ready, md.seek()+float64((r+1)*strip)/md.M.DiskRate)
				send = append(send, float64(b)/md.M.ClientLink)
				var p float64
				switch s.Kind {
				case Stripe:
					p = max(md.read(float64(strip)), repair(strip))
				case RS:
					p = max(md.read(float64(strip)), k*float64(strip)/md.M.ServerLink) + k*float64(strip)/md.M.RSDecode
				case LRC:
					lr := float64(md.K) / 2 // a data shard's local group: K/2−1 others and the local parity
					p = max(md.read(float64(strip)), lr*float64(strip)/md.M.ServerLink) + lr*float64(strip)/md.M.RSDecode
				}
				steps = append(steps, gp.Step{Produce: dur(p), Send: dur(float64(b) / md.M.ClientLink)})
			}
			normal += sends(ready, send)
			degraded += gp.Pipeline(steps, 2).Done.Seconds()
			if s.Kind == Stripe {
				clayAdd(strip, float64(rows)*n)
			} else {
				d, nb, cpu := md.scalarWork(strip, reads)
				w.add(d, nb, cpu, float64(strip), float64(rows)*n)
			}
		}
	case StripeMax:
		for i, size := range sizes {
			total += float64(size)
			strip := (size + int64(md.K) - 1) / int64(md.K)
			strip = (strip + int64(md.alpha) - 1) / int64(md.alpha) * int64(md.alpha)
			clayAdd(strip, n)
			lost := i % md.K // the lost disk's strip of this object
			var ready, send, dready []float64
			for j := range md.K {
				b := min(strip, max(0, size-int64(j)*strip))
				r := md.read(float64(b))
				ready = append(ready, r)
				send = append(send, float64(b)/md.M.ClientLink)
				if j == lost {
					// The helpers' disks also stream their own strips.
					r = md.clayRepairTime(strip, float64(strip)/md.M.DiskRate)
				}
				dready = append(dready, r)
			}
			normal += sends(ready, send)
			degraded += sends(dready, send)
		}
	default:
		return Row{}, fmt.Errorf("unknown kind %d", s.Kind)
	}
	row.RecoveryBps, row.Bound = md.rate(w)
	row.NormalRead = normal / float64(len(sizes))
	row.DegradedRead = degraded / float64(len(sizes))
	return row, nil
}

// oneDisk is the time of a normal read of pieces stored one after another
// in different files of one disk: each piece costs a seek, then streams in
// packets that are sent as they arrive.
func (md *Model) oneDisk(pieces []int64) float64 {
	var ready, send []float64
	t := 0.0
	for _, p := range pieces {
		t += md.seek()
		for off := int64(0); off < p; off += Packet {
			b := float64(min(Packet, p-off))
			t += b / md.M.DiskRate
			ready = append(ready, t)
			send = append(send, b/md.M.ClientLink)
		}
	}
	return sends(ready, send)
}

// sends returns when the last of a sequence of sends ends: each starts when
// its data is ready and the previous send is done.
func sends(ready, send []float64) float64 {
	t := 0.0
	for i := range ready {
		t = max(t, ready[i]) + send[i]
	}
	return t
}

func dur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
