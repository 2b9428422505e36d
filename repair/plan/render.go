package plan

import (
	"fmt"
	"strings"
)

// String renders the plan as readable text (the golden-file form): one
// block per task with the chain or pull set, the coefficients in hex, then
// each node's load.
func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s lost %v: shard %d B, unit %d B, %d slices, %d task(s)\n",
		p.Scheme, p.Policy, p.Lost, p.ShardSize, p.Unit, p.Slices(), len(p.Tasks))
	for i, t := range p.Tasks {
		fmt.Fprintf(&b, "task %d: slices [%d,%d) %d B, rebuild %v\n", i, t.First, t.End, p.Bytes(t.First, t.End), t.Lost)
		hop := func(h Helper) string { return fmt.Sprintf("%s:s%d×[% x]", h.Node, h.Shard, h.Coeffs) }
		if t.Puller != "" {
			var hs []string
			for _, h := range t.Helpers {
				hs = append(hs, hop(h))
			}
			fmt.Fprintf(&b, "  pull %s ⇐ %s\n", t.Puller, strings.Join(hs, ", "))
		} else {
			var hs []string
			for _, h := range t.Helpers {
				hs = append(hs, hop(h))
			}
			fmt.Fprintf(&b, "  chain %s\n", strings.Join(hs, " → "))
		}
		for j, st := range t.Store {
			how := "writes"
			if t.Puller == "" && st != t.Last() {
				how = "receives the partial and writes"
			} else if t.Puller != "" && st != t.Puller {
				how = "receives and writes"
			}
			fmt.Fprintf(&b, "  s%d → %s (%s)\n", t.Lost[j], st, how)
		}
	}
	loads := p.Loads()
	fmt.Fprintf(&b, "max partials per node per slice: %d\n", p.MaxPartialsPerSlice())
	b.WriteString("load (bytes read/write/send/recv):\n")
	for _, n := range p.Nodes() {
		l := loads[n]
		fmt.Fprintf(&b, "  %-4s %d/%d/%d/%d\n", n, l.Read, l.Write, l.Send, l.Recv)
	}
	return b.String()
}
