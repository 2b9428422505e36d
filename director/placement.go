package director

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"cairn"
	"cairn/placement"
)

// PlacementStore is the part of the metadata store the placement duty
// uses.
type PlacementStore interface {
	Nodes(ctx context.Context) ([]cairn.Node, error)
	Disks(ctx context.Context) ([]cairn.Disk, error)
	PGTables(ctx context.Context) ([]cairn.PGTable, error)
	UpdatePGTable(ctx context.Context, t cairn.PGTable) error
}

// PlacementDuty is the leader's duty that keeps the placement-group
// tables following the cluster: every run it recomputes each stored
// table from the members (placement.Recompute: disks up, suspect or
// down) and stores the ones that changed, so new objects spread over
// nodes and disks that joined and leave those drained or taken out. The
// objects already stored move only by the rebalancer. A table another
// director changed meanwhile (cairn.ErrConflict) waits for the next run.
func PlacementDuty(store PlacementStore, every time.Duration, log *slog.Logger) Duty {
	return Duty{Name: "placement", Every: every, Run: func(ctx context.Context, _ time.Time) error {
		_, err := RecomputeTables(ctx, store, log)
		return err
	}}
}

// RecomputeTables recomputes every stored table once and returns how
// many it replaced (log: nil logs nothing).
func RecomputeTables(ctx context.Context, store PlacementStore, log *slog.Logger) (int, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tables, err := store.PGTables(ctx)
	if err != nil {
		return 0, err
	}
	if len(tables) == 0 {
		return 0, nil
	}
	nodes, err := store.Nodes(ctx)
	if err != nil {
		return 0, err
	}
	disks, err := store.Disks(ctx)
	if err != nil {
		return 0, err
	}
	done := 0
	var errs []error
	for _, old := range tables {
		t, changed, err := placement.Recompute(old, placement.Input{Nodes: nodes, Disks: disks})
		if err != nil {
			errs = append(errs, fmt.Errorf("placement groups of width %d: %w", old.Width, err))
			continue
		}
		if changed == 0 {
			continue
		}
		if err := store.UpdatePGTable(ctx, t); err != nil {
			if !errors.Is(err, cairn.ErrConflict) {
				errs = append(errs, err)
			}
			continue
		}
		done++
		log.Info("director: placement groups recomputed", "width", t.Width, "epoch", t.Epoch, "pgs", len(t.PGs),
			"slots_changed", changed, "distinct_nodes", t.DistinctNodes)
	}
	return done, errors.Join(errs...)
}
