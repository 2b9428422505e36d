package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"golang.org/x/sync/errgroup"

	"cairn/internal/cmdline"
	"cairn/internal/proc"
	"cairn/internal/progress"
	"cairn/internal/units"
)

const benchS3Help = `Usage: cairn bench s3 --endpoint URL [--pid PID] [flags]
       cairn bench s3 --slow-disk SPEC [flags]
       cairn bench s3 --local-io [flags]

Measures S3 throughput and latency the way S3 traffic comes: CLIENTS
clients, each putting objects of SIZE bytes one after the other for
DURATION, then getting random ones of them for DURATION. It prints MiB/s,
the p50/p99 latency and the server's CPU milliseconds per MiB of each
phase (the cost of a byte, which a busy machine's noise changes far less
than the throughput).

Against a running server (any S3 endpoint, cairn or a peer such as MinIO;
--pid names its process, for the CPU numbers):

  cairn bench s3 --endpoint http://127.0.0.1:9000 --access-key K --secret-key S --pid 4242

The other modes need no server: they start 'cairn server' (this binary,
in a temporary directory, with --disks directories) once per variant, run
the same workload on each, and print each ÷ the first.

With --slow-disk SPEC: every disk healthy ("healthy"), the first disk
slowed by SPEC (the options of 'cairn server --disk', e.g.
bw=10MiB,lat=20ms; "slow"), and the same with --keep-slow-disks, which
turns off the avoidance of slow disks ("slow-kept": what one slow disk
costs without it) — the question "does one slow disk set the pace?".

With --local-io: a server whose gateway reads and writes the node's
shards over the node protocol (--no-local-io: "node-protocol", as a
gateway in another process does) and one that does it in process
("in-process", the default) — what the loopback hop costs.

--policy picks the bucket's policy (it must fit on --disks disks).

The last line (with --json, the only line) is a JSON object with the
numbers of each run ("runs") and the ratios to the first run
("over_healthy", "over_node-protocol").

Flags:
`

// benchS3Config is one workload.
type benchS3Config struct {
	endpoint, access, secret string
	ca                       []byte // PEM bundle to trust, for https
	bucket, policy           string
	size                     int64
	clients                  int
	dur                      time.Duration
	bar                      *progress.Bar // counts the phases run
	// cpu, if set, is the server's CPU time so far (user and system), so
	// that each phase reports its CPU per MiB moved.
	cpu func() time.Duration
}

// benchS3Phase is the result of one phase (put or get) of a run.
type benchS3Phase struct {
	Requests  int     `json:"requests"`
	Errors    int     `json:"errors"`
	MiBPerS   float64 `json:"mib_per_s"`
	OpsPerS   float64 `json:"ops_per_s"`
	P50Millis float64 `json:"p50_ms"`
	P99Millis float64 `json:"p99_ms"`
	// CPUPerMiB is the server's CPU milliseconds per MiB the phase moved,
	// when its process is known (a server this command started, or
	// --pid): the cost of a byte, which a busy machine's noise changes
	// far less than the throughput.
	CPUPerMiB float64 `json:"server_cpu_ms_per_mib,omitempty"`
}

// benchS3Run is one run of the workload against one endpoint.
type benchS3Run struct {
	Name string `json:"name"`
	// Rounds is how many runs the numbers are the medians of (--rounds;
	// Requests and Errors are their sums).
	Rounds int          `json:"rounds,omitempty"`
	Put    benchS3Phase `json:"put"`
	Get    benchS3Phase `json:"get"`
	// SlowMarks is how often the server's data path marked a disk slow
	// (its cairn_client_slow_disk_marks_total), when this command started
	// it; -1 if it could not be read.
	SlowMarks float64 `json:"slow_disk_marks,omitempty"`
}

// scrapeCounter reads one unlabelled series of a Prometheus page at addr
// (HOST:PORT); -1 if it cannot.
func scrapeCounter(ctx context.Context, addr, name string) float64 {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil || addr == "" {
		return -1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f
			}
		}
	}
	return -1
}

