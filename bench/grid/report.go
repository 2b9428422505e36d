package grid

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

	"cairn/internal/units"
)

// WriteCSV writes rows with a header line; block_size 0 is cairn's
// default (1 MiB).
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"part", "case", "policy", "size_bytes", "block_size", "op", "reps", "seconds", "coding_seconds",
		"transfer_seconds", "coding_share", "moved_over_size", "model_seconds", "down_percent", "readable", "readable_binomial"})
	for _, r := range rows {
		_ = cw.Write([]string{r.Part, r.Case, r.Policy, strconv.FormatInt(r.Size, 10), strconv.Itoa(r.BlockSize), r.Op,
			strconv.Itoa(r.Reps), f4(r.Seconds), f4(r.Coding), f4(r.Transfer()), f4(r.Share), f4(r.Moved), f4(r.Model),
			f4(r.DownPct), f4(r.Readable), f4(r.Exact)})
	}
	cw.Flush()
	return cw.Error()
}

func f4(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }

// sizeName prints a file size (binary units).
func sizeName(n int64) string { return units.FormatSize(n) }

// packetName prints a block size, "default" for 0.
func packetName(bs int) string {
	if bs == 0 {
		return "default"
	}
	if bs%1000 == 0 && bs%1024 != 0 {
		return fmt.Sprintf("%dkB", bs/1000)
	}
	return units.FormatSize(int64(bs))
}

// Summary is the experiment's one-line result.
type Summary struct {
	// Coding ÷ wall time of rs-5-3 at the largest file size, at cairn's
	// default packet size (the paper: ≈ 0.10 and ≈ 0.25 at 1000 MB).
	CodingShareUpload   float64 `json:"coding_share_upload"`
	CodingShareDownload float64 `json:"coding_share_download"`
	// The same for a download with 3 of the 5 data shards lost (the
	// paper's decoding measurement): every stripe is decoded.
	CodingShareDegraded float64 `json:"coding_share_download_degraded"`
	// rep-5's bytes moved on upload ÷ rs-5-4's (the paper: 5 ÷ 9/5 ≈ 2.78).
	MovedRatio float64 `json:"data_moved_ratio_rep_over_rs"`
	// rep-5's upload time ÷ rs-5-4's, every node far (the paper: "much
	// faster").
	UploadSpeedup float64 `json:"upload_speedup_rs_vs_rep"`
	// rep-5's download time ÷ rs-5-4's, every node far and with the
	// node of copy (shard) 0 near (below 1: replication wins).
	DownloadSpeedupGlobal float64 `json:"download_speedup_rs_vs_rep"`
	DownloadSpeedupNear   float64 `json:"download_speedup_rs_vs_rep_near"`
	// The code alone: rs-5-3 encode and worst-case decode (3 data shards
	// rebuilt) at the default packet size, MB/s of file (the paper: ≈ 90
	// Mbit/s encode).
	EncodeMBps float64 `json:"encode_mb_per_s"`
	DecodeMBps float64 `json:"decode_worst_mb_per_s"`
	// The file size the coding shares are taken at.
	SizeBytes int64 `json:"size_bytes"`
	// Probability a file is readable with 10% and 30% of nodes down.
	ReadableRS10  float64 `json:"readable_rs_5_4_at_10pct"`
	ReadableRep10 float64 `json:"readable_rep_5_at_10pct"`
	ReadableRS30  float64 `json:"readable_rs_5_4_at_30pct"`
	ReadableRep30 float64 `json:"readable_rep_5_at_30pct"`
}

