package robustore

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// WriteCSV writes rows with a header line; seconds lists every
// repetition's latency.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"scheme", "redundancy_percent", "op", "reps", "mean_s", "stddev_s", "bandwidth_bytes_per_s", "io_overhead", "cpu_util", "seconds"})
	for _, r := range rows {
		secs := ""
		for i, s := range r.Seconds {
			if i > 0 {
				secs += " "
			}
			secs += f4(s)
		}
		_ = cw.Write([]string{r.Scheme, strconv.Itoa(r.Redundancy), r.Op, strconv.Itoa(r.Reps), f4(r.Mean), f4(r.Std),
			strconv.FormatFloat(r.Bandwidth, 'f', 0, 64), f4(r.IOOverhead), f4(r.CPUUtil), secs})
	}
	cw.Flush()
	return cw.Error()
}

func f4(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }

// Summary is the one-line result: cairn against RAID-0 at the highest
// redundancy measured.
type Summary struct {
	ReadSpeedup      float64 `json:"read_speedup_vs_raid0"`  // cairn read bandwidth ÷ RAID-0's
	WriteSpeedup     float64 `json:"write_speedup_vs_raid0"` // cairn write bandwidth ÷ RAID-0's
	StddevRatio      float64 `json:"stddev_ratio_vs_raid0"`  // the larger of the read and write ratios below
	ReadStddevRatio  float64 `json:"read_stddev_ratio_vs_raid0"`
	WriteStddevRatio float64 `json:"write_stddev_ratio_vs_raid0"`
	ReadIOOverhead   float64 `json:"read_io_overhead"`
	WriteIOOverhead  float64 `json:"write_io_overhead"`
	Redundancy       int     `json:"redundancy_percent"`
	CPUUtilMax       float64 `json:"cpu_util_max"`
}

// Summarize compares cairn at its highest redundancy with RAID-0.
func Summarize(rows []Row) Summary {
	var s Summary
	get := func(scheme string, red int, op string) (Row, bool) {
		i := slices.IndexFunc(rows, func(r Row) bool { return r.Scheme == scheme && r.Redundancy == red && r.Op == op })
		if i < 0 {
			return Row{}, false
		}
		return rows[i], true
	}
	for _, r := range rows {
		s.CPUUtilMax = max(s.CPUUtilMax, r.CPUUtil)
		if r.Scheme == Cairn {
			s.Redundancy = max(s.Redundancy, r.Redundancy)
		}
	}
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	if cw, ok := get(Cairn, s.Redundancy, "write"); ok {
		if rw, ok := get(RAID0, 0, "write"); ok {
			s.WriteSpeedup, s.WriteStddevRatio = ratio(cw.Bandwidth, rw.Bandwidth), ratio(cw.Std, rw.Std)
		}
		s.WriteIOOverhead = cw.IOOverhead
	}
	if cr, ok := get(Cairn, s.Redundancy, "read"); ok {
		if rr, ok := get(RAID0, 0, "read"); ok {
			s.ReadSpeedup, s.ReadStddevRatio = ratio(cr.Bandwidth, rr.Bandwidth), ratio(cr.Std, rr.Std)
		}
		s.ReadIOOverhead = cr.IOOverhead
	}
	s.StddevRatio = max(s.ReadStddevRatio, s.WriteStddevRatio)
	return s
}

// Plot writes write.png and read.png, each three panels like the paper's
// Figs. 8 and 9: bandwidth, standard deviation of latency and I/O
// overhead against redundancy, one line per scheme (RAID-0 is the
// zero-redundancy point the replicated schemes start from). It returns
// the files written.
func Plot(rows []Row, dir string) ([]string, error) {
	var files []string
	for _, op := range []string{"write", "read"} {
		metrics := []struct {
			label string
			y     func(Row) float64
		}{
			{"bandwidth (MB/s)", func(r Row) float64 { return r.Bandwidth / 1e6 }},
			{"std. dev. of latency (s)", func(r Row) float64 { return r.Std }},
			{"I/O overhead (%)", func(r Row) float64 { return 100 * r.IOOverhead }},
		}
		var panels []*plot.Plot
		for i, m := range metrics {
			p := plot.New()
			p.Title.Text = fmt.Sprintf("%s: (%c) %s", op, 'a'+i, m.label)
			p.X.Label.Text = "redundancy (%)"
			p.Y.Label.Text = m.label
			var args []any
			var raid0 *plotter.XY
			for _, r := range rows {
				if r.Scheme == RAID0 && r.Op == op {
					raid0 = &plotter.XY{X: 0, Y: m.y(r)}
				}
			}
			for _, sc := range []string{RRAIDS, RRAIDA, Cairn} {
				var pts plotter.XYs
				if raid0 != nil && sc != Cairn {
					pts = append(pts, *raid0)
				}
				for _, r := range rows {
					if r.Scheme == sc && r.Op == op {
						pts = append(pts, plotter.XY{X: float64(r.Redundancy), Y: m.y(r)})
					}
				}
				slices.SortFunc(pts, func(a, b plotter.XY) int { return int(a.X - b.X) })
				if len(pts) > 0 {
					args = append(args, sc, pts)
				}
			}
			if raid0 != nil {
				args = append(args, RAID0, plotter.XYs{*raid0})
			}
			if err := plotutil.AddLinePoints(p, args...); err != nil {
				return files, err
			}
			p.Legend.Top, p.Legend.Left = true, true
			panels = append(panels, p)
		}
		img := vgimg.New(15*vg.Inch, 4.5*vg.Inch)
		dc := draw.New(img)
		tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
		canvases := plot.Align([][]*plot.Plot{panels}, tiles, dc)
		for i, p := range panels {
			p.Draw(canvases[0][i])
		}
		name := filepath.Join(dir, op+".png")
		f, err := os.Create(name)
		if err != nil {
			return files, err
		}
		if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
			f.Close()
			return files, err
		}
		if err := f.Close(); err != nil {
			return files, err
		}
		files = append(files, name)
	}
	return files, nil
}