func runBenchS3(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn bench s3", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "", "S3 endpoint URL of a running server (not with --slow-disk)")
	access := fs.String("access-key", os.Getenv("CAIRN_ACCESS_KEY"), "S3 access key (default $CAIRN_ACCESS_KEY)")
	secret := fs.String("secret-key", os.Getenv("CAIRN_SECRET_KEY"), "S3 secret key (default $CAIRN_SECRET_KEY)")
	caFile := fs.String("ca", "", "PEM file of the CA to trust for an https endpoint")
	bucket := fs.String("bucket", "cairn-bench-s3", "bucket to use (made if missing)")
	policy := fs.String("policy", "", "policy of the bucket, sent as x-cairn-policy when it is made (default: the server's default policy)")
	sizeFlag := fs.String("size", "1MiB", "object size")
	clients := fs.Int("clients", 8, "concurrent clients")
	dur := fs.Duration("duration", 10*time.Second, "how long each phase (put, then get) runs")
	slow := fs.String("slow-disk", "", "start three servers, healthy, with the first disk slowed by these 'cairn server --disk' options (e.g. bw=10MiB,lat=20ms), and that with --keep-slow-disks, and compare them")
	disks := fs.Int("disks", 8, "with --slow-disk: disk directories of each server")
	local := fs.Bool("local-io", false, "start two servers, one whose gateway reaches the node's shards over the node protocol (--no-local-io) and one that does it in process (the default), and compare them")
	pid := fs.Int("pid", 0, "with --endpoint: the server's process ID on this machine, to report its CPU time per MiB of each phase")
	rounds := fs.Int("rounds", 1, "with --slow-disk or --local-io: run the servers' workloads this many times in turn and report each number's median (a busy machine's noise spreads over all of them)")
	asJSON := fs.Bool("json", false, "print only the JSON summary")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), benchS3Help)
		fs.PrintDefaults()
	}
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, false); err != nil {
		return err
	}
	size, err := units.ParseSize(*sizeFlag)
	switch {
	case err != nil || size < 1:
		return fmt.Errorf("%w: --size: want a positive size", ErrUsage)
	case *clients < 1:
		return fmt.Errorf("%w: --clients: want at least 1", ErrUsage)
	case *dur <= 0:
		return fmt.Errorf("%w: --duration: want a positive duration", ErrUsage)
	case btoi(*endpoint != "")+btoi(*slow != "")+btoi(*local) != 1:
		return fmt.Errorf("%w: give one of --endpoint (a running server), --slow-disk or --local-io (start servers)", ErrUsage)
	case *pid != 0 && *endpoint == "":
		return fmt.Errorf("%w: --pid goes with --endpoint (the servers this command starts are measured anyway)", ErrUsage)
	case *pid < 0:
		return fmt.Errorf("%w: --pid: want a process ID", ErrUsage)
	case *endpoint == "" && *disks < 1:
		return fmt.Errorf("%w: --disks: want at least 1", ErrUsage)
	case *rounds < 1:
		return fmt.Errorf("%w: --rounds: want at least 1", ErrUsage)
	}
	cfg := benchS3Config{endpoint: *endpoint, access: *access, secret: *secret, bucket: *bucket, policy: *policy,
		size: size, clients: *clients, dur: *dur}
	if *caFile != "" {
		if cfg.ca, err = os.ReadFile(*caFile); err != nil {
			return fmt.Errorf("%w: --ca: %w", ErrUsage, err)
		}
	}
	type variant struct {
		name, spec string
		extra      []string
	}
	var variants []variant // the servers to start, the first the baseline
	switch {
	case *slow != "":
		if _, _, err := parseDiskSpec("x," + *slow); err != nil {
			return fmt.Errorf("%w: --slow-disk: %w", ErrUsage, err)
		}
		variants = []variant{{"healthy", "", nil}, {"slow", *slow, nil}, {"slow-kept", *slow, []string{"--keep-slow-disks"}}}
	case *local:
		variants = []variant{{"node-protocol", "", []string{"--no-local-io"}}, {"in-process", "", nil}}
	}
	if *pid != 0 {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", *pid)); err != nil {
			return fmt.Errorf("%w: --pid %d: no such process to measure on this machine", ErrUsage, *pid)
		}
		cfg.cpu = func() time.Duration { return proc.CPUTime(*pid) }
	}
	phases := 2 // put and get
	if len(variants) > 0 {
		phases *= len(variants) * *rounds
	}
	cfg.bar = progress.New(stderr, "bench s3", int64(phases), progress.Steps)
	defer cfg.bar.Done()
	say := func(format string, a ...any) {
		if !*asJSON {
			cfg.bar.Clear()
			fmt.Fprintf(stdout, format+"\n", a...)
		}
	}
	var runs []benchS3Run
	if len(variants) == 0 {
		if cfg.access == "" || cfg.secret == "" {
			return fmt.Errorf("%w: --access-key and --secret-key (or $CAIRN_ACCESS_KEY and $CAIRN_SECRET_KEY) are needed", ErrUsage)
		}
		r, err := benchS3Workload(ctx, cfg, say)
		if err != nil {
			return err
		}
		r.Name = cfg.endpoint
		runs = append(runs, r)
	} else {
		all := make([][]benchS3Run, len(variants))
		for round := range *rounds {
			for i, v := range variants {
				say("%s (round %d of %d): starting cairn server %s with %d disks%s", v.name, round+1, *rounds, strings.Join(v.extra, " "), *disks,
					map[bool]string{true: ", the first one " + v.spec}[v.spec != ""])
				r, err := benchS3Server(ctx, cfg, *disks, v.spec, v.extra, say)
				if err != nil {
					return fmt.Errorf("%s: %w", v.name, err)
				}
				r.Name = v.name
				all[i] = append(all[i], r)
			}
		}
		for _, rs := range all {
			runs = append(runs, medianRun(rs))
		}
	}
	cfg.bar.Done()
	return benchS3Report(stdout, runs, *asJSON)
}

