package decide

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/codec"
	"cairn/codec/all"
	"cairn/internal/golden"
	"cairn/repair/plan"
)

// TestScripts runs the scripts in testdata/. Commands:
//
//	cluster            input: one line per node, "n1 d1 d2 …" (its disks, up;
//	                   a line ending in "noaddr" has no address)
//	state D=S …        sets disk D's state (D may name a node: all its disks)
//	avoid D …          the view's Avoid: disks not chosen as targets (none: clears)
//	stripe policy=P [size=B] [part=N]
//	                   input: one line, the disk of each shard in order; "disk@R"
//	                   holds spare row R. Replaces the object's manifest.
//	task [bad=I,…]     NewTask for the stripe (the task the next commands use);
//	                   with bad, DamagedTask: those shards were found damaged
//	add-bad            AddBad of the input's shards (I,…) to the task
//	attempt lost=I,… targets=D,… [bad=I,…]
//	                   what an earlier attempt recorded in the task ("-": no target;
//	                   bad: the shards it found missing or corrupt)
//	round [scheme=S] [rates=hdd|fast] [unit=B]
//	                   one round as the repairer runs it: Next, Placed, Choose,
//	                   Jobs; the task keeps the round's lost shards and targets
func TestScripts(t *testing.T) {
	for _, name := range []string{"lost-disk.txt", "kept-targets.txt", "no-space.txt", "sur-falls-back-to-rep.txt",
		"spare-rows.txt", "lrc.txt", "rates.txt", "no-fit.txt", "back.txt", "drain.txt", "damage.txt", "failed-target.txt", "stuck-rs-6-3.txt"} {
		t.Run(name, func(t *testing.T) {
			s := &script{}
			golden.Script(t, name, s.do)
		})
	}
}

// The machines' rates of TestChooseScheme: the paper's disks, and fast
// disks behind slow links.
var rates = map[string]*plan.Rates{
	"hdd":  {Read: 120e6, Write: 110e6, MixedWrite: 5e6, Send: 100e6, Recv: 100e6},
	"fast": {Read: 2e9, Write: 1e9, Send: 125e6, Recv: 125e6},
}

const version = "0123456789abcdef0123456789abcdef"

type script struct {
	nodes []cairn.Node
	disks []cairn.Disk
	m     *cairn.Manifest
	code  codec.Code
	task  *cairn.RepairTask
	avoid map[cairn.DiskID]bool
}

func (s *script) view() *View {
	v := NewView(s.nodes, s.disks)
	v.Avoid = s.avoid
	return v
}

func (s *script) do(t *testing.T, c *golden.Cmd) string {
	fail := func(format string, args ...any) string {
		t.Fatalf("%s: %s", c.Pos, fmt.Sprintf(format, args...))
		return ""
	}
	switch c.Name {
	case "cluster":
		s.nodes, s.disks = nil, nil
		for _, l := range c.Input {
			f := strings.Fields(l)
			n := cairn.Node{ID: cairn.NodeID(f[0]), Addr: "addr-" + f[0]}
			if f[len(f)-1] == "noaddr" {
				n.Addr, f = "", f[:len(f)-1]
			}
			s.nodes = append(s.nodes, n)
			for _, d := range f[1:] {
				s.disks = append(s.disks, cairn.Disk{ID: cairn.DiskID(f[0] + "/" + d), Node: n.ID, Capacity: 1 << 40, State: cairn.DiskUp})
			}
		}
		slices.SortFunc(s.disks, func(a, b cairn.Disk) int { return strings.Compare(string(a.ID), string(b.ID)) })
		return s.states()
	case "state":
		for _, a := range c.Args {
			found := false
			for i, d := range s.disks {
				if string(d.ID) == a.Key || string(d.Node) == a.Key {
					s.disks[i].State, found = cairn.DiskState(a.Value), true
				}
			}
			if !found || !cairn.DiskState(a.Value).Valid() {
				return fail("no disk %s or no state %q", a.Key, a.Value)
			}
		}
		return s.states()
	case "avoid":
		s.avoid = map[cairn.DiskID]bool{}
		for _, a := range c.Args {
			if !slices.ContainsFunc(s.disks, func(d cairn.Disk) bool { return string(d.ID) == a.Key }) {
				return fail("no disk %s", a.Key)
			}
			s.avoid[cairn.DiskID(a.Key)] = true
		}
		return fmt.Sprintf("avoiding %d disks", len(s.avoid))
	case "stripe":
		policy, _ := c.Arg("policy")
		code, err := all.New(policy)
		if err != nil {
			return fail("%v", err)
		}
		size := int64(4096)
		if v, ok := c.Arg("size"); ok {
			size, _ = strconv.ParseInt(v, 10, 64)
		}
		part := 0
		if v, ok := c.Arg("part"); ok {
			part, _ = strconv.Atoi(v)
		}
		var shards []cairn.ShardLoc
		for _, f := range strings.Fields(strings.Join(c.Input, " ")) {
			disk, row, _ := strings.Cut(f, "@")
			r, _ := strconv.Atoi(row)
			shards = append(shards, cairn.ShardLoc{Disk: cairn.DiskID(disk), Row: r, Size: size, CRC: uint32(len(shards))})
		}
		s.code = code
		s.m = &cairn.Manifest{Bucket: "bkt", Key: "obj", Version: version, Policy: policy}
		if part == 0 {
			s.m.Shards = shards
		} else {
			s.m.Parts = []cairn.Part{{Number: part, Version: version, Layout: cairn.Layout{Shards: shards}}}
		}
		st, _ := FindStripe(s.m, part)
		return fmt.Sprintf("%s: %d shards of %d B, %d rows; spare rows %v", policy, len(shards), size, cairn.Rows(shards), st.SpareRows())
	case "task":
		st := Stripes(s.m)[0]
		var bad []int
		if v, ok := c.Arg("bad"); ok {
			for _, f := range strings.Split(v, ",") {
				i, _ := strconv.Atoi(f)
				bad = append(bad, i)
			}
		}
		task, ok := DamagedTask(s.m, st, s.code, s.view(), time.Unix(1000, 0), bad)
		if !ok {
			s.task = nil
			return "no task: nothing lost"
		}
		s.task = &task
		out := fmt.Sprintf("task part %d: lost %v, %d bytes, risk %d, spare rows %v", task.Part, task.Lost, task.Bytes, task.Risk, task.SpareRows)
		if len(task.Bad) > 0 {
			out += fmt.Sprintf(", bad %v", task.Bad)
		}
		return out
	case "add-bad":
		var bad []int
		for _, f := range strings.Split(c.Input[0], ",") {
			i, _ := strconv.Atoi(f)
			bad = append(bad, i)
		}
		added := AddBad(s.task, bad)
		return fmt.Sprintf("%d added: lost %v, targets %q, bad %v, risk %d", added, s.task.Lost, s.task.Targets, s.task.Bad, s.task.Risk)
	case "attempt":
		lost, _ := c.Arg("lost")
		targets, _ := c.Arg("targets")
		s.task.Lost, s.task.Targets, s.task.Bad = nil, nil, nil
		for _, f := range strings.Split(lost, ",") {
			i, _ := strconv.Atoi(f)
			s.task.Lost = append(s.task.Lost, i)
		}
		for _, f := range strings.Split(targets, ",") {
			s.task.Targets = append(s.task.Targets, cairn.DiskID(strings.TrimPrefix(f, "-")))
		}
		if bad, ok := c.Arg("bad"); ok {
			for _, f := range strings.Split(bad, ",") {
				i, _ := strconv.Atoi(f)
				s.task.Bad = append(s.task.Bad, i)
			}
			return fmt.Sprintf("task: lost %v, targets %v, bad %v", s.task.Lost, s.task.Targets, s.task.Bad)
		}
		return fmt.Sprintf("task: lost %v, targets %v", s.task.Lost, s.task.Targets)
	case "round":
		return s.round(c)
	}
	return fail("unknown command %q", c.Name)
}

