package gpbench

import (
	"encoding/csv"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Summary is the experiment's JSON line: Clay+GP with s0 = 4 MiB (the
// paper's headline setting) against the baselines.
type Summary struct {
	RecoveryVsRS           float64 `json:"recovery_vs_rs"`
	RecoveryVsLRC          float64 `json:"recovery_vs_lrc"`
	DegradedOverNormalRead float64 `json:"degraded_over_normal_read"`
	DegradedVsStripeMax    float64 `json:"degraded_vs_stripe_max"`
	// Measured on nodes only: the whole-object degraded reads against
	// Stripe-Max (DegradedVsStripeMax is of ranges there, the paper's
	// measure), and the degraded ranges against Contiguous.
	DegradedVsStripeMaxWhole float64 `json:"degraded_vs_stripe_max_whole,omitempty"`
	// The same two against Stripe-Max read by the paper's reader, which
	// sends a stripe only once all of it is in (stripeMax.readStripe).
	DegradedVsStripeMaxWholeStripe      float64 `json:"degraded_vs_stripe_max_whole_stripe_reader,omitempty"`
	DegradedVsStripeMaxWholeStripeWhole float64 `json:"degraded_vs_stripe_max_whole_stripe_reader_whole,omitempty"`
	DegradedVsContiguous                float64 `json:"degraded_vs_contiguous,omitempty"`
	// SmallShare is the small-size bucket's share of bytes for s0 = 1, 4
	// and 16 MiB.
	SmallShare [3]float64 `json:"small_share_1m_4m_16m"`
	// Modelled says every ratio comes from the model (false: the recovery
	// and read ratios were measured on nodes; see SummarizeNodes).
	Modelled bool `json:"modelled"`
}

// Summarize takes the summary from rows of Schemes.
func Summarize(rows []Row) Summary {
	by := map[string]Row{}
	for _, r := range rows {
		by[r.Scheme] = r
	}
	geo := by["geo-4M"]
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return round(a / b)
	}
	return Summary{
		RecoveryVsRS:           ratio(geo.RecoveryBps, by["rs"].RecoveryBps),
		RecoveryVsLRC:          ratio(geo.RecoveryBps, by["lrc"].RecoveryBps),
		DegradedOverNormalRead: ratio(geo.DegradedRead, geo.NormalRead),
		DegradedVsStripeMax:    ratio(geo.DegradedRead, by["stripe-max"].DegradedRead),
		SmallShare:             [3]float64{round(by["geo-1M"].SmallShare), round(geo.SmallShare), round(by["geo-16M"].SmallShare)},
		Modelled:               true,
	}
}

func round(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 3, 64), 64)
	return v
}

