package raidpbench

import (
	"encoding/csv"
	"io"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// WriteCSV writes rows with a header line.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"part", "policy", "seconds", "bytes_per_s", "read_seconds", "read_bytes_per_s", "user_bytes",
		"disk_per_byte", "disk_written_per_byte", "network_per_byte", "lstor_per_byte", "all_seconds", "scan_seconds",
		"critical", "bytes", "max_per_receiver", "failed"})
	for _, r := range rows {
		_ = cw.Write([]string{r.Part, r.Policy, f4(r.Seconds), f4(r.Bps), f4(r.ReadSeconds), f4(r.ReadBps), strconv.FormatInt(r.UserBytes, 10),
			f4(r.DiskPerByte), f4(r.DiskWrittenPerByte), f4(r.NetPerByte), f4(r.LstorPerByte), f4(r.AllSeconds), f4(r.ScanSeconds),
			strconv.Itoa(r.Critical), strconv.FormatInt(r.Bytes, 10), strconv.Itoa(r.MaxPerReceiver), r.Failed})
	}
	cw.Flush()
	return cw.Error()
}

func f4(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }

// Plot writes the figures into dir: write and read throughput per policy,
// the critical exit per policy, and the re-mirroring per plan. It returns
// the files written.
func Plot(rows []Row, dir string) ([]string, error) {
	var files []string
	bars := func(name, title, ylabel string, part string, series []string, get []func(Row) float64) error {
		var labels []string
		var picked []Row
		for _, r := range rows {
			if r.Part == part {
				labels = append(labels, r.Policy)
				picked = append(picked, r)
			}
		}
		if len(picked) == 0 {
			return nil
		}
		p := plot.New()
		p.Title.Text = title
		p.Y.Label.Text = ylabel
		w := vg.Points(18)
		for i, se := range series {
			var vs plotter.Values
			for _, r := range picked {
				vs = append(vs, get[i](r))
			}
			b, err := plotter.NewBarChart(vs, w)
			if err != nil {
				return err
			}
			b.Offset = w * vg.Length(float64(i)-float64(len(series)-1)/2)
			b.Color = plotutil.Color(i)
			p.Add(b)
			if len(series) > 1 {
				p.Legend.Add(se, b)
			}
		}
		p.NominalX(labels...)
		p.Legend.Top = true
		f := filepath.Join(dir, name)
		if err := p.Save(6*vg.Inch, 4*vg.Inch, f); err != nil {
			return err
		}
		files = append(files, f)
		return nil
	}
	mbps := func(f func(Row) float64) func(Row) float64 { return func(r Row) float64 { return f(r) / 1e6 } }
	if err := bars("throughput.png", "write and read throughput, same disks", "MB/s of user data", "write", []string{"write", "read"},
		[]func(Row) float64{mbps(func(r Row) float64 { return r.Bps }), mbps(func(r Row) float64 { return r.ReadBps })}); err != nil {
		return files, err
	}
	if err := bars("bytes_per_byte.png", "bytes per user byte written", "bytes", "write", []string{"disk", "network", "lstor"},
		[]func(Row) float64{func(r Row) float64 { return r.DiskPerByte }, func(r Row) float64 { return r.NetPerByte }, func(r Row) float64 { return r.LstorPerByte }}); err != nil {
		return files, err
	}
	if err := bars("critical_exit.png", "two disks lost: time to leave the critical state", "seconds", "exit", []string{"critical exit", "all rebuilt"},
		[]func(Row) float64{func(r Row) float64 { return r.Seconds }, func(r Row) float64 { return r.AllSeconds }}); err != nil {
		return files, err
	}
	if err := bars("remirror.png", "one disk lost: re-mirroring", "seconds", "remirror", []string{"re-mirror"},
		[]func(Row) float64{func(r Row) float64 { return r.Seconds }}); err != nil {
		return files, err
	}
	return files, nil
}
