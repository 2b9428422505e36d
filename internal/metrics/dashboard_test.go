package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"cairn"
)

// The sample dashboard (deploy/grafana-cairn.json) queries only series a
// process registers, and docs/metrics.md documents every cairn series a
// process registers: neither can drift from the code.
func TestDashboardAndDocsMatchTheSeries(t *testing.T) {
	reg := NewRegistry()
	s3 := NewS3(reg) // its vectors show once a request is counted
	s3.requests.WithLabelValues("GetObject", "200").Inc()
	s3.seconds.WithLabelValues("GetObject").Observe(0.01)
	NewDisks(reg).FS("n1/d1", nil)
	RegisterDisks(reg, func() []DiskReport { return []DiskReport{{Disk: "n1/d1", UsageOK: true, Scrubbed: true}} })
	NewRepair(reg, func() RepairReport { return RepairReport{Schemes: map[string]int64{"push-sur": 1}} }).SetQueue(nil, 0)
	RegisterClient(reg, func() ClientReport { return ClientReport{} })
	NewMeta(reg).Observe("Range", time.Millisecond, nil)
	NewCleanup(reg)
	RegisterNode(reg, func() int64 { return 0 })
	NewCluster(reg).SetDisks([]cairn.Disk{{ID: "n1/d1", State: cairn.DiskUp}})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range fams {
		have[f.GetName()] = true
	}

	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name := range have {
		if strings.HasPrefix(name, "cairn_") && !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/metrics.md does not document %s", name)
		}
	}
	for _, m := range regexp.MustCompile("`(cairn_[a-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1) {
		if !have[m[1]] {
			t.Errorf("docs/metrics.md documents %s, which no process registers", m[1])
		}
	}

	b, err := os.ReadFile(filepath.Join(root, "deploy", "grafana-cairn.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("deploy/grafana-cairn.json: %v", err)
	}
	series := regexp.MustCompile(`\b(cairn|go|process)_[a-z0-9_]+`)
	queried := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range series.FindAllString(tg.Expr, -1) {
				queried++
				base := strings.TrimSuffix(name, "_bucket")
				if !have[base] && !have[name] {
					t.Errorf("panel %q queries %s, which no process registers", p.Title, name)
				}
			}
		}
	}
	if queried < 20 {
		t.Fatalf("the dashboard queries only %d series", queried)
	}
}
