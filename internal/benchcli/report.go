package benchcli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// outDir returns the --out directory, made if missing, or (out == "") a
// new directory under the system's temp dir named after pattern.
func outDir(out, pattern string) (string, error) {
	if out == "" {
		return os.MkdirTemp("", pattern)
	}
	return out, os.MkdirAll(out, 0o755)
}

// report ends an experiment: it writes rows to DIR/csvName with writeCSV,
// plots them into dir, says where (unless --json), and prints summary as
// the last line, in JSON.
func report[R any](stdout io.Writer, say func(string, ...any), dir, csvName string, rows []R,
	writeCSV func(io.Writer, []R) error, plot func([]R, string) ([]string, error), summary any) error {
	csvPath := filepath.Join(dir, csvName)
	f, err := os.Create(csvPath)
	if err != nil {
		return err
	}
	if err := writeCSV(f, rows); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	pngs, err := plot(rows, dir)
	if err != nil {
		return err
	}
	say("wrote %s and %s", csvPath, strings.Join(pngs, ", "))
	b, err := json.Marshal(summary)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}
