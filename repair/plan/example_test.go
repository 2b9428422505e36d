package plan_test

import (
	"fmt"

	"cairn/codec/all"
	"cairn/repair/plan"
)

// A PUSH-Rep plan for rs-6-3 with shard 0 lost: a chain over the six
// helpers ending at the replacement, and the model's prediction.
func Example() {
	c, _ := all.New("rs-6-3")
	p, err := plan.Build(plan.PushRep, plan.Input{
		Code:         c,
		Lost:         []int{0},
		Nodes:        []string{"dead", "a", "b", "c", "d", "e", "f", "g", "h"},
		Replacements: []string{"new"},
		ShardSize:    4 << 20,
		Unit:         1 << 20,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	t := p.Tasks[0]
	for _, h := range t.Helpers {
		fmt.Print(h.Node, " → ")
	}
	fmt.Println(t.Store[0])
	fmt.Println("max partials per slice:", p.MaxPartialsPerSlice())

	node := plan.Rates{Read: 120e6, Write: 110e6, MixedWrite: 5e6, Send: 100e6, Recv: 100e6}
	m := plan.Model{K: 6, R: 3, F: 1, SNode: 10e9, SBlock: 128 << 10, Survivors: []plan.Rates{node}, Replacement: node}
	best, preds, _ := plan.Choose(m, nil)
	for _, pr := range preds {
		fmt.Printf("%-8v %s %6.0fs\n", pr.Scheme, pr.Eq, pr.Seconds)
	}
	fmt.Println("choose", best.Scheme)
	// Output:
	// a → b → c → d → e → f → new
	// max partials per slice: 1
	// push-sur Eq. 12     62s
	// push-rep Eq. 11    100s
	// pull-sur Eq. 10    250s
	// pull-rep Eq. 9    600s
	// choose push-sur
}
