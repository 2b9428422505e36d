package gpbench

import (
	"fmt"
	"time"

	"cairn/codec"
)

// Machine is the modelled cluster: spinning disks, links and cores.
type Machine struct {
	Disks, Nodes int           // disks in the cluster and the nodes they are on
	DiskRate     float64       // sequential bytes/s of one disk
	Seek         time.Duration // each request that does not continue the previous one
	ServerLink   float64       // bytes/s of a node's link, each direction
	ClientLink   float64       // bytes/s of a client's link
	Cores        int           // cores per node that decode
	// ClayRepair and RSDecode are one core's rates, bytes rebuilt per
	// second: measured (Measure) or given.
	ClayRepair, RSDecode float64
}

// PaperMachine is the paper's W1 cluster (§6.1): 16 servers of 6 HDDs,
// 12-core servers on 56 Gb/s InfiniBand, 1 Gb/s clients — with the disk
// model of cairn's other experiments (vfs.Throttle as the bench commands
// set it): a current 7200 rpm disk streams 250 MB/s and pays 4.2 ms, half a
// rotation, for each request that does not continue the previous one.
// The decode rates are placeholders until Measure replaces them.
var PaperMachine = Machine{
	Disks: 96, Nodes: 16, DiskRate: 250e6, Seek: 4200 * time.Microsecond,
	ServerLink: 7e9, ClientLink: 125e6, Cores: 12,
	ClayRepair: 1e9, RSDecode: 2e9,
}

// LRCRead is LRC(10,2,2)'s mean helpers per lost shard: 12 of its 14
// shards (data and local parity) read their group of 5, the 2 global
// parities read 10.
const LRCRead = (12*5 + 2*10) / 14.0

// Batch is the request size of the RS and LRC baselines' recovery (the
// paper batches their I/O into 4 MB blocks, §6.1) and of every write.
const Batch = 4 << 20

// Packet is the unit of the nodes' read queues (§5.2, 256 KB).
const Packet = 256 << 10

// Kind is a layout or code of the experiment.
type Kind int

// The schemes of the paper's Figure 9.
const (
	Geo        Kind = iota // Clay + Geometric Partitioning (Param = s0)
	Contiguous             // Clay, objects packed into chunks of Param bytes
	Stripe                 // Clay, objects striped in strips of Param bytes
	StripeMax              // Clay, each object one stripe of strips object/k
	RS                     // RS(k, m), Stripe layout with strips of Param bytes
	LRC                    // LRC(k, 2, 2), Stripe layout with strips of Param bytes
)

// Scheme is one row of the experiment.
type Scheme struct {
	Name  string
	Kind  Kind
	Param int64 // s0, chunk size or strip size (unused by StripeMax)
}

// Schemes are the paper's W1 settings (§6.1, "Parameter Settings").
var Schemes = []Scheme{
	{"geo-1M", Geo, 1 << 20}, {"geo-4M", Geo, 4 << 20}, {"geo-16M", Geo, 16 << 20},
	{"con-16M", Contiguous, 16 << 20}, {"con-64M", Contiguous, 64 << 20}, {"con-256M", Contiguous, 256 << 20},
	{"stripe", Stripe, 256 << 10}, {"stripe-max", StripeMax, 0},
	{"rs", RS, 256 << 10}, {"lrc", LRC, 256 << 10},
}

// Model computes the experiment's times for one code shape on a Machine.
// Clay's helper reads come from the real codec: the runs of each helper in
// codec/clay's repair plan for each lost shard.
type Model struct {
	M    Machine
	K, R int // data and parity shards (the Clay code is clay-K-R-(K+R−1))
	clay codec.SubChunkRepairer
	// runs[lost] are the sub-chunk runs a helper reads to rebuild shard
	// lost, in sub-chunks (offset, length), and helpers[lost] how many
	// helpers are read.
	runs    [][]codec.Run
	helpers []int
	alpha   int
	lrcRead float64 // LRC: mean helpers read per lost shard
}