// Summarize computes the summary from the rows.
func Summarize(rows []Row) Summary {
	var s Summary
	find := func(keep func(Row) bool) (Row, bool) {
		i := slices.IndexFunc(rows, keep)
		if i < 0 {
			return Row{}, false
		}
		return rows[i], true
	}
	for _, r := range rows {
		if r.Part == PartTransfer {
			s.SizeBytes = max(s.SizeBytes, r.Size)
		}
	}
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	for op, dst := range map[string]*float64{"upload": &s.CodingShareUpload, "download": &s.CodingShareDownload, OpDegraded: &s.CodingShareDegraded} {
		r, _ := find(func(r Row) bool { return r.Part == PartTransfer && r.Size == s.SizeBytes && r.Op == op })
		*dst = r.Share
	}
	rep := func(cs, pol, op string) Row {
		r, _ := find(func(r Row) bool { return r.Part == PartReplication && r.Case == cs && r.Policy == pol && r.Op == op })
		return r
	}
	s.MovedRatio = ratio(rep(Global, Replicated, "upload").Moved, rep(Global, Striped4, "upload").Moved)
	s.UploadSpeedup = ratio(rep(Global, Replicated, "upload").Seconds, rep(Global, Striped4, "upload").Seconds)
	s.DownloadSpeedupGlobal = ratio(rep(Global, Replicated, "download").Seconds, rep(Global, Striped4, "download").Seconds)
	s.DownloadSpeedupNear = ratio(rep(Near, Replicated, "download").Seconds, rep(Near, Striped4, "download").Seconds)
	for _, r := range rows {
		if r.Part == PartCodec && r.BlockSize == 0 && r.Seconds > 0 {
			if r.Op == "encode" {
				s.EncodeMBps = float64(r.Size) / r.Seconds / 1e6
			} else {
				s.DecodeMBps = float64(r.Size) / r.Seconds / 1e6
			}
		}
		if r.Part == PartAvailability {
			switch {
			case r.Policy == Striped4 && r.DownPct == 10:
				s.ReadableRS10 = r.Readable
			case r.Policy == Replicated && r.DownPct == 10:
				s.ReadableRep10 = r.Readable
			case r.Policy == Striped4 && r.DownPct == 30:
				s.ReadableRS30 = r.Readable
			case r.Policy == Replicated && r.DownPct == 30:
				s.ReadableRep30 = r.Readable
			}
		}
	}
	return s
}

