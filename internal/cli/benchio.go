package cli

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"cairn"
	"cairn/client"
	"cairn/codec/all"
	"cairn/crypt"
	"cairn/internal/progress"
	"cairn/internal/units"
)

const benchIOHelp = `Measures %s throughput of a running cluster from this machine, next to the
raw %s bandwidth of the cluster's disk directories measured in the same
run: the same number of bytes the object puts on disk (size × n/k), %s
files in every disk directory at once%s. Run it on the server's machine: it
reads the disk paths from the cluster map.

With --part-size the object is a multipart upload of parts of that size
(the last one shorter), uploaded one after the other, as S3 clients such
as rclone store large files (5 MiB parts by default).

The last line (with --json, the only line) is a JSON object with
bytes_per_s (object bytes per second), expansion (n/k), raw_bytes_per_s,
and the ratio bytes_per_s ÷ (raw_bytes_per_s ÷ expansion).

With --sse every run is timed twice, unencrypted and with SSE-S3 (in
alternating order), and the summary adds sse_bytes_per_s and sse_ratio,
the encrypted rate ÷ the unencrypted one (a throwaway master key is used
unless --kms-key-file names one).`

func runBenchPut(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runBenchIO(ctx, "put", args, stdout, stderr)
}

func runBenchGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runBenchIO(ctx, "get", args, stdout, stderr)
}

// benchIOResult is the summary line of bench put/get.
type benchIOResult struct {
	Op          string    `json:"op"`
	Policy      string    `json:"policy"`
	Size        int64     `json:"size"`
	PartSize    int64     `json:"part_size,omitempty"`
	Runs        int       `json:"runs"`
	BytesPerS   float64   `json:"bytes_per_s"`
	RunsPerS    []float64 `json:"runs_bytes_per_s"`
	Expansion   float64   `json:"expansion"`
	RawBytesPS  float64   `json:"raw_bytes_per_s"`
	VsRawPerExp float64   `json:"vs_raw_over_expansion"`
	Disks       int       `json:"disks"`
	// With --sse: the same runs with SSE-S3.
	SSEBytesPerS float64   `json:"sse_bytes_per_s,omitempty"`
	SSERunsPerS  []float64 `json:"sse_runs_bytes_per_s,omitempty"`
	SSERatio     float64   `json:"sse_ratio,omitempty"`
}

