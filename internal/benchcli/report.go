package benchcli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"cairn/internal/progress"
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

// stepsBar returns the progress bar of an experiment on stderr (drawn on a
// terminal only) and the function that feeds it the experiment's Progress:
// points done and their total.
func stepsBar(stderr io.Writer, what string) (*progress.Bar, func(done, total int)) {
	bar := progress.New(stderr, what, -1, progress.Steps)
	return bar, func(done, total int) {
		bar.SetTotal(int64(total))
		bar.Set(int64(done))
	}
}

// sayer returns an experiment's say: a line of text to stdout, unless the
// output is only JSON; the bar is cleared first.
func sayer(stdout io.Writer, bar *progress.Bar, asJSON bool) func(string, ...any) {
	return func(f string, a ...any) {
		if !asJSON {
			bar.Clear()
			fmt.Fprintf(stdout, f+"\n", a...)
		}
	}
}