// benchS3Server starts cairn server in a temporary directory, with the
// first of its disks slowed by spec (if any), runs the workload on it and
// stops it.
func benchS3Server(ctx context.Context, cfg benchS3Config, disks int, spec string, extra []string, say func(string, ...any)) (benchS3Run, error) {
	bin, err := os.Executable()
	if err != nil {
		return benchS3Run{}, err
	}
	dir, err := os.MkdirTemp("", "cairn-bench-s3-")
	if err != nil {
		return benchS3Run{}, err
	}
	defer os.RemoveAll(dir)
	cfg.access, cfg.secret = "bench", "bench-secret-key"
	args := append([]string{"server", "--data", dir, "--port-base", "0", "--access-key", cfg.access, "--secret-key", cfg.secret,
		"--metrics-addr", "127.0.0.1:0"}, extra...)
	for i := 1; i <= disks; i++ {
		d := filepath.Join(dir, fmt.Sprintf("disk%d", i))
		if i == 1 && spec != "" {
			d += "," + spec
		}
		args = append(args, "--disk", d)
	}
	p, err := proc.Start(ctx, proc.Config{Bin: bin, Args: args, DiscardOutput: true})
	if err != nil {
		return benchS3Run{}, err
	}
	defer func() {
		p.Signal(syscall.SIGTERM)
		select {
		case <-p.Done():
		case <-time.After(30 * time.Second):
			p.Kill()
		}
	}()
	cfg.endpoint = p.Addr(proc.S3)
	cfg.cpu = p.CPU
	r, err := benchS3Workload(ctx, cfg, say)
	if err != nil {
		return r, err
	}
	r.SlowMarks = scrapeCounter(ctx, p.Addr(proc.Metrics), "cairn_client_slow_disk_marks_total")
	return r, nil
}

