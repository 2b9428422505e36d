package repair

// RAIDP recovery steps in the queue (docs/design/raidp.md, "Through the
// repair queue"): a task with RAIDP set names one step of a RAIDP group's
// stored recovery plan. The director queues the steps of the plan's first
// phase with steps left (client.QueueFailedRAIDP); a worker runs one
// (raidprun.RunStep: a superchunk copy, a rebuild side, the zeroing of a
// slot), records it done in the plan by compare-and-swap, and the task is
// dequeued; a failure is retried with the queue's backoff like any task.
// A task whose plan was replaced (another attempt or generation) or whose
// step is done already is dropped.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"cairn"
	"cairn/raidp"
	"cairn/repair/raidprun"
)

// raidpStore is the metadata a RAIDP step needs: the group and plan
// records (meta.Store has it).
type raidpStore interface {
	RAIDP(ctx context.Context, name string) ([]byte, error)
	UpdateRAIDP(ctx context.Context, name string, f func(old []byte) ([]byte, error)) error
}

// errNoRAIDP: the store or the executor cannot reach RAIDP records or
// slots (a permanent error of the task).
var errNoRAIDP = errors.New("repair: no RAIDP support in this repairer's store or executor")

// runRAIDP runs the RAIDP recovery step t names.
func (r *Repairer) runRAIDP(ctx context.Context, t *cairn.RepairTask) (result, error) {
	var res result
	ref := t.RAIDP
	st, ok := r.store.(raidpStore)
	n, ok2 := r.exec.(raidprun.Node)
	if !ok || !ok2 {
		return res, fmt.Errorf("%w: %w", cairn.ErrInvalid, errNoRAIDP)
	}
	b, err := st.RAIDP(ctx, "recovery/"+ref.Group)
	if errors.Is(err, cairn.ErrNotFound) {
		res.dropped = true
		return res, nil
	}
	if err != nil {
		return res, err
	}
	plan, err := raidp.DecodeRecovery(b)
	if err != nil {
		return res, fmt.Errorf("%w: RAIDP recovery plan of %s: %w", cairn.ErrCorrupt, ref.Group, err)
	}
	if plan.Generation != ref.Generation || plan.Attempt != ref.Attempt || ref.Step < 0 || ref.Step >= len(plan.Steps) || plan.Steps[ref.Step].Done {
		res.dropped = true // replaced, or done by an earlier run
		return res, nil
	}
	gb, err := st.RAIDP(ctx, "groups/"+ref.Group)
	if err != nil {
		return res, err
	}
	g, err := raidp.DecodeGroup(gb)
	if err != nil {
		return res, fmt.Errorf("%w: RAIDP group %s: %w", cairn.ErrCorrupt, ref.Group, err)
	}
	if g.Generation != plan.Generation {
		res.dropped = true // the recovery was committed
		return res, nil
	}
	disks := map[int]raidprun.Disk{}
	for i, d := range g.Disks {
		if !slices.Contains(g.Out, i) {
			disks[i] = raidprun.Remote(ctx, n, cairn.DiskID(d.ID))
		}
	}
	step := plan.Steps[ref.Step]
	if err := raidprun.RunStep(ctx, step, disks, raidprun.Config{Size: g.Size}); err != nil {
		return res, fmt.Errorf("RAIDP recovery of %s, step %d (%s): %w", ref.Group, ref.Step, step.Kind, err)
	}
	err = st.UpdateRAIDP(ctx, "recovery/"+ref.Group, func(old []byte) ([]byte, error) {
		return raidp.UpdateStep(old, ref.Generation, ref.Attempt, ref.Step, func(s *raidp.Step) { s.Done = true })
	})
	if errors.Is(err, raidp.ErrStale) {
		res.dropped = true
		return res, nil
	}
	if err != nil {
		return res, err
	}
	res.bytes = t.Bytes
	return res, nil
}
