package metrics

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"cairn"
	"cairn/internal/vfs"
)

var discard = slog.New(slog.DiscardHandler)

// s3Stub answers like the S3 handler would: a PUT reads its body, a GET
// writes one, a missing key is 404.
func s3Stub(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPut:
		n, _ := io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Read", string(rune('0'+n%10)))
	case strings.HasSuffix(r.URL.Path, "/missing"):
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "<Error/>")
	default:
		io.WriteString(w, "hello, world")
	}
}

func opOf(r *http.Request) string {
	return map[string]string{"PUT": "PutObject", "GET": "GetObject"}[r.Method]
}

func TestS3Wrap(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewS3(reg)
	srv := httptest.NewServer(m.Wrap(http.HandlerFunc(s3Stub), opOf))
	defer srv.Close()
	do := func(method, path, body string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	do("PUT", "/b/k", strings.Repeat("x", 1000))
	do("GET", "/b/k", "")
	do("GET", "/b/k", "")
	do("GET", "/b/missing", "")
	for _, c := range []struct {
		op, code string
		want     float64
	}{{"PutObject", "200", 1}, {"GetObject", "200", 2}, {"GetObject", "404", 1}} {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(c.op, c.code)); got != c.want {
			t.Errorf("requests{%s,%s} = %v, want %v", c.op, c.code, got, c.want)
		}
	}
	if got := testutil.ToFloat64(m.bytesIn); got != 1000 {
		t.Errorf("bytes in = %v, want 1000", got)
	}
	if got, want := testutil.ToFloat64(m.bytesOut), float64(2*len("hello, world")+len("<Error/>")); got != want {
		t.Errorf("bytes out = %v, want %v", got, want)
	}
	if n := testutil.CollectAndCount(m.seconds); n != 2 {
		t.Errorf("%d latency series, want 2 (one per operation)", n)
	}
	if got := testutil.ToFloat64(m.inFlight); got != 0 {
		t.Errorf("in flight after the requests = %v", got)
	}
	lint(t, reg)
}

// A handler that flushes reaches the connection's writer through the
// counting writer (http.ResponseController and Unwrap).
func TestS3WrapFlush(t *testing.T) {
	m := NewS3(prometheus.NewRegistry())
	rec := httptest.NewRecorder()
	m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "part")
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush: %v", err)
		}
	}), opOf).ServeHTTP(rec, httptest.NewRequest("GET", "/b/k", nil))
	if !rec.Flushed {
		t.Fatal("the flush did not reach the writer")
	}
}

func TestBeside(t *testing.T) {
	reg := NewRegistry()
	h := Beside(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "s3") }), reg, discard)
	tests := []struct {
		name, target, auth string
		metrics            bool
	}{
		{"unsigned", "/metrics", "", true},
		{"signed", "/metrics", "AWS4-HMAC-SHA256 Credential=x", false},
		{"presigned v4", "/metrics?X-Amz-Signature=abc", "", false},
		{"presigned v2", "/metrics?Signature=abc", "", false},
		{"a key in bucket metrics", "/metrics/k", "", false},
		{"another path", "/other", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", tc.target, nil)
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			got := strings.Contains(rec.Body.String(), "go_goroutines")
			if got != tc.metrics || !got && rec.Body.String() != "s3" {
				t.Fatalf("served metrics %v, want %v: %q", got, tc.metrics, rec.Body.String()[:min(80, rec.Body.Len())])
			}
		})
	}
}

func TestMux(t *testing.T) {
	srv := httptest.NewServer(Mux(NewRegistry(), discard))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(Path); code != 200 || !strings.Contains(body, "process_cpu_seconds_total") {
		t.Fatalf("GET /metrics: %d %.200s", code, body)
	}
	if code, body := get(EtcdPath); code != 200 || strings.Contains(body, "go_goroutines") {
		t.Fatalf("GET %s: %d, or it repeats the runtime series: %.200s", EtcdPath, code, body)
	}
	if code, _ := get("/"); code != 404 {
		t.Fatalf("GET /: %d, want 404", code)
	}
}