// NewModel builds the model of clay-K-R-(K+R−1) and its baselines.
func NewModel(m Machine, c codec.Code, lrcRead float64) (*Model, error) {
	sc, ok := c.(codec.SubChunkRepairer)
	if !ok {
		return nil, fmt.Errorf("gpbench: %T has no sub-chunk repair", c)
	}
	p := c.Params()
	md := &Model{M: m, K: p.K, R: p.M, clay: sc, alpha: p.Alpha, lrcRead: lrcRead}
	for lost := range p.N() {
		var avail []int
		for i := range p.N() {
			if i != lost {
				avail = append(avail, i)
			}
		}
		plan, err := sc.SubChunkPlan(lost, avail, p.Alpha)
		if err != nil {
			return nil, err
		}
		md.runs = append(md.runs, plan.Helpers[0].Runs)
		md.helpers = append(md.helpers, len(plan.Helpers))
	}
	return md, nil
}

func (md *Model) seek() float64 { return md.M.Seek.Seconds() }

// read is the disk time of one request of n bytes.
func (md *Model) read(n float64) float64 { return md.seek() + n/md.M.DiskRate }

// batched is the disk time of n bytes read or written in Batch requests
// (a seek per request; a fraction of one for a fraction of a batch, since
// consecutive pieces of one disk's rebuild join one batch).
func (md *Model) batched(n float64) float64 {
	return n/Batch*md.seek() + n/md.M.DiskRate
}

// helperRequests returns the disk requests of one Clay helper reading its
// runs of a shard of size bytes when shard lost is rebuilt: runs are
// merged across a gap when reading through the gap costs less than a seek
// (what a helper that coalesces its reads does), so each request costs one
// seek. The second result is the bytes the repair needs (the runs alone).
func (md *Model) helperRequests(lost int, size int64) (reqs []codec.Run, bytes int64) {
	sc := int(size) / md.alpha
	gapMax := int(md.seek() * md.M.DiskRate) // read through gaps shorter than a seek
	for _, r := range md.runs[lost] {
		off, n := r.Offset*sc, r.Length*sc
		bytes += int64(n)
		if last := len(reqs) - 1; last >= 0 && off-(reqs[last].Offset+reqs[last].Length) < gapMax {
			reqs[last].Length = off + n - reqs[last].Offset
			continue
		}
		reqs = append(reqs, codec.Run{Offset: off, Length: n})
	}
	return reqs, bytes
}

// helperRead is the disk time of one Clay helper's requests and the bytes
// the repair needs from it.
func (md *Model) helperRead(lost int, size int64) (t, bytes float64) {
	reqs, b := md.helperRequests(lost, size)
	for _, r := range reqs {
		t += md.read(float64(r.Length))
	}
	return t, float64(b)
}

// clayWork is the cluster's work to rebuild one Clay shard of size bytes,
// averaged over which shard of the stripe is lost: disk seconds (helper
// reads and the write), bytes over the network, decode seconds.
func (md *Model) clayWork(size int64) (disk, net, cpu float64) {
	n := md.K + md.R
	for lost := range n {
		t, b := md.helperRead(lost, size)
		h := float64(md.helpers[lost])
		disk += h * t
		net += h * b
	}
	disk = disk/float64(n) + md.batched(float64(size))
	net = net/float64(n) + float64(size)
	return disk, net, float64(size) / md.M.ClayRepair
}

// clayRepairTime is the time to rebuild one data shard of size bytes of an
// idle stripe, averaged over the data shards: the helpers read in parallel
// (plus extra seconds of other work on their disks) and stream to the
// repairer, which then decodes.
func (md *Model) clayRepairTime(size int64, extra float64) float64 {
	var sum float64
	for lost := range md.K {
		t, b := md.helperRead(lost, size)
		h := float64(md.helpers[lost])
		sum += max(t+extra, h*b/md.M.ServerLink) + float64(size)/md.M.ClayRepair
	}
	return sum / float64(md.K)
}

// scalarWork is the work to rebuild n bytes of an RS or LRC shard read
// from reads helpers in Batch requests.
func (md *Model) scalarWork(n int64, reads float64) (disk, net, cpu float64) {
	b := float64(n)
	return (reads + 1) * md.batched(b), reads*b + b, reads * b / md.M.RSDecode
}
