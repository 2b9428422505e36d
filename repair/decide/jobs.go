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
// A -Rep plan sends its j-th lost shard to the (j mod n)th of its n
// replacement nodes; targets that do not line up with that (two on one
// node and one on another, say) are split by RepGroups into sets that
// do, one plan each, so any targets get jobs (docs/design/repair.md,
// "Targets that do not fit one plan").
// Errors: plan.Build's errors; a plan that splits a shard into shares or
// stores a row off its target's node.
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
	tnodes := make([]string, len(shards))
	for j, i := range shards {
		target[st.Row(i)] = targets[j]
		tnodes[j] = string(v.Disks[targets[j]].Node)
	}
	groups := [][]int{allRows(len(shards))}
	if scheme.Rep() {
		groups = RepGroups(tnodes, scheme == plan.PullRep)
	}
	var jobs []Job
	for _, g := range groups {
		in := plan.Input{Code: code, Nodes: nodes, ShardSize: size, Unit: unit, Rotate: int(hashString(t.ID) % 1024)}
		for _, j := range g {
			in.Lost = append(in.Lost, st.Row(shards[j]))
		}
		if scheme.Rep() {
			for _, j := range g {
				if !slices.Contains(in.Replacements, tnodes[j]) {
					in.Replacements = append(in.Replacements, tnodes[j])
				}
			}
		} else {
			in.Survivors = tnodes[:1]
		}
		p, err := plan.Build(scheme, in)
		if err != nil {
			return nil, err
		}
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
	}
	return jobs, nil
}

// RepGroups splits the shards to rebuild onto nodes[j] (the node of the
// j-th target) into sets that each fit one -Rep plan, which sends its
// j-th lost shard to the (j mod n)th of its n replacement nodes in
// order: every index in one set once, the sets in order. The targets in
// their order when they fit; else one set reordered so they do, when the
// nodes' counts of targets differ by at most one (the nodes with most
// first, then one shard of each node in turn); else one set per
// "layer": the first target of each node, then the second of each node
// that has one, and so on — distinct nodes, which always fit. With pull
// (PULL-Rep, where each replacement gathers the helpers once for all its
// shards) a set that does not fit is split by node instead: one set, one
// pull, per node, as a fitting plan would have it. It is pure and never
// fails, so targets always get a plan.
func RepGroups(nodes []string, pull bool) [][]int {
	if len(nodes) == 0 {
		return nil
	}
	var order []string // distinct, in order of first appearance
	of := map[string][]int{}
	for j, n := range nodes {
		if _, ok := of[n]; !ok {
			order = append(order, n)
		}
		of[n] = append(of[n], j)
	}
	fits := true
	for j, n := range nodes {
		fits = fits && order[j%len(order)] == n
	}
	if fits {
		return [][]int{allRows(len(nodes))}
	}
	if pull {
		var out [][]int
		for _, n := range order {
			out = append(out, of[n])
		}
		return out
	}
	slices.SortStableFunc(order, func(a, b string) int { return len(of[b]) - len(of[a]) })
	most, least := len(of[order[0]]), len(of[order[len(order)-1]])
	var layers [][]int
	for r := range most {
		var layer []int
		for _, n := range order {
			if r < len(of[n]) {
				layer = append(layer, of[n][r])
			}
		}
		layers = append(layers, layer)
	}
	if most-least <= 1 {
		// Layer by layer, the nodes with most first: the j-th index is on
		// the (j mod n)th node.
		return [][]int{slices.Concat(layers...)}
	}
	return layers
}

func allRows(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}
