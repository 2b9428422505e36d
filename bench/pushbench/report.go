package pushbench

import (
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// WriteCSV writes rows with a header line.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"k", "r", "f", "unit_bytes", "scheme", "stripes", "node_data_bytes", "seconds", "model_seconds", "paper_seconds", "model_error", "cpu_util", "max_partials_per_slice"})
	for _, r := range rows {
		_ = cw.Write([]string{strconv.Itoa(r.K), strconv.Itoa(r.R), strconv.Itoa(r.F), strconv.FormatInt(r.Unit, 10), r.Scheme,
			strconv.Itoa(r.Stripes), strconv.FormatInt(r.NodeData, 10), f4(r.Seconds), f4(r.Model), f4(r.Paper), f4(r.ModelError),
			f4(r.CPUUtil), strconv.Itoa(r.MaxPartials)})
	}
	cw.Flush()
	return cw.Error()
}

func f4(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }

// Summary is the one-line result of the experiment.
type Summary struct {
	PushRepSpeedup float64 `json:"push_rep_speedup"` // PULL-Rep ÷ PUSH-Rep at the reference point
	PushSurSpeedup float64 `json:"push_sur_speedup"` // PULL-Sur ÷ PUSH-Sur at the reference point
	ModelErrorMax  float64 `json:"model_error_max"`
	CPUUtilMax     float64 `json:"cpu_util_max"`
	MaxPartials    int     `json:"max_partials_per_slice"` // over PUSH plans; ≤ f
	Reference      string  `json:"reference"`              // the point the speedups are taken at
}

// ReferenceUnit is the request unit the summary's speedups are taken at
// when it was measured: 128 KiB, the paper's (its k=6 PUSH-Sur speedups
// are 2.64, 1.85 and 1.38 at 64, 128 and 256 KB; 1.85 is the headline).
const ReferenceUnit = 128 << 10

// Summarize takes the speedups at k=6, r=3, f=1 with ReferenceUnit, or
// else the largest unit measured there.
func Summarize(rows []Row) Summary {
	var s Summary
	var ref int64
	for _, r := range rows {
		s.ModelErrorMax = max(s.ModelErrorMax, r.ModelError)
		s.CPUUtilMax = max(s.CPUUtilMax, r.CPUUtil)
		if r.Scheme == "push-rep" || r.Scheme == "push-sur" {
			s.MaxPartials = max(s.MaxPartials, r.MaxPartials)
		}
		if r.K == 6 && r.R == 3 && r.F == 1 && ref != ReferenceUnit {
			if r.Unit == ReferenceUnit {
				ref = r.Unit
			} else {
				ref = max(ref, r.Unit)
			}
		}
	}
	t := map[string]float64{}
	for _, r := range rows {
		if r.K == 6 && r.R == 3 && r.F == 1 && r.Unit == ref {
			t[r.Scheme] = r.Seconds
		}
	}
	if t["push-rep"] > 0 {
		s.PushRepSpeedup = t["pull-rep"] / t["push-rep"]
	}
	if t["push-sur"] > 0 {
		s.PushSurSpeedup = t["pull-sur"] / t["push-sur"]
	}
	s.Reference = fmt.Sprintf("k=6 r=3 f=1 unit=%s", sizeString(ref))
	return s
}

// Plot writes the figures into dir: time against k per scheme (like the
// paper's Fig. 8), against the request unit (Fig. 10), and measured
// against the model. It returns the files written.
func Plot(rows []Row, dir string) ([]string, error) {
	var files []string
	schemes := []string{"pull-rep", "pull-sur", "push-rep", "push-sur"}
	line := func(name, title, xlabel string, keep func(Row) bool, x func(Row) float64) error {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = xlabel
		p.Y.Label.Text = "reconstruction time (s)"
		var args []any
		for _, sc := range schemes {
			var pts plotter.XYs
			for _, r := range rows {
				if r.Scheme == sc && keep(r) {
					pts = append(pts, plotter.XY{X: x(r), Y: r.Seconds})
				}
			}
			slices.SortFunc(pts, func(a, b plotter.XY) int { return cmpF(a.X, b.X) })
			if len(pts) > 0 {
				args = append(args, sc, pts)
			}
		}
		if len(args) == 0 {
			return nil
		}
		if err := plotutil.AddLinePoints(p, args...); err != nil {
			return err
		}
		f := filepath.Join(dir, name)
		if err := p.Save(6*vg.Inch, 4*vg.Inch, f); err != nil {
			return err
		}
		files = append(files, f)
		return nil
	}
	for _, f := range []int{1, 2} {
		// The unit measured at the most values of k (the full run measures
		// 128 KiB and 1 MiB at every k, other units only at k=6).
		ks := map[int64]map[int]bool{}
		for _, r := range rows {
			if r.F == f && r.R == 3 {
				if ks[r.Unit] == nil {
					ks[r.Unit] = map[int]bool{}
				}
				ks[r.Unit][r.K] = true
			}
		}
		unit := int64(0)
		for u, k := range ks {
			if len(k) > len(ks[unit]) || len(k) == len(ks[unit]) && (u == ReferenceUnit || unit != ReferenceUnit && u > unit) {
				unit = u
			}
		}
		if err := line(fmt.Sprintf("time_vs_k_f%d.png", f), fmt.Sprintf("r=3, f=%d, unit %s", f, sizeString(unit)), "k",
			func(r Row) bool { return r.F == f && r.R == 3 && r.Unit == unit }, func(r Row) float64 { return float64(r.K) }); err != nil {
			return files, err
		}
	}
	if err := line("time_vs_unit.png", "k=6, r=3, f=1", "request unit (KiB)",
		func(r Row) bool { return r.K == 6 && r.R == 3 && r.F == 1 }, func(r Row) float64 { return float64(r.Unit) / 1024 }); err != nil {
		return files, err
	}
	// Measured against predicted.
	p := plot.New()
	p.Title.Text = "measured vs model"
	p.X.Label.Text = "model (s)"
	p.Y.Label.Text = "measured (s)"
	var pts, diag plotter.XYs
	hi := 0.0
	for _, r := range rows {
		pts = append(pts, plotter.XY{X: r.Model, Y: r.Seconds})
		hi = max(hi, r.Model, r.Seconds)
	}
	diag = plotter.XYs{{X: 0, Y: 0}, {X: hi, Y: hi}}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return files, err
	}
	ln, err := plotter.NewLine(diag)
	if err != nil {
		return files, err
	}
	p.Add(sc, ln)
	f := filepath.Join(dir, "model.png")
	if err := p.Save(5*vg.Inch, 5*vg.Inch, f); err != nil {
		return files, err
	}
	return append(files, f), nil
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