// WriteCSV writes one line per row.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	if err := cw.Write([]string{"scheme", "recovery_bytes_per_s", "recovery_bound", "normal_read_s", "degraded_read_s", "small_share"}); err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write([]string{r.Scheme, f(r.RecoveryBps), r.Bound, f(r.NormalRead), f(r.DegradedRead), f(r.SmallShare)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Plot writes the paper's Figure 9 as a scatter: each scheme's degraded
// read time against its recovery time of one disk's worth (the bytes
// rebuilt at its rate, per TB), labelled. It returns the files written.
func Plot(rows []Row, dir string) ([]string, error) {
	p := plot.New()
	p.Title.Text = "recovery vs degraded read (modelled)"
	p.X.Label.Text = "mean degraded read (s)"
	p.Y.Label.Text = "recovery time per TB (s)"
	var pts plotter.XYs
	var labels []string
	for _, r := range rows {
		if r.RecoveryBps <= 0 {
			continue
		}
		pts = append(pts, plotter.XY{X: r.DegradedRead, Y: 1e12 / r.RecoveryBps})
		labels = append(labels, r.Scheme)
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
	if err != nil {
		return nil, err
	}
	p.Add(sc, lb)
	f := filepath.Join(dir, "tradeoff.png")
	if err := p.Save(6*vg.Inch, 4*vg.Inch, f); err != nil {
		return nil, err
	}
	return []string{f}, nil
}

// SummarizeNodes replaces the summary's ratios with the ones measured on
// nodes (rows of clay-, rs- and lrc- codes) and returns the names of those
// it replaced: the recovery ratios when the three codes were rebuilt, the
// read ratios when Clay's objects were read (degraded_vs_stripe_max, of
// degraded range reads as the paper measured it, when they were also read
// in the Stripe-Max layout).
func SummarizeNodes(s Summary, rows []NodeRow) (Summary, []string) {
	by := map[string]NodeRow{}
	for _, r := range rows {
		by[strings.SplitN(r.Code, "-", 2)[0]] = r
	}
	measured := []string{}
	c, ok := by["clay"]
	if !ok {
		return s, measured
	}
	if rs, lrc := by["rs"], by["lrc"]; rs.RecoveryBps > 0 && lrc.RecoveryBps > 0 && c.RecoveryBps > 0 {
		s.RecoveryVsRS = round(c.RecoveryBps / rs.RecoveryBps)
		s.RecoveryVsLRC = round(c.RecoveryBps / lrc.RecoveryBps)
		measured = append(measured, "recovery_vs_rs", "recovery_vs_lrc")
	}
	if c.Reads > 0 && c.NormalRead > 0 {
		s.DegradedOverNormalRead = round(c.DegradedRead / c.NormalRead)
		measured = append(measured, "degraded_over_normal_read")
		if c.StripeMaxRange > 0 {
			s.DegradedVsStripeMax = round(c.DegradedRange / c.StripeMaxRange)
			s.DegradedVsStripeMaxWhole = round(c.DegradedRead / c.StripeMaxDegraded)
			measured = append(measured, "degraded_vs_stripe_max")
		}
		if c.StripeMaxWholeStripeRange > 0 {
			s.DegradedVsStripeMaxWholeStripe = round(c.DegradedRange / c.StripeMaxWholeStripeRange)
			s.DegradedVsStripeMaxWholeStripeWhole = round(c.DegradedRead / c.StripeMaxWholeStripeDegraded)
		}
		if c.ContiguousRange > 0 {
			s.DegradedVsContiguous = round(c.DegradedRange / c.ContiguousRange)
		}
	}
	s.Modelled = len(measured) == 0
	return s, measured
}

// WriteNodeCSV writes the measurements on nodes, one line per code.
func WriteNodeCSV(w io.Writer, rows []NodeRow) error {
	cw := csv.NewWriter(w)
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	if err := cw.Write([]string{"code", "rebuilt_bytes", "recovery_s", "recovery_bytes_per_s", "helper_requests", "helper_bytes", "helper_missing_bytes", "cpu_busy", "reads", "read_bytes",
		"normal_read_s", "degraded_read_s", "stripe_max_degraded_s", "contiguous_degraded_s",
		"range_bytes", "degraded_range_s", "stripe_max_range_s", "contiguous_range_s",
		"stripe_max_whole_stripe_degraded_s", "stripe_max_whole_stripe_range_s"}); err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write([]string{r.Code, strconv.FormatInt(r.RebuiltBytes, 10), f(r.RecoverySeconds), f(r.RecoveryBps),
			strconv.FormatInt(r.HelperRequests, 10), strconv.FormatInt(r.HelperBytes, 10), strconv.FormatInt(r.HelperMissingBytes, 10), f(r.CPUBusy),
			strconv.Itoa(r.Reads), strconv.FormatInt(r.ReadBytes, 10), f(r.NormalRead), f(r.DegradedRead),
			f(r.StripeMaxDegraded), f(r.ContiguousDegraded),
			strconv.FormatInt(r.RangeBytes, 10), f(r.DegradedRange), f(r.StripeMaxRange), f(r.ContiguousRange),
			f(r.StripeMaxWholeStripeDegraded), f(r.StripeMaxWholeStripeRange)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