// states lists the disks that are not up.
func (s *script) states() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d nodes, %d disks", len(s.nodes), len(s.disks))
	for _, d := range s.disks {
		if d.State != cairn.DiskUp {
			fmt.Fprintf(&b, "; %s %s", d.ID, d.State)
		}
	}
	return b.String()
}

// round runs one round as repair's run does, printing each decision.
func (s *script) round(c *golden.Cmd) string {
	scheme := plan.PushSur
	if v, ok := c.Arg("scheme"); ok {
		var err error
		if scheme, err = plan.ParseScheme(v); err != nil {
			return err.Error()
		}
	}
	r, _ := c.Arg("rates")
	unit := int64(1024)
	if v, ok := c.Arg("unit"); ok {
		unit, _ = strconv.ParseInt(v, 10, 64)
	}
	var b strings.Builder
	st, _ := FindStripe(s.m, s.task.Part)
	v := s.view()
	rd, err := Next(s.task, st, s.code, v, scheme)
	if err != nil {
		return "error: " + err.Error()
	}
	if len(rd.Lost) == 0 {
		return "nothing lost"
	}
	s.task.Lost, s.task.Targets, s.task.InPlace = rd.Lost, rd.Targets, rd.InPlace
	fmt.Fprintf(&b, "lost %v, available %v\n", rd.Lost, Available(st, rd.Lost, v))
	fmt.Fprintf(&b, "targets %v\n", rd.Targets)
	if len(rd.InPlace) > 0 {
		fmt.Fprintf(&b, "in place %v\n", rd.InPlace)
	}
	fmt.Fprintf(&b, "scheme %s (preferred %s), code %d+%d\n", rd.Scheme, scheme, rd.Code.Params().K, rd.Code.Params().N()-rd.Code.Params().K)
	now, onto := rd.Placed()
	chosen := Choose(rd.Scheme, s.code, len(now), st.Shards[now[0]].Size, rates[r], unit)
	fmt.Fprintf(&b, "rebuild %v onto %v with %s\n", now, onto, chosen)
	jobs, err := Jobs(s.task, now, onto, st, rd.Code, chosen, v, unit)
	if err != nil {
		return b.String() + "error: " + err.Error()
	}
	for k, j := range jobs {
		fmt.Fprintf(&b, "job %d: %s", k, j.Op)
		if j.Op == Pull {
			fmt.Fprintf(&b, " by %s", j.Puller)
		}
		if j.Op != Create {
			fmt.Fprintf(&b, ", %d B in units of %d B", j.Spec.Size, j.Spec.Unit)
		}
		b.WriteString("\n")
		for _, h := range j.Spec.Hops {
			fmt.Fprintf(&b, "  hop   %s %s @%s ×[% x]\n", h.Disk, file(h.Shard), h.Addr, h.Coeffs)
		}
		for jj, tg := range j.Spec.Store {
			fmt.Fprintf(&b, "  store %s %s @%s (shard %d)\n", tg.Disk, file(tg.Shard), tg.Addr, now[j.Into[jj]])
		}
	}
	return b.String()
}

// file shortens a shard file name of the script's version to ".row".
func file(name string) string {
	if r, ok := strings.CutPrefix(name, version); ok {
		return "v" + r
	}
	return name
}