// Table prints the rows as a text table, one line per row, for the
// terminal and the docs.
func Table(w io.Writer, rows []Row) error {
	for _, r := range rows {
		var err error
		switch r.Part {
		case PartAvailability:
			_, err = fmt.Fprintf(w, "%-12s %-6s %3.0f%% down: readable %.4f (binomial %.4f)\n", r.Part, r.Policy, r.DownPct, r.Readable, r.Exact)
		case PartCodec:
			_, err = fmt.Fprintf(w, "%-12s %-6s packet %-8s %-12s %8.1f MB/s\n", r.Part, r.Policy, packetName(r.BlockSize), r.Op, float64(r.Size)/r.Seconds/1e6)
		default:
			_, err = fmt.Fprintf(w, "%-12s %-6s %-6s %8s packet %-8s %-17s %7.2f s = coding %6.3f s (%4.1f%%) + transfer %7.2f s; moved %.2f× size; model %6.2f s\n",
				r.Part, r.Case, r.Policy, sizeName(r.Size), packetName(r.BlockSize), r.Op, r.Seconds, r.Coding, 100*r.Share, r.Transfer(), r.Moved, r.Model)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Plot writes transfer.png (the paper's Figs. 7 and 8: upload and
// download time by file size, split into coding and transfer),
// packet.png (time and coding share by packet size), replication.png
// (the paper's Figs. 9 and 10: rs-5-4 against rep-5) and
// availability.png (readable against nodes down) into dir, each only if
// its part was measured. It returns the files written.
func Plot(rows []Row, dir string) ([]string, error) {
	var files []string
	save := func(p *plot.Plot, name string) error {
		f := filepath.Join(dir, name)
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, f); err != nil {
			return err
		}
		files = append(files, f)
		return nil
	}
	pick := func(keep func(Row) bool) []Row {
		var out []Row
		for _, r := range rows {
			if keep(r) {
				out = append(out, r)
			}
		}
		return out
	}
	// Stacked bars: coding under transfer, one group per label, one bar
	// per series.
	stacked := func(title string, labels []string, series []string, get func(label, series string) (Row, bool)) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.Y.Label.Text = "seconds"
		w := vg.Points(14)
		for i, se := range series {
			var coding, transfer plotter.Values
			for _, l := range labels {
				r, _ := get(l, se)
				coding = append(coding, r.Coding)
				transfer = append(transfer, max(r.Transfer(), 0))
			}
			bc, err := plotter.NewBarChart(coding, w)
			if err != nil {
				return nil, err
			}
			bt, err := plotter.NewBarChart(transfer, w)
			if err != nil {
				return nil, err
			}
			off := w * vg.Length(float64(i)-float64(len(series)-1)/2)
			bc.Offset, bt.Offset = off, off
			bc.Color, bt.Color = plotutil.Color(2*i+1), plotutil.Color(2*i)
			bt.StackOn(bc)
			p.Add(bc, bt)
			p.Legend.Add(se+" coding", bc)
			p.Legend.Add(se+" transfer", bt)
		}
		p.NominalX(labels...)
		p.Legend.Top, p.Legend.Left = true, true
		return p, nil
	}
	if tr := pick(func(r Row) bool { return r.Part == PartTransfer }); len(tr) > 0 {
		var labels []string
		for _, r := range tr {
			if l := sizeName(r.Size); !slices.Contains(labels, l) {
				labels = append(labels, l)
			}
		}
		p, err := stacked(Striped+": upload and download by file size", labels, []string{"upload", "download", OpDegraded}, func(l, op string) (Row, bool) {
			i := slices.IndexFunc(tr, func(r Row) bool { return sizeName(r.Size) == l && r.Op == op })
			if i < 0 {
				return Row{}, false
			}
			return tr[i], true
		})
		if err != nil {
			return files, err
		}
		if err := save(p, "transfer.png"); err != nil {
			return files, err
		}
	}
	if pk := pick(func(r Row) bool { return r.Part == PartPacket }); len(pk) > 0 {
		var labels []string
		for _, r := range pk {
			if l := packetName(r.BlockSize); !slices.Contains(labels, l) {
				labels = append(labels, l)
			}
		}
		p, err := stacked(fmt.Sprintf("%s, %s file: by packet (block) size", Striped, sizeName(pk[0].Size)), labels, []string{"upload", "download"}, func(l, op string) (Row, bool) {
			i := slices.IndexFunc(pk, func(r Row) bool { return packetName(r.BlockSize) == l && r.Op == op })
			if i < 0 {
				return Row{}, false
			}
			return pk[i], true
		})
		if err != nil {
			return files, err
		}
		if err := save(p, "packet.png"); err != nil {
			return files, err
		}
	}
	if rp := pick(func(r Row) bool { return r.Part == PartReplication }); len(rp) > 0 {
		labels := []string{"upload " + Global, "download " + Global, "download " + Near}
		p, err := stacked(fmt.Sprintf("4-available %s file: %s against %s", sizeName(rp[0].Size), Striped4, Replicated), labels, []string{Striped4, Replicated}, func(l, pol string) (Row, bool) {
			i := slices.IndexFunc(rp, func(r Row) bool { return r.Op+" "+r.Case == l && r.Policy == pol })
			if i < 0 {
				return Row{}, false
			}
			return rp[i], true
		})
		if err != nil {
			return files, err
		}
		if err := save(p, "replication.png"); err != nil {
			return files, err
		}
	}
	if av := pick(func(r Row) bool { return r.Part == PartAvailability }); len(av) > 0 {
		p := plot.New()
		p.Title.Text = "4-available files with nodes down at random"
		p.X.Label.Text = "nodes down (%)"
		p.Y.Label.Text = "P(file readable)"
		var args []any
		for _, pol := range []string{Striped4, Replicated} {
			var mc, ex plotter.XYs
			for _, r := range av {
				if r.Policy == pol {
					mc = append(mc, plotter.XY{X: r.DownPct, Y: r.Readable})
					ex = append(ex, plotter.XY{X: r.DownPct, Y: r.Exact})
				}
			}
			args = append(args, pol+" (Monte-Carlo)", mc, pol+" (binomial)", ex)
		}
		if err := plotutil.AddLinePoints(p, args...); err != nil {
			return files, err
		}
		p.Legend.Left = true
		if err := save(p, "availability.png"); err != nil {
			return files, err
		}
	}
	return files, nil
}
