package testcluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"cairn/internal/proc"
	"cairn/internal/testcluster"
)

// scrape is one read of a /metrics page: its text and its families.
type scrape struct {
	text string
	fams map[string]*dto.MetricFamily
}

func scrapeMetrics(t *testing.T, url string) scrape {
	t.Helper()
	sc, err := fetchMetrics(url)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// fetchMetrics reads and parses a /metrics page.
func fetchMetrics(url string) (scrape, error) {
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(url)
	if err != nil {
		return scrape{}, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return scrape{}, fmt.Errorf("scraping %s: %d %v\n%.300s", url, resp.StatusCode, err, b)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		return scrape{}, fmt.Errorf("scraping %s: parsing the exposition: %w", url, err)
	}
	return scrape{text: string(b), fams: fams}, nil
}

// value sums the series of name whose labels include want: counters and
// gauges by value, histograms by their count of observations. ok is false
// when no series matches.
func (s scrape) value(name string, want ...string) (v float64, ok bool) {
	f := s.fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(want); i += 2 {
			if labels[want[i]] != want[i+1] {
				continue next
			}
		}
		ok = true
		switch {
		case m.Counter != nil:
			v += m.Counter.GetValue()
		case m.Gauge != nil:
			v += m.Gauge.GetValue()
		case m.Histogram != nil:
			v += float64(m.Histogram.GetSampleCount())
		}
	}
	return v, ok
}

func (s scrape) must(t *testing.T, name string, want ...string) float64 {
	t.Helper()
	v, ok := s.value(name, want...)
	if !ok {
		t.Fatalf("no series %s%v in the exposition", name, want)
	}
	return v
}

