package plan

import (
	"cmp"
	"fmt"
	"slices"
)

// Kind says what a message carries.
type Kind int

// Message kinds.
const (
	// ShardSlice: a helper's slice of its own shard, sent to a puller (PULL).
	ShardSlice Kind = iota + 1
	// Partial: a partial block I_i[j] for lost shard j (PUSH), including
	// the finished one the last hop sends to the storing node.
	Partial
	// Rebuilt: a rebuilt slice sent by a puller to a different storing
	// node (PULL, only when Store[j] != Puller).
	Rebuilt
)

func (k Kind) String() string {
	switch k {
	case ShardSlice:
		return "shard"
	case Partial:
		return "partial"
	case Rebuilt:
		return "rebuilt"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Message is one slice-sized transfer between two different nodes. Shard
// is the helper shard (ShardSlice) or the lost shard (Partial, Rebuilt).
type Message struct {
	From, To string
	Kind     Kind
	Shard    int
}

// Messages returns the network transfers of slice position s in the order
// a pipeline would start them. Hand-overs within one node are not messages.
func (p *Plan) Messages(s int) []Message {
	var out []Message
	for ti := range p.Tasks {
		t := &p.Tasks[ti]
		if s < t.First || s >= t.End {
			continue
		}
		if t.Puller != "" {
			for _, h := range t.Helpers {
				if h.Node != t.Puller {
					out = append(out, Message{From: h.Node, To: t.Puller, Kind: ShardSlice, Shard: h.Shard})
				}
			}
			for j, st := range t.Store {
				if st != t.Puller {
					out = append(out, Message{From: t.Puller, To: st, Kind: Rebuilt, Shard: t.Lost[j]})
				}
			}
			continue
		}
		for i := 1; i < len(t.Helpers); i++ {
			if a, b := t.Helpers[i-1].Node, t.Helpers[i].Node; a != b {
				for _, l := range t.Lost {
					out = append(out, Message{From: a, To: b, Kind: Partial, Shard: l})
				}
			}
		}
		for j, st := range t.Store {
			if st != t.Last() {
				out = append(out, Message{From: t.Last(), To: st, Kind: Partial, Shard: t.Lost[j]})
			}
		}
	}
	return out
}

// MaxPartialsPerSlice returns the largest number of partial blocks any one
// node receives for any one slice position. Under PUSH with nodes holding
// one shard each it is at most f = len(p.Lost) (the acceptance
// bound).
func (p *Plan) MaxPartialsPerSlice() int {
	best := 0
	for s := range p.Slices() {
		got := map[string]int{}
		for _, m := range p.Messages(s) {
			if m.Kind == Partial {
				got[m.To]++
				best = max(best, got[m.To])
			}
		}
	}
	return best
}

// Load is the work a plan gives one node, in bytes. Serve is the part of
// Read that pullers on other nodes fetch (one request unit at a time).
type Load struct {
	Read, Serve, Write, Send, Recv int64
}

// Loads returns each node's bytes read (helper slices; those sent to a
// puller also count as Serve), written (rebuilt slices), sent and
// received (messages) over the whole plan. Add the
// loads of many stripes' plans to model a node-level repair.
func (p *Plan) Loads() map[string]*Load {
	out := map[string]*Load{}
	at := func(n string) *Load {
		if out[n] == nil {
			out[n] = &Load{}
		}
		return out[n]
	}
	for s := range p.Slices() {
		off, end := p.Range(s)
		b := end - off
		for _, t := range p.Tasks {
			if s < t.First || s >= t.End {
				continue
			}
			for _, h := range t.Helpers {
				at(h.Node).Read += b
				if t.Puller != "" && h.Node != t.Puller {
					at(h.Node).Serve += b
				}
			}
			for _, st := range t.Store {
				at(st).Write += b
			}
		}
		for _, m := range p.Messages(s) {
			at(m.From).Send += b
			at(m.To).Recv += b
		}
	}
	return out
}

// AddLoads adds src into dst (allocating entries as needed).
func AddLoads(dst, src map[string]*Load) {
	for n, l := range src {
		d := dst[n]
		if d == nil {
			d = &Load{}
			dst[n] = d
		}
		d.Read += l.Read
		d.Serve += l.Serve
		d.Write += l.Write
		d.Send += l.Send
		d.Recv += l.Recv
	}
}

// Nodes returns the sorted names of the nodes a plan involves.
func (p *Plan) Nodes() []string {
	var out []string
	for n := range p.Loads() {
		out = append(out, n)
	}
	// Natural order: n2 before n10.
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b)) })
	return out
}
