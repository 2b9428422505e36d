package cold

import (
	"context"

	"cairn/layout/gp"
)

// ExporterFetch and SetExporterFetch let tests wrap an export job's
// Fetch (to race writes against it).
func ExporterFetch(e *Exporter) Fetch {
	return e.cfg.Fetch
}

func SetExporterFetch(e *Exporter, f Fetch) {
	e.cfg.Fetch = f
}

// UnitShard returns the node's name for unit u (a slot or a small page)
// of a group file on the disk at position disk, for tests that damage
// one.
func UnitShard(g *Group, disk int, file string, u int64) string { return g.shardName(disk, file, u) }

// ReencodeRow re-encodes row (level, slot) of g from its K data slots as
// a recovery does (gp.Full, every slot read).
func ReencodeRow(ctx context.Context, g *Group, level int, slot uint32) error {
	return g.updateRow(ctx, gp.RowUpdate{Level: level, Slot: slot, Mode: gp.Full}, nil, nil)
}