// The acceptance test of issue #19: cairn server with --metrics-addr
// serves /metrics during a PUT/GET workload over S3 and a repair after two
// disk directories are removed. The request counters, the bytes and the
// per-disk bytes move with the workload; repair bytes rise and the repair
// queue gauge goes up and comes back to 0; the exposition passes the
// client library's lint (promtool check metrics' rules) and names no bucket
// or key, which is why it needs no credentials; --s3-metrics serves the
// same page on the S3 port to an unsigned GET /metrics.
func TestMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the node's 30 s refresh and a repair")
	}
	// A slow repair (--repair-rate) keeps the queue visible to the
	// director's 5 s counts for a while.
	s := testcluster.StartServer(t, "", "--metrics-addr", "127.0.0.1:0", "--s3-metrics",
		"--grace", "2s", "--repair-scan", "1s", "--repair-rate", "256KiB")
	url := "http://" + s.Addr(proc.Metrics) + "/metrics"
	ctx := t.Context()
	c := s3Client(s.S3)
	const bucket, keyPrefix = "metricsprobebucket", "private-key-name/"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	before := scrapeMetrics(t, url)
	lintExposition(t, before.text)

	// The workload, in batches, with a scraper running beside it the whole
	// time: every scrape parses and no counter goes back.
	var (
		mu      sync.Mutex
		scrapes int
		last    float64
		backErr string
	)
	sctx, stopScraper := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for sctx.Err() == nil {
			sc, err := fetchMetrics(url)
			v, _ := sc.value("cairn_s3_requests_total")
			mu.Lock()
			scrapes++
			switch {
			case err != nil && backErr == "":
				backErr = err.Error()
			case err == nil && v < last:
				backErr = fmt.Sprintf("cairn_s3_requests_total went back from %v to %v", last, v)
			}
			last = max(last, v)
			mu.Unlock()
		}
	})
	rng := rand.New(rand.NewPCG(19, 19))
	objects := map[string][]byte{}
	var sent int64
	const batches, perBatch = 4, 10
	for b := range batches {
		for i := range perBatch {
			key := fmt.Sprintf("%s%02d-%02d", keyPrefix, b, i)
			data := make([]byte, 128<<10+rng.IntN(256<<10))
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)}); err != nil {
				t.Fatal(err)
			}
			objects[key], sent = data, sent+int64(len(data))
		}
		// During the workload: the puts so far are counted, exactly.
		sc := scrapeMetrics(t, url)
		if got, want := sc.must(t, "cairn_s3_requests_total", "operation", "PutObject", "code", "200"), float64((b+1)*perBatch); got != want {
			t.Fatalf("after %d puts: PutObject 200 counted %v times", int(want), got)
		}
		if got := sc.must(t, "cairn_s3_bytes_total", "direction", "in"); got < float64(sent) {
			t.Fatalf("after %d bytes put: %v bytes in", sent, got)
		}
	}
	var got int64
	for key, data := range objects {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil || !bytes.Equal(b, data) {
			t.Fatalf("get %s: %v, or different bytes", key, err)
		}
		got += int64(len(b))
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(keyPrefix + "missing")}); err == nil {
		t.Fatal("a missing key was found")
	}
	stopScraper()
	wg.Wait()
	mu.Lock()
	t.Logf("%d scrapes during the workload", scrapes)
	if backErr != "" {
		t.Fatal(backErr)
	}
	mu.Unlock()

	after := scrapeMetrics(t, url)
	n := float64(len(objects))
	for _, c := range []struct {
		name   string
		labels []string
		min    float64
	}{
		{"cairn_s3_requests_total", []string{"operation", "PutObject", "code", "200"}, n},
		{"cairn_s3_requests_total", []string{"operation", "GetObject", "code", "200"}, n},
		{"cairn_s3_requests_total", []string{"operation", "GetObject", "code", "404"}, 1},
		{"cairn_s3_request_duration_seconds", []string{"operation", "PutObject"}, n},
		{"cairn_s3_bytes_total", []string{"direction", "in"}, float64(sent)},
		{"cairn_s3_bytes_total", []string{"direction", "out"}, float64(got)},
		{"cairn_disk_written_bytes_total", nil, before.must(t, "cairn_disk_written_bytes_total") + float64(sent)}, // rs-4-2: 1.5× the data
		{"cairn_disk_read_bytes_total", nil, before.must(t, "cairn_disk_read_bytes_total") + float64(got)},
		{"cairn_disk_operation_duration_seconds", []string{"op", "sync"}, 1},
		// The data path: every object's shards written and enough read.
		{"cairn_client_shard_requests_total", []string{"op", "write", "result", "succeeded"}, n},
		{"cairn_client_shard_requests_total", []string{"op", "read", "result", "succeeded"}, n},
	} {
		if v := after.must(t, c.name, c.labels...); v < c.min {
			t.Errorf("%s%v = %v after the workload, want at least %v", c.name, c.labels, v, c.min)
		}
	}
	if v := after.must(t, "cairn_disk_written_bytes_total", "disk", "node1/disk1"); v == 0 {
		t.Error("disk1 wrote nothing: the bytes are not per disk")
	}
	for _, secret := range []string{bucket, keyPrefix, testcluster.TestAccessKey} {
		if strings.Contains(after.text, secret) {
			t.Errorf("the exposition names %q: it must show no bucket, object or user", secret)
		}
	}
	lintExposition(t, after.text)

	// --s3-metrics: an unsigned GET /metrics on the S3 port is the page.
	onS3 := scrapeMetrics(t, s.S3+"/metrics")
	if v := onS3.must(t, "cairn_s3_requests_total", "operation", "PutObject", "code", "200"); v != n {
		t.Fatalf("the S3 port's /metrics counts %v puts, want %v", v, n)
	}

	// The repair: two disk directories removed; the node reports them
	// (within its 30 s refresh), the director marks them down after
	// --grace, queues their stripes and rebuilds them.
	for _, d := range []string{"disk2", "disk5"} {
		if err := os.RemoveAll(filepath.Join(s.Data, d)); err != nil {
			t.Fatal(err)
		}
	}
	var maxQueue, maxQueueBytes, maxDown float64
	waitFor(t, 4*time.Minute, "repair to rebuild bytes and the queue gauge to read 0", func() bool {
		sc := scrapeMetrics(t, url)
		down, _ := sc.value("cairn_cluster_disks", "state", "down")
		maxDown = max(maxDown, down)
		q, qok := sc.value("cairn_repair_queue_tasks")
		qb, _ := sc.value("cairn_repair_queue_bytes")
		maxQueue, maxQueueBytes = max(maxQueue, q), max(maxQueueBytes, qb)
		rebuilt, _ := sc.value("cairn_repair_rebuilt_bytes_total")
		return qok && q == 0 && qb == 0 && rebuilt > 0 && maxQueue > 0
	})
	end := scrapeMetrics(t, url)
	if maxDown == 0 {
		t.Error("cairn_cluster_disks{state=\"down\"} never counted the removed disks")
	}
	t.Logf("repair: up to %v disks down; queue up to %v tasks (%v bytes), rebuilt %v bytes in %v shards; stripes by scheme: %s",
		maxDown, maxQueue, maxQueueBytes, end.must(t, "cairn_repair_rebuilt_bytes_total"), end.must(t, "cairn_repair_rebuilt_shards_total"),
		seriesLines(end.text, "cairn_repair_stripes_by_scheme_total"))
	if v := end.must(t, "cairn_repair_tasks_total", "result", "repaired"); v == 0 {
		t.Error("no repair task counted as repaired")
	}
	if v, _ := end.value("cairn_repair_stripes_by_scheme_total"); v == 0 {
		t.Error("no stripe counted by its repair scheme")
	}
	// The queue really is empty: what the gauge said is what the operator
	// reads in cairn admin repair status.
	out := s.CLI(t, "admin", "repair", "status", "--json")
	var st struct {
		Tasks *int `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Tasks == nil || *st.Tasks != 0 {
		t.Fatalf("the queue gauge read 0 but repair status says (%v):\n%s", err, out)
	}
	lintExposition(t, end.text)
}

// Every long-running process serves its metrics with --metrics-addr: a
// metadata member (the runtime), a node (its disks, its metadata calls)
// and a gateway (S3, the data path, its metadata calls), each page clean
// under the lint.
func TestMetricsEveryProcess(t *testing.T) {
	at := []string{"--metrics-addr", "127.0.0.1:0"}
	c := testcluster.Start(t, testcluster.Config{DisksPerNode: 3, MetaArgs: at, NodeArgs: at})
	gw := testcluster.StartProc(t, "gateway", append([]string{"gateway", "--config", c.Conf, "--s3-addr", "127.0.0.1:0",
		"--access-key", testcluster.TestAccessKey, "--secret-key", testcluster.TestSecretKey}, at...)...)
	c.CLI(t, "mb", "bkt", "--policy", "rs-2-1")
	s3c := s3Client(gw.Addr(proc.S3))
	data := bytes.Repeat([]byte("metrics "), 40_000)
	if _, err := s3c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	page := func(p *testcluster.Proc) scrape {
		t.Helper()
		sc := scrapeMetrics(t, "http://"+p.Addr(proc.Metrics)+"/metrics")
		lintExposition(t, sc.text)
		return sc
	}
	if v := page(c.Metas[0]).must(t, "go_goroutines"); v == 0 {
		t.Error("the metadata member reports no goroutines")
	}
	// The embedded etcd server's own series, apart (they fail the lint).
	etcd := scrapeMetrics(t, "http://"+c.Metas[0].Addr(proc.Metrics)+"/metrics/etcd")
	if v := etcd.must(t, "etcd_server_has_leader"); v != 1 {
		t.Errorf("etcd_server_has_leader = %v on a one-member cluster", v)
	}
	if _, ok := etcd.value("go_goroutines"); ok {
		t.Error("/metrics/etcd repeats the runtime series of /metrics")
	}
	node := page(c.Nodes[0])
	if v := node.must(t, "cairn_disk_written_bytes_total"); v < float64(len(data)) {
		t.Errorf("the node wrote %v bytes to its disks for a %d-byte object", v, len(data))
	}
	if v := node.must(t, "cairn_meta_request_duration_seconds"); v == 0 {
		t.Error("the node counted no metadata call (it registers its disks)")
	}
	g := page(gw)
	for _, c := range []struct {
		name   string
		labels []string
	}{
		{"cairn_s3_requests_total", []string{"operation", "PutObject", "code", "200"}},
		{"cairn_client_shard_requests_total", []string{"op", "write", "result", "succeeded"}},
		{"cairn_meta_request_duration_seconds", []string{"op", "Txn"}}, // the manifest's commit
	} {
		if v := g.must(t, c.name, c.labels...); v == 0 {
			t.Errorf("the gateway's %s%v is 0 after a put", c.name, c.labels)
		}
	}
}

// lintExposition fails the test on any problem the client library's lint
// (promlint: the rules of promtool check metrics) finds in a /metrics page.
func lintExposition(t *testing.T, text string) {
	t.Helper()
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// seriesLines returns the sample lines of a metric in an exposition.
func seriesLines(text, name string) string {
	var out []string
	for l := range strings.Lines(text) {
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, ", ")
}
