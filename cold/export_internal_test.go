package cold

import (
	"context"
	"io"

	"cairn"
)

// ExporterFetch and SetExporterFetch let tests wrap an export job's
// Fetch (to race writes against it).
func ExporterFetch(e *Exporter) func(context.Context, *cairn.Manifest, io.Writer) error {
	return e.cfg.Fetch
}

func SetExporterFetch(e *Exporter, f func(context.Context, *cairn.Manifest, io.Writer) error) {
	e.cfg.Fetch = f
}