func runBenchIO(ctx context.Context, op string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn bench "+op, flag.ContinueOnError)
	sizeFlag := fs.String("size", "64MiB", "object size")
	partFlag := fs.String("part-size", "", "store the object as a multipart upload of parts of this size (default: one PUT)")
	policy := fs.String("policy", DefaultPolicy, "policy of the benchmark object")
	runs := fs.Int("runs", 3, "timed runs")
	warmup := fs.Int("warmup", 1, "untimed runs first (of the operation and of the raw measurement): connections, buffers and caches warm up")
	asJSON := fs.Bool("json", false, "print only the JSON summary")
	bucket := fs.String("bucket", "cairn-bench", "bucket to use (made if missing)")
	sse := fs.Bool("sse", false, "also time every run with SSE-S3 and report the encrypted ÷ unencrypted ratio")
	keyFile := fs.String("kms-key-file", "", "master key file for --sse (default: a throwaway key)")
	verb, files, extra := "write", "fsynced", ""
	if op == "get" {
		verb, files, extra = "read", "reading the", " (written first)"
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: cairn bench %s [--size SIZE] [--part-size SIZE] [--policy P] [--runs N] [--json] --config DIR/client.conf\n\n", op)
		fmt.Fprintf(fs.Output(), benchIOHelp, op, verb, files, extra)
		fmt.Fprintf(fs.Output(), "\n\nFlags:\n")
		fs.PrintDefaults()
	}
	opts := func() (clusterOptions, error) {
		o := clusterOptions{log: logger(stderr, false)}
		var err error
		switch {
		case *keyFile != "":
			if o.keys, err = loadKeyring(*keyFile); err != nil {
				return o, fmt.Errorf("%w: --kms-key-file: %w", ErrUsage, err)
			}
		case *sse:
			o.keys, err = crypt.NewKeyring(crand.Reader)
		}
		return o, err
	}
	return withClusterOpts(ctx, fs, args, stdout, stderr, 0, 0, opts, func(ctx context.Context, cl *cluster, _ []string) error {
		size, err := units.ParseSize(*sizeFlag)
		if err != nil || size < 1 {
			return fmt.Errorf("%w: --size: want a positive size", ErrUsage)
		}
		var partSize int64
		if *partFlag != "" {
			if partSize, err = units.ParseSize(*partFlag); err != nil || partSize < 1 {
				return fmt.Errorf("%w: --part-size: want a positive size", ErrUsage)
			}
		}
		code, err := all.New(*policy)
		if err != nil {
			return fmt.Errorf("%w: --policy: %v", ErrUsage, err)
		}
		if *runs < 1 || *warmup < 0 {
			return fmt.Errorf("%w: --runs must be at least 1 and --warmup at least 0", ErrUsage)
		}
		p := code.Params()
		expansion := float64(p.N()) / float64(p.K)
		if err := cl.meta.CreateBucket(ctx, cairn.Bucket{Name: *bucket, Policy: *policy, Created: time.Now().UTC()}); err != nil && !errors.Is(err, cairn.ErrExists) {
			return err
		}
		disks, err := cl.meta.Disks(ctx)
		if err != nil {
			return err
		}
		var dirs []string
		for _, d := range disks {
			if d.State.Writable() {
				dirs = append(dirs, d.Path)
			}
		}
		res := benchIOResult{Op: op, Policy: *policy, Size: size, PartSize: partSize, Runs: *runs, Expansion: expansion, Disks: len(dirs)}
		rawBytes := int64(float64(size) * expansion)
		modes := []bool{false}
		if *sse {
			modes = []bool{false, true}
		}
		// The bar counts the bytes of every PUT or GET, untimed ones
		// included: for get, the objects are written first.
		barTotal := size * int64(len(modes)) * int64(*warmup+*runs)
		if op == "get" {
			barTotal += size * int64(len(modes))
		}
		bar := progress.New(stderr, "bench "+op, barTotal, progress.Bytes)
		defer bar.Done()
		say := func(f string, a ...any) {
			if !*asJSON {
				bar.Clear()
				fmt.Fprintf(stdout, f, a...)
			}
		}
		key := "bench-object"
		// sseKey names the encrypted object of a run (--sse).
		sseKey := func(k string) string { return k + "-sse" }
		if op == "get" {
			if err := benchPut(ctx, cl.data, *bucket, key, *policy, size, partSize, false, bar); err != nil {
				return err
			}
			if *sse {
				if err := benchPut(ctx, cl.data, *bucket, sseKey(key), *policy, size, partSize, true, bar); err != nil {
					return err
				}
			}
		}
		var written []string
		defer func() {
			for _, k := range written {
				cl.data.Delete(context.WithoutCancel(ctx), *bucket, k)
			}
		}()
		once := func(r int, encrypted bool) error {
			if op == "put" {
				// A new key each run: the measurement is a PUT, not an
				// overwrite (which also deletes the old version's shards).
				// Deleted after the timed runs, not inside them.
				k := fmt.Sprintf("%s-%d", key, r)
				if encrypted {
					k = sseKey(k)
				}
				err := benchPut(ctx, cl.data, *bucket, k, *policy, size, partSize, encrypted, bar)
				if err == nil {
					written = append(written, k)
				}
				return err
			}
			k := key
			if encrypted {
				k = sseKey(k)
			}
			_, rc, err := cl.data.Get(ctx, *bucket, k, 0, -1)
			if err != nil {
				return err
			}
			defer rc.Close()
			n, err := io.Copy(io.Discard, barReader{rc, bar})
			if err != nil {
				return err
			}
			if n != size {
				return fmt.Errorf("read %d bytes of %d", n, size)
			}
			return nil
		}
		for r := range *warmup {
			for _, enc := range modes {
				if err := once(-1-r, enc); err != nil {
					return err
				}
			}
		}
		var total, sseTotal float64
		for r := range *runs {
			for i := range modes {
				enc := modes[(i+r)%len(modes)] // alternate which goes first
				start := time.Now()
				if err := once(r, enc); err != nil {
					return err
				}
				bps := float64(size) / time.Since(start).Seconds()
				what := ""
				if enc {
					res.SSERunsPerS = append(res.SSERunsPerS, bps)
					sseTotal += bps
					what = " with SSE-S3"
				} else {
					res.RunsPerS = append(res.RunsPerS, bps)
					total += bps
				}
				say("run %d: %s %s of %s%s in %s\n", r+1, op, units.FormatSize(size), *policy, what, units.FormatRate(bps))
			}
		}
		res.BytesPerS = total / float64(*runs)
		if *sse {
			res.SSEBytesPerS = sseTotal / float64(*runs)
			res.SSERatio = res.SSEBytesPerS / res.BytesPerS
			say("SSE-S3: %s, %.2f × the unencrypted rate\n", units.FormatRate(res.SSEBytesPerS), res.SSERatio)
		}
		if op == "get" {
			if err := cl.data.Delete(ctx, *bucket, key); err != nil {
				return err
			}
			if *sse {
				if err := cl.data.Delete(ctx, *bucket, sseKey(key)); err != nil {
					return err
				}
			}
		}
		bar.Done()
		raw, err := rawBandwidth(ctx, dirs, rawBytes, op == "get", *warmup, *runs)
		if err != nil {
			return fmt.Errorf("measuring the disk directories (run this on the server's machine): %w", err)
		}
		res.RawBytesPS = raw
		res.VsRawPerExp = res.BytesPerS / (raw / expansion)
		say("raw %s of %d disk directories: %s; %s reaches %.2f × raw ÷ expansion (%.2f)\n", verb, len(dirs),
			units.FormatRate(raw), op, res.VsRawPerExp, expansion)
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return nil
	})
}