// benchS3Workload runs the put phase and then the get phase against
// cfg.endpoint.
func benchS3Workload(ctx context.Context, cfg benchS3Config, say func(string, ...any)) (benchS3Run, error) {
	cl, err := benchS3Client(cfg)
	if err != nil {
		return benchS3Run{}, err
	}
	var opts []func(*s3.Options)
	if cfg.policy != "" {
		opts = append(opts, func(o *s3.Options) {
			o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue("X-Cairn-Policy", cfg.policy))
		})
	}
	_, err = cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &cfg.bucket}, opts...)
	if err != nil && !strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") {
		return benchS3Run{}, fmt.Errorf("making bucket %s: %w", cfg.bucket, err)
	}
	body := make([]byte, cfg.size)
	for i := range body {
		body[i] = byte(i*131 + i>>11)
	}
	var (
		mu   sync.Mutex
		keys []string
	)
	say("put: %d clients, %s objects, %v", cfg.clients, units.FormatSize(cfg.size), cfg.dur)
	cfg.bar.Describe("bench s3 put")
	put, err := runS3Phase(ctx, cfg, func(ctx context.Context, c, i int) error {
		key := fmt.Sprintf("c%d/o%d", c, i)
		_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: &cfg.bucket, Key: &key, Body: bytes.NewReader(body), ContentLength: aws.Int64(cfg.size)})
		if err == nil {
			mu.Lock()
			keys = append(keys, key)
			mu.Unlock()
		}
		return err
	})
	if err != nil {
		return benchS3Run{}, err
	}
	cfg.bar.Add(1)
	if len(keys) == 0 {
		return benchS3Run{}, errors.New("no PUT succeeded: nothing to get")
	}
	say("get: %d clients, random objects of the %d put, %v", cfg.clients, len(keys), cfg.dur)
	cfg.bar.Describe("bench s3 get")
	get, err := runS3Phase(ctx, cfg, func(ctx context.Context, c, i int) error {
		key := keys[rand.IntN(len(keys))]
		out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: &cfg.bucket, Key: &key})
		if err != nil {
			return err
		}
		defer out.Body.Close()
		n, err := io.Copy(io.Discard, out.Body)
		if err == nil && n != cfg.size {
			err = fmt.Errorf("GET %s: %d bytes, want %d", key, n, cfg.size)
		}
		return err
	})
	cfg.bar.Add(1)
	return benchS3Run{Put: put, Get: get}, err
}

// runS3Phase runs op on cfg.clients goroutines, each calling it one
// request after another (i counts a client's requests), for cfg.dur.
// A failed request is counted, not fatal, unless every one fails.
func runS3Phase(ctx context.Context, cfg benchS3Config, op func(ctx context.Context, client, i int) error) (benchS3Phase, error) {
	var cpu0 time.Duration
	if cfg.cpu != nil {
		cpu0 = cfg.cpu()
	}
	var (
		mu        sync.Mutex
		lat       []time.Duration
		errs      int
		firstErr  error
		start     = time.Now()
		deadline  = start.Add(cfg.dur)
		g, gctx   = errgroup.WithContext(ctx)
		perClient = time.Minute // one request's deadline: a stuck request is an error, not a hang
	)
	for c := range cfg.clients {
		g.Go(func() error {
			for i := 0; time.Now().Before(deadline) && gctx.Err() == nil; i++ {
				rctx, cancel := context.WithTimeout(gctx, perClient)
				t0 := time.Now()
				err := op(rctx, c, i)
				took := time.Since(t0)
				cancel()
				mu.Lock()
				if err != nil {
					errs++
					if firstErr == nil {
						firstErr = err
					}
				} else {
					lat = append(lat, took)
				}
				mu.Unlock()
			}
			return nil
		})
	}
	g.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return benchS3Phase{}, err
	}
	if len(lat) == 0 {
		return benchS3Phase{}, fmt.Errorf("every request failed, the first: %w", firstErr)
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
	n := len(lat)
	mib := float64(n) * float64(cfg.size) / (1 << 20)
	ph := benchS3Phase{Requests: n, Errors: errs, MiBPerS: mib / elapsed.Seconds(),
		OpsPerS: float64(n) / elapsed.Seconds(), P50Millis: q(0.50), P99Millis: q(0.99)}
	if cfg.cpu != nil {
		ph.CPUPerMiB = float64((cfg.cpu() - cpu0).Microseconds()) / 1000 / mib
	}
	return ph, nil
}