func TestDisksFS(t *testing.T) {
	reg := prometheus.NewRegistry()
	d := NewDisks(reg)
	fsys := d.FS("n1/disk1", vfs.NewMem())
	if err := fsys.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Create("/d/f")
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 300))
	if _, ok := f.(vfs.WriterAt); !ok {
		t.Fatal("a mem file lost WriterAt under the decorator")
	}
	f.(vfs.WriterAt).WriteAt(make([]byte, 20), 10)
	f.Sync()
	if u, ok := f.(interface{ Unwrap() vfs.File }); !ok || u.Unwrap() == nil {
		t.Fatal("the file does not unwrap (vfs.StartWriteback)")
	}
	f.ReadAt(make([]byte, 100), 0)
	if _, err := f.ReadAt(make([]byte, 100), 250); !errors.Is(err, io.EOF) {
		t.Fatalf("read past the end: %v", err)
	}
	f.Close()
	if _, err := fsys.Open("/d/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open missing: %v", err)
	}
	fsys.Rename("/d/f", "/d/g")
	fsys.List("/d")
	fsys.Stat("/d/g")
	fsys.Remove("/d/g")
	check := func(c prometheus.Collector, want float64, what string) {
		t.Helper()
		if got := testutil.ToFloat64(c); got != want {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check(d.written.WithLabelValues("n1/disk1"), 320, "bytes written")
	check(d.read.WithLabelValues("n1/disk1"), 150, "bytes read") // 100 + the 50 before the end
	for op, want := range map[string]float64{"write": 2, "read": 2, "sync": 1, "open": 2, "rename": 1, "list": 1, "stat": 1, "remove": 1, "mkdir": 1} {
		check(d.ops.WithLabelValues("n1/disk1", op), want, op+" ops")
	}
	check(d.errs.WithLabelValues("n1/disk1", "open"), 1, "open errors")
	check(d.inFlight.WithLabelValues("n1/disk1"), 0, "in flight after every call returned")
	check(d.errs.WithLabelValues("n1/disk1", "read"), 0, "read errors (EOF is none)")
	if n := testutil.CollectAndCount(d.seconds); n != 3 {
		t.Errorf("%d latency series, want 3 (read, write, sync)", n)
	}
	lint(t, reg)
}

func TestRegisterDisks(t *testing.T) {
	reg := prometheus.NewRegistry()
	last := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	RegisterDisks(reg, func() []DiskReport {
		return []DiskReport{
			{Disk: "n1/disk1", Capacity: 1000, Free: 400, UsageOK: true, Healthy: true, CRCFailures: 2, Scrubbed: true,
				Scrub: cairn.ScrubProgress{PassBytes: 77, Found: 3, Collected: 5, LastPass: last}},
			{Disk: "n1/disk2"}, // vanished: no usage, not scrubbed
		}
	})
	want := `
# HELP cairn_disk_free_bytes Bytes of the disk's file system an unprivileged writer can still use.
# TYPE cairn_disk_free_bytes gauge
cairn_disk_free_bytes{disk="n1/disk1"} 400
# HELP cairn_disk_healthy 1 if the disk's volume is open, has no sticky fault and passed its last check; else 0.
# TYPE cairn_disk_healthy gauge
cairn_disk_healthy{disk="n1/disk1"} 1
cairn_disk_healthy{disk="n1/disk2"} 0
# HELP cairn_disk_crc_failures_total Reads that found a block, footer or identity of a shard corrupt (CRC or format) on the disk, since its volume was opened.
# TYPE cairn_disk_crc_failures_total counter
cairn_disk_crc_failures_total{disk="n1/disk1"} 2
cairn_disk_crc_failures_total{disk="n1/disk2"} 0
# HELP cairn_scrub_damage_found_total Damaged shards scrub found on the disk's volume, all passes.
# TYPE cairn_scrub_damage_found_total counter
cairn_scrub_damage_found_total{disk="n1/disk1"} 3
# HELP cairn_scrub_last_pass_end_timestamp_seconds When the last complete scrub pass of the disk ended (Unix time; 0: never).
# TYPE cairn_scrub_last_pass_end_timestamp_seconds gauge
cairn_scrub_last_pass_end_timestamp_seconds{disk="n1/disk1"} 1.7957808e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameDiskFree, NameDiskHealthy, NameDiskCRCFailures,
		NameScrubDamage, "cairn_scrub_last_pass_end_timestamp_seconds"); err != nil {
		t.Fatal(err)
	}
	lint(t, reg)
}

func TestRepair(t *testing.T) {
	reg := prometheus.NewRegistry()
	rep := RepairReport{Repaired: 4, Failed: 1, Bytes: 4096, Shards: 4, Schemes: map[string]int64{"push-sur": 3, "pull-rep": 1}}
	m := NewRepair(reg, func() RepairReport { return rep })
	if n := testutil.CollectAndCount(m.queue); n != 0 {
		t.Fatalf("%d queue series before the first count", n)
	}
	m.SetQueue(map[int]int{0: 2, 1: 5}, 7000)
	m.SetQueue(map[int]int{1: 1}, 100) // risk 0 emptied: 0, not gone
	want := `
# HELP cairn_repair_queue_tasks Stripes queued for repair, by risk: the shards a stripe can still lose (0: one more loss loses data). As the director last counted the queue.
# TYPE cairn_repair_queue_tasks gauge
cairn_repair_queue_tasks{risk="0"} 0
cairn_repair_queue_tasks{risk="1"} 1
# HELP cairn_repair_queue_bytes Bytes of the shards the queued repairs have left to rebuild, as the director last counted.
# TYPE cairn_repair_queue_bytes gauge
cairn_repair_queue_bytes 100
# HELP cairn_repair_rebuilt_bytes_total Bytes of shards rebuilt by repair.
# TYPE cairn_repair_rebuilt_bytes_total counter
cairn_repair_rebuilt_bytes_total 4096
# HELP cairn_repair_tasks_total Repair task attempts by result: repaired, dropped (object overwritten or deleted), failed (retried later).
# TYPE cairn_repair_tasks_total counter
cairn_repair_tasks_total{result="dropped"} 0
cairn_repair_tasks_total{result="failed"} 1
cairn_repair_tasks_total{result="repaired"} 4
# HELP cairn_repair_stripes_by_scheme_total Stripes repaired by the scheme chosen for them (push-sur, push-rep, pull-sur, pull-rep).
# TYPE cairn_repair_stripes_by_scheme_total counter
cairn_repair_stripes_by_scheme_total{scheme="pull-rep"} 1
cairn_repair_stripes_by_scheme_total{scheme="push-sur"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameRepairQueue, NameRepairQueueBytes, NameRepairBytes,
		NameRepairTasks, NameRepairSchemes); err != nil {
		t.Fatal(err)
	}
	// A first count of an empty queue reads 0 too.
	empty := NewRepair(prometheus.NewRegistry(), func() RepairReport { return RepairReport{} })
	empty.SetQueue(nil, 0)
	if got := testutil.ToFloat64(empty.queue.WithLabelValues("0")); got != 0 || testutil.CollectAndCount(empty.queue) != 1 {
		t.Fatalf("an empty first count: %v, %d series", got, testutil.CollectAndCount(empty.queue))
	}
	lint(t, reg)
}

func TestClient(t *testing.T) {
	reg := prometheus.NewRegistry()
	RegisterClient(reg, func() ClientReport {
		return ClientReport{Reads: ClientRequests{Succeeded: 12, Cancelled: 3, Hedged: 2}, Writes: ClientRequests{Succeeded: 6, Failed: 1, Replaced: 1},
			SpareRows: 1, Decodes: 2, DecodeTime: 1500 * time.Millisecond, SlowDisks: 1, SlowMarks: 3}
	})
	want := `
# HELP cairn_client_hedged_requests_total Shard requests started because others were too slow: hedged GETs, and PUT streams on a spare parity row.
# TYPE cairn_client_hedged_requests_total counter
cairn_client_hedged_requests_total{op="read"} 2
cairn_client_hedged_requests_total{op="write"} 0
# HELP cairn_client_decode_seconds_total Time spent decoding GET windows around missing data shards.
# TYPE cairn_client_decode_seconds_total counter
cairn_client_decode_seconds_total 1.5
# HELP cairn_client_spare_rows_total PUT shard streams started on a spare parity row, replacing a stream that held the write back.
# TYPE cairn_client_spare_rows_total counter
cairn_client_spare_rows_total 1
# HELP cairn_client_slow_disks Disks this process holds slow now, judged against their peers in its own PUTs and GETs: new stripes avoid them and reads ask them last.
# TYPE cairn_client_slow_disks gauge
cairn_client_slow_disks 1
# HELP cairn_client_slow_disk_marks_total Times a disk was marked slow (each mark holds it off for a while, doubling while it stays slow).
# TYPE cairn_client_slow_disk_marks_total counter
cairn_client_slow_disk_marks_total 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameClientHedged, NameClientSpares, "cairn_client_decode_seconds_total",
		NameClientSlowDisks, "cairn_client_slow_disk_marks_total"); err != nil {
		t.Fatal(err)
	}
	if got := testutil.CollectAndCount(reg, NameClientRequests); got != 6 {
		t.Fatalf("%d request series, want 6 (2 ops × 3 results)", got)
	}
	lint(t, reg)
}

func TestMeta(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMeta(reg)
	m.Observe("Range", 2*time.Millisecond, nil)
	m.Observe("Range", 3*time.Millisecond, errors.New("deadline"))
	m.Observe("Txn", time.Millisecond, nil)
	if got := testutil.ToFloat64(m.errs.WithLabelValues("Range")); got != 1 {
		t.Fatalf("Range errors = %v", got)
	}
	if got := testutil.ToFloat64(m.errs.WithLabelValues("Txn")); got != 0 {
		t.Fatalf("Txn errors = %v", got)
	}
	if n := testutil.CollectAndCount(m.seconds); n != 2 {
		t.Fatalf("%d latency series, want 2", n)
	}
	lint(t, reg)
}

func TestCleanupAndNode(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := NewCleanup(reg)
	c.Add(5, 2, 1, 0)
	c.Add(1, 1, 0, 1)
	inFlight := int64(3)
	RegisterNode(reg, func() int64 { return inFlight })
	want := `
# HELP cairn_cleanup_deleted_files_total Shard files of overwritten or deleted objects the cleanup deleted (or found gone).
# TYPE cairn_cleanup_deleted_files_total counter
cairn_cleanup_deleted_files_total 6
# HELP cairn_cleanup_records_total Cleanup records worked, by result: done (every file deleted), requeued (files left, tried again), dropped (given up after the attempts allowed).
# TYPE cairn_cleanup_records_total counter
cairn_cleanup_records_total{result="done"} 3
cairn_cleanup_records_total{result="dropped"} 1
cairn_cleanup_records_total{result="requeued"} 1
# HELP cairn_node_requests_in_flight Node protocol requests being served now (shard reads and writes, repair calls; not health checks): the node's queue depth.
# TYPE cairn_node_requests_in_flight gauge
cairn_node_requests_in_flight 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

func TestCluster(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := NewCluster(reg)
	c.SetDisks([]cairn.Disk{{ID: "n1/d1", State: cairn.DiskUp}, {ID: "n1/d2", State: cairn.DiskUp}})
	c.SetDisks([]cairn.Disk{{ID: "n1/d1", State: cairn.DiskUp}, {ID: "n1/d2", State: cairn.DiskDown}})
	want := `
# HELP cairn_cluster_disks Disks of the cluster map by state (up, suspect, down, draining, out), as the director last read it.
# TYPE cairn_cluster_disks gauge
cairn_cluster_disks{state="down"} 1
cairn_cluster_disks{state="draining"} 0
cairn_cluster_disks{state="out"} 0
cairn_cluster_disks{state="suspect"} 0
cairn_cluster_disks{state="up"} 1
# HELP cairn_cluster_disk_state 1 for each disk of the cluster map, labelled with its state, as the director last read it (docs/design/disks.md).
# TYPE cairn_cluster_disk_state gauge
cairn_cluster_disk_state{disk="n1/d1",state="up"} 1
cairn_cluster_disk_state{disk="n1/d2",state="down"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	lint(t, reg)
}

// Every series of a process, the runtime's included, passes the client
// library's lint (promlint, what promtool check metrics runs).
func TestLintAll(t *testing.T) {
	reg := NewRegistry()
	NewS3(reg)
	NewDisks(reg)
	RegisterDisks(reg, func() []DiskReport { return []DiskReport{{Disk: "n1/d1", UsageOK: true, Scrubbed: true}} })
	NewRepair(reg, func() RepairReport { return RepairReport{} }).SetQueue(nil, 0)
	RegisterClient(reg, func() ClientReport { return ClientReport{} })
	NewMeta(reg).Observe("Range", time.Millisecond, nil)
	NewCleanup(reg).Add(3, 1, 1, 0)
	RegisterNode(reg, func() int64 { return 2 })
	lint(t, reg)
}

func lint(t *testing.T, g prometheus.Gatherer) {
	t.Helper()
	problems, err := testutil.GatherAndLint(g)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// blockingFS's files block in Sync until release is closed.
type blockingFS struct {
	vfs.FS
	release chan struct{}
}

func (b blockingFS) Create(name string) (vfs.File, error) {
	f, err := b.FS.Create(name)
	return blockingFile{File: f, release: b.release}, err
}

type blockingFile struct {
	vfs.File
	release chan struct{}
}

func (f blockingFile) Sync() error {
	<-f.release
	return f.File.Sync()
}

// A sync under way counts as in flight until it returns.
func TestDiskInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := NewDisks(prometheus.NewRegistry())
		fsys := d.FS("n1/disk1", blockingFS{FS: vfs.NewMem(), release: make(chan struct{})})
		f, err := fsys.Create("/f")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() { done <- f.Sync() }()
		synctest.Wait()
		g := d.inFlight.WithLabelValues("n1/disk1")
		if v := testutil.ToFloat64(g); v != 1 {
			t.Fatalf("in flight during a sync: %v, want 1", v)
		}
		close(fsys.(*countedFS).FS.(blockingFS).release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if v := testutil.ToFloat64(g); v != 0 {
			t.Fatalf("in flight after the sync: %v, want 0", v)
		}
	})
}