// benchPut stores size pattern bytes as bucket/key: one PUT, or with
// partSize > 0 a multipart upload of parts of partSize bytes, one after
// the other; encrypted with SSE-S3 if sse. The bytes read go to bar.
func benchPut(ctx context.Context, c *client.Client, bucket, key, policy string, size, partSize int64, sse bool, bar *progress.Bar) error {
	var enc *client.SSE
	if sse {
		enc = &client.SSE{Scheme: cairn.SSES3}
	}
	if partSize <= 0 {
		_, err := c.Put(ctx, bucket, key, barReader{newPatternReader(size), bar}, client.PutOptions{Policy: policy, Size: size, SSE: enc})
		return err
	}
	u, err := c.CreateUpload(ctx, bucket, key, client.PutOptions{Policy: policy, SSE: enc})
	if err != nil {
		return err
	}
	var list []client.CompletePart
	for n, off := 1, int64(0); off < size; n, off = n+1, off+partSize {
		ps := min(partSize, size-off)
		p, err := c.UploadPart(ctx, bucket, key, u.ID, n, barReader{newPatternReader(ps), bar}, client.PutOptions{Size: ps})
		if err != nil {
			_ = c.AbortUpload(context.WithoutCancel(ctx), bucket, key, u.ID)
			return err
		}
		list = append(list, client.CompletePart{Number: p.Number, ETag: p.ETag})
	}
	_, err = c.CompleteUpload(ctx, bucket, key, u.ID, list)
	return err
}

// rawBandwidth writes total bytes spread over one file per directory, all
// at once, each fsynced, and returns bytes per second (mean of runs); with
// read it then times reading them back.
func rawBandwidth(ctx context.Context, dirs []string, total int64, read bool, warmup, runs int) (float64, error) {
	if len(dirs) == 0 {
		return 0, errors.New("no writable disks")
	}
	per := total / int64(len(dirs))
	paths := make([]string, len(dirs))
	for i, d := range dirs {
		paths[i] = filepath.Join(d, fmt.Sprintf(".cairn-bench-raw-%d", i))
	}
	defer func() {
		for _, p := range paths {
			os.Remove(p)
		}
	}()
	each := func(fn func(i int) error) error {
		var wg sync.WaitGroup
		errs := make([]error, len(paths))
		for i := range paths {
			wg.Go(func() { errs[i] = fn(i) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	write := func(i int) error {
		f, err := os.Create(paths[i])
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, newPatternReader(per)); err != nil {
			f.Close()
			return err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	var sum float64
	for r := range warmup + runs {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		start := time.Now()
		if err := each(write); err != nil {
			return 0, err
		}
		if read {
			start = time.Now()
			if err := each(func(i int) error {
				f, err := os.Open(paths[i])
				if err != nil {
					return err
				}
				defer f.Close()
				_, err = io.Copy(io.Discard, f)
				return err
			}); err != nil {
				return 0, err
			}
		}
		if r >= warmup {
			sum += float64(per*int64(len(paths))) / time.Since(start).Seconds()
		}
	}
	return sum / float64(runs), nil
}

// patternReader yields n pseudo-random bytes from a 4 MiB pattern (cheap:
// the benchmark measures storage, not random number generation).
type patternReader struct {
	left int64
	off  int
}

var (
	patternOnce sync.Once
	pattern     []byte
)

func newPatternReader(n int64) *patternReader {
	patternOnce.Do(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		pattern = make([]byte, 4<<20+1) // odd length: stripes do not repeat exactly
		for i := range pattern {
			pattern[i] = byte(rng.Uint32())
		}
	})
	return &patternReader{left: n}
}

func (p *patternReader) Read(b []byte) (int, error) {
	if p.left <= 0 {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), p.left)]
	n := 0
	for n < len(b) {
		c := copy(b[n:], pattern[p.off:])
		n += c
		p.off = (p.off + c) % len(pattern)
	}
	p.left -= int64(n)
	return n, nil
}

// barReader is r adding the bytes read to bar.
type barReader struct {
	r   io.Reader
	bar *progress.Bar
}

func (b barReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.bar.Add(int64(n))
	return n, err
}