func benchS3Client(cfg benchS3Config) (*s3.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = cfg.clients * 2
	if cfg.ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.ca) {
			return nil, fmt.Errorf("%w: --ca: no PEM certificate in it", ErrUsage)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(cfg.endpoint),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(cfg.access, cfg.secret, ""),
		UsePathStyle: true,
		HTTPClient:   &http.Client{Transport: tr},
		// The body is in memory: sign it (no streaming trailer) and skip
		// the SDK's own checksums, so the client side costs little.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}), nil
}

// medianRun returns the median of each number of rs (runs of one
// variant), named as they are.
func medianRun(rs []benchS3Run) benchS3Run {
	med := func(f func(benchS3Run) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		if n := len(v); n%2 == 0 {
			return (v[n/2-1] + v[n/2]) / 2
		}
		return v[len(v)/2]
	}
	phase := func(p func(benchS3Run) benchS3Phase) benchS3Phase {
		out := benchS3Phase{
			MiBPerS:   med(func(r benchS3Run) float64 { return p(r).MiBPerS }),
			OpsPerS:   med(func(r benchS3Run) float64 { return p(r).OpsPerS }),
			P50Millis: med(func(r benchS3Run) float64 { return p(r).P50Millis }),
			P99Millis: med(func(r benchS3Run) float64 { return p(r).P99Millis }),
			CPUPerMiB: med(func(r benchS3Run) float64 { return p(r).CPUPerMiB }),
		}
		for _, r := range rs {
			out.Requests += p(r).Requests
			out.Errors += p(r).Errors
		}
		return out
	}
	return benchS3Run{Name: rs[0].Name, Rounds: len(rs),
		Put:       phase(func(r benchS3Run) benchS3Phase { return r.Put }),
		Get:       phase(func(r benchS3Run) benchS3Phase { return r.Get }),
		SlowMarks: med(func(r benchS3Run) float64 { return r.SlowMarks })}
}

func benchS3Report(stdout io.Writer, runs []benchS3Run, asJSON bool) error {
	summary := map[string]any{"runs": runs}
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	// ratios[i] compares runs[i] with runs[0], the healthy run (--slow-disk).
	ratios := map[string]map[string]float64{}
	for _, r := range runs[min(1, len(runs)):] {
		h := runs[0]
		ratios[r.Name] = map[string]float64{
			"put_mib_per_s": ratio(r.Put.MiBPerS, h.Put.MiBPerS), "put_p99": ratio(r.Put.P99Millis, h.Put.P99Millis),
			"get_mib_per_s": ratio(r.Get.MiBPerS, h.Get.MiBPerS), "get_p99": ratio(r.Get.P99Millis, h.Get.P99Millis),
			"put_cpu_per_mib": ratio(r.Put.CPUPerMiB, h.Put.CPUPerMiB), "get_cpu_per_mib": ratio(r.Get.CPUPerMiB, h.Get.CPUPerMiB),
		}
	}
	if len(ratios) > 0 {
		summary["over_"+runs[0].Name] = ratios
	}
	if !asJSON {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprint(tw, "run\tput MiB/s\tput p50 ms\tput p99 ms\tput CPU ms/MiB\tget MiB/s\tget p50 ms\tget p99 ms\tget CPU ms/MiB\terrors\tslow marks\n")
		for _, r := range runs {
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.2f\t%.1f\t%.1f\t%.1f\t%.2f\t%d\t%.0f\n", r.Name, r.Put.MiBPerS, r.Put.P50Millis, r.Put.P99Millis, r.Put.CPUPerMiB,
				r.Get.MiBPerS, r.Get.P50Millis, r.Get.P99Millis, r.Get.CPUPerMiB, r.Put.Errors+r.Get.Errors, r.SlowMarks)
		}
		for _, r := range runs[min(1, len(runs)):] {
			rt := ratios[r.Name]
			fmt.Fprintf(tw, "%s ÷ %s\t%.2f\t\t%.2f\t%.2f\t%.2f\t\t%.2f\t%.2f\t\t\n", r.Name, runs[0].Name, rt["put_mib_per_s"], rt["put_p99"], rt["put_cpu_per_mib"],
				rt["get_mib_per_s"], rt["get_p99"], rt["get_cpu_per_mib"])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	b, err := json.Marshal(summary)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, string(b))
	return err
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
