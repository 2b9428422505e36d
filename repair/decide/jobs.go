package decide

import (
	"fmt"
	"hash/fnv"
	"slices"

	"cairn"
	"cairn/codec"
	"cairn/node/wire"
	"cairn/repair/plan"
)

// Op is what a Job asks of the nodes.
type Op int

const (
	// Push sends Spec to its first hop (the executor's Push).
	Push Op = iota
	// Pull asks the node at Job.Puller to fetch the hops and rebuild.
	Pull
	// Create stores an empty shard: Spec.Store[0] of a shard of 0 bytes,
	// which has nothing to compute (Spec has no hops and is not valid as a
	// repair spec).
	Create
)

func (o Op) String() string {
	switch o {
	case Push:
		return "push"
	case Pull:
		return "pull"
	case Create:
		return "create"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Job is one node call of a round.
type Job struct {
	Op     Op
	Puller string // Pull: the puller's address
	Spec   wire.RepairSpec
	// Into[j] is the index, in the shards passed to Jobs, of the shard
	// that Spec.Store[j] rebuilds.
	Into []int
}

// Jobs turns the repair of shards[j] onto targets[j] (a Round's Placed
// shards; the task's other lost shards serve as no helper either) into
// node calls: the plan of scheme (plan.Build), made over the code rows of
// code (StripeCode), with helpers and targets named by disk, shard file
// and node address from v, and requests of unit bytes. A shard of 0
// bytes is a Create per shard. st is of a manifest that passed
// (*cairn.Manifest).ValidateStored, so its shards are of one size.
// Errors: -Rep targets that plan.Input.Replacements cannot
// express — target j must be on the (j mod n)th of the n distinct target
// nodes in order (cairn.ErrUnavailable, "do not fit one repair plan");
// plan.Build's errors; a plan that splits a shard into shares or stores
// a row off its target's node.
func Jobs(t *cairn.RepairTask, shards []int, targets []cairn.DiskID, st Stripe, code codec.Code, scheme plan.Scheme, v *View, unit int64) ([]Job, error) {
	size := st.Shards[shards[0]].Size
	if size == 0 { // an empty object: nothing to compute, only files to make
		jobs := make([]Job, len(shards))
		for j, i := range shards {
			jobs[j] = Job{Op: Create, Into: []int{j}, Spec: wire.RepairSpec{
				Store: []wire.Target{{Addr: v.addrOf(targets[j]), Disk: targets[j], Shard: cairn.ShardName(st.Version, st.Row(i))}}}}
		}
		return jobs, nil
	}
	// The plan works on code rows: slot[row] is the shard holding it.
	nodes := make([]string, code.Params().N())
	slot := map[int]int{}
	for i, s := range st.Shards {
		slot[st.Row(i)] = i
		if !slices.Contains(t.Lost, i) && v.Usable(s.Disk) {
			nodes[st.Row(i)] = string(v.Disks[s.Disk].Node)
		}
	}
	target := map[int]cairn.DiskID{} // by row
	var tnodes []string
	var lostRows []int
	for j, i := range shards {
		target[st.Row(i)] = targets[j]
		lostRows = append(lostRows, st.Row(i))
		tnodes = append(tnodes, string(v.Disks[targets[j]].Node))
	}
	in := plan.Input{Code: code, Lost: lostRows, Nodes: nodes, ShardSize: size, Unit: unit, Rotate: int(hashString(t.ID) % 1024)}
	if scheme.Rep() {
		// The plan sends Lost[j] to Replacements[j mod len] and wants
		// them distinct.
		var reps []string
		for _, n := range distinctNodes(targets, v) {
			reps = append(reps, string(n))
		}
		for j, n := range tnodes {
			if reps[j%len(reps)] != n {
				return nil, fmt.Errorf("%w: targets %v of %s/%s do not fit one repair plan", cairn.ErrUnavailable, targets, t.Bucket, t.Key)
			}
		}
		in.Replacements = reps
	} else {
		in.Survivors = tnodes[:1]
	}
	p, err := plan.Build(scheme, in)
	if err != nil {
		return nil, err
	}
	var jobs []Job
	for _, task := range p.Tasks {
		if task.First != 0 || task.End != p.Slices() {
			return nil, fmt.Errorf("repair plan %s splits a shard into shares; cairn stores whole shards", scheme)
		}
		job := Job{Op: Push, Spec: wire.RepairSpec{Size: size, Unit: unit}}
		if task.Puller != "" {
			job.Op, job.Puller = Pull, v.Addr[cairn.NodeID(task.Puller)]
		}
		for _, h := range task.Helpers {
			d := st.Shards[slot[h.Shard]].Disk
			job.Spec.Hops = append(job.Spec.Hops, wire.Hop{Addr: v.addrOf(d), Disk: d, Shard: cairn.ShardName(st.Version, h.Shard), Coeffs: h.Coeffs})
		}
		for j, row := range task.Lost {
			d := target[row]
			if string(v.Disks[d].Node) != task.Store[j] {
				return nil, fmt.Errorf("repair plan stores row %d on node %s, its target disk %s is elsewhere", row, task.Store[j], d)
			}
			job.Spec.Store = append(job.Spec.Store, wire.Target{Addr: v.addrOf(d), Disk: d, Shard: cairn.ShardName(st.Version, row)})
			job.Into = append(job.Into, slices.Index(shards, slot[row]))
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}
