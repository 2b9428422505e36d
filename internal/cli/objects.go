package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"cairn"
	"cairn/client"
	"cairn/codec/all"
	"cairn/internal/cmdline"
	"cairn/internal/progress"
	"cairn/internal/units"
	"cairn/meta"
)

// DefaultPolicy is the policy of buckets made without --policy.
const DefaultPolicy = "rs-4-2"

// splitPath splits "BUCKET/KEY" (key required) or "BUCKET[/PREFIX]".
func splitPath(s string, needKey bool) (bucket, key string, err error) {
	bucket, key, _ = strings.Cut(s, "/")
	if err := cairn.ValidateBucketName(bucket); err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if needKey {
		if err := cairn.ValidateKey(key); err != nil {
			return "", "", fmt.Errorf("%w: %q: want BUCKET/KEY: %v", ErrUsage, s, err)
		}
	}
	return bucket, key, nil
}

// withCluster parses flags (the command's own plus --config), opens the
// cluster and runs fn.
func withCluster(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer, nargs int,
	fn func(ctx context.Context, cl *cluster, args []string) error) error {
	return withClusterArgs(ctx, fs, args, stdout, stderr, nargs, nargs, fn)
}

// withClusterArgs is withCluster taking between lo and hi arguments.
func withClusterArgs(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer, lo, hi int,
	fn func(ctx context.Context, cl *cluster, args []string) error) error {
	return withClusterOpts(ctx, fs, args, stdout, stderr, lo, hi, nil, fn)
}

// withClusterOpts is withClusterArgs connecting with the options opts
// returns once the flags are parsed (nil: the defaults).
func withClusterOpts(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer, lo, hi int,
	opts func() (clusterOptions, error), fn func(ctx context.Context, cl *cluster, args []string) error) error {
	load := configFlag(fs)
	if err := cmdline.ParseFlags(fs, args, stdout, stderr, true); err != nil {
		return err
	}
	if n := fs.NArg(); n < lo || n > hi {
		fs.SetOutput(stderr)
		fs.Usage()
		want := fmt.Sprint(lo)
		if hi > lo {
			want = fmt.Sprintf("%d to %d", lo, hi)
		}
		return fmt.Errorf("%w: %s takes %s argument(s), got %d", ErrUsage, fs.Name(), want, n)
	}
	o := clusterOptions{log: logger(stderr, false)}
	if opts != nil {
		var err error
		if o, err = opts(); err != nil {
			return err
		}
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	cl, err := openCluster(ctx, cfg, o)
	if err != nil {
		return err
	}
	defer cl.Close()
	return fn(ctx, cl, fs.Args())
}

func runMb(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn mb", flag.ContinueOnError)
	policy := fs.String("policy", DefaultPolicy, "default policy of the bucket's objects (rs-K-M, lrc-K-L-R, rep-N, clay-K-M-D, lt-K-X; append /read=all or /read=k+N to choose how reads ask for shards)")
	lock := fs.Bool("object-lock", false, "enable S3 Object Lock (and versioning, for good): docs/design/objectlock.md")
	cmdline.Usage(fs, "cairn mb BUCKET [--policy P] [--object-lock]", "Makes a bucket. Its policy is the code new objects get unless a put names another.")
	return withCluster(ctx, fs, args, stdout, stderr, 1, func(ctx context.Context, cl *cluster, args []string) error {
		if err := cairn.ValidateBucketName(args[0]); err != nil {
			return fmt.Errorf("%w: %v", ErrUsage, err)
		}
		if _, err := all.New(*policy); err != nil {
			return fmt.Errorf("%w: --policy: %v", ErrUsage, err)
		}
		b := cairn.Bucket{Name: args[0], Policy: *policy, Created: time.Now().UTC()}
		if *lock {
			b.ObjectLock, b.Versioning = &cairn.ObjectLock{}, cairn.VersioningEnabled
		}
		if err := cl.meta.CreateBucket(ctx, b); err != nil {
			return fmt.Errorf("making bucket %s: %w", args[0], err)
		}
		fmt.Fprintf(stdout, "bucket %s made (policy %s)\n", args[0], *policy)
		if *lock {
			fmt.Fprintf(stdout, "bucket %s has Object Lock and versioning\n", args[0])
		}
		return nil
	})
}

func runPut(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn put", flag.ContinueOnError)
	policy := fs.String("policy", "", "code for this object (default: the bucket's policy)")
	ctype := fs.String("content-type", "", "content type to store")
	encrypt := fs.Bool("encrypt", false, "encrypt the object before coding it (SSE-S3 with the master key of --kms-key-file)")
	keys := kmsFlag(fs)
	cmdline.Usage(fs, "cairn put [flags] FILE BUCKET/KEY", "Stores FILE (- for standard input) as BUCKET/KEY, erasure coded across the cluster's disks.\nThe object is visible only once every shard is durable. With --encrypt, shards hold only ciphertext;\ngateways with the same key file read it as an SSE-S3 object.")
	return withClusterOpts(ctx, fs, args, stdout, stderr, 2, 2, keys.options(stderr), func(ctx context.Context, cl *cluster, args []string) error {
		if *encrypt && *keys.file == "" {
			return fmt.Errorf("%w: --encrypt needs --kms-key-file", ErrUsage)
		}
		bucket, key, err := splitPath(args[1], true)
		if err != nil {
			return err
		}
		var r io.Reader = os.Stdin
		size := int64(-1)
		if args[0] != "-" {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
				size = st.Size()
			}
			r = f
		}
		bar := progress.New(stderr, "put "+args[1], size, progress.Bytes)
		opts := client.PutOptions{Policy: *policy, ContentType: *ctype, Size: size, Progress: bar.Set}
		if *encrypt {
			opts.SSE = &client.SSE{Scheme: cairn.SSES3}
		}
		m, err := cl.data.Put(ctx, bucket, key, r, opts)
		bar.Done()
		if err != nil {
			return fmt.Errorf("put %s: %w", args[1], err)
		}
		enc := ""
		if m.Encryption != nil {
			enc = ", encrypted (" + m.Encryption.Scheme + ")"
		}
		fmt.Fprintf(stdout, "%s/%s: %d bytes, %s, etag %s%s\n", bucket, key, m.ContentSize(), m.Policy, m.ETag, enc)
		return nil
	})
}

func runGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn get", flag.ContinueOnError)
	keys := kmsFlag(fs)
	cmdline.Usage(fs, "cairn get [flags] BUCKET/KEY FILE", "Reads BUCKET/KEY into FILE (- for standard output), decoding around lost or corrupt shards.\nAn SSE-S3 object needs --kms-key-file.")
	return withClusterOpts(ctx, fs, args, stdout, stderr, 2, 2, keys.options(stderr), func(ctx context.Context, cl *cluster, args []string) error {
		bucket, key, err := splitPath(args[0], true)
		if err != nil {
			return err
		}
		m, rc, err := cl.data.Get(ctx, bucket, key, 0, -1)
		if err != nil {
			return fmt.Errorf("get %s: %w", args[0], err)
		}
		defer rc.Close()
		var w io.Writer = stdout
		var f *os.File
		if args[1] != "-" {
			dir := filepath.Dir(args[1])
			f, err = os.CreateTemp(dir, "."+filepath.Base(args[1])+".part*")
			if err != nil {
				return err
			}
			defer os.Remove(f.Name()) // no-op after the rename
			defer f.Close()
			w = f
		}
		bar := progress.New(stderr, "get "+args[0], m.ContentSize(), progress.Bytes)
		n, err := io.Copy(w, &countingReader{r: rc, fn: bar.Set})
		bar.Done()
		if err != nil {
			return fmt.Errorf("get %s: %w", args[0], err)
		}
		if n != m.ContentSize() {
			return fmt.Errorf("get %s: read %d bytes, the object has %d", args[0], n, m.ContentSize())
		}
		if f != nil {
			if err := f.Sync(); err != nil {
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			return os.Rename(f.Name(), args[1])
		}
		return nil
	})
}

func runLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn ls", flag.ContinueOnError)
	cmdline.Usage(fs, "cairn ls [BUCKET[/PREFIX]]", "Lists buckets, or the objects of a bucket whose keys start with PREFIX.")
	return withClusterArgs(ctx, fs, args, stdout, stderr, 0, 1, func(ctx context.Context, cl *cluster, args []string) error {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		defer tw.Flush()
		if len(args) == 0 {
			bs, err := cl.meta.Buckets(ctx)
			if err != nil {
				return err
			}
			for _, b := range bs {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", b.Created.Format(time.DateTime), b.Policy, b.Name)
			}
			return nil
		}
		bucket, prefix, err := splitPath(args[0], false)
		if err != nil {
			return err
		}
		after := ""
		for {
			ms, more, err := cl.meta.ListObjects(ctx, bucket, prefix, after, meta.MaxPage)
			if err != nil {
				return fmt.Errorf("ls %s: %w", args[0], err)
			}
			for _, m := range ms {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", m.Created.Format(time.DateTime), m.Size, m.Policy, m.Key)
				after = m.Key
			}
			if !more {
				return nil
			}
		}
	})
}

func runRm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn rm", flag.ContinueOnError)
	cmdline.Usage(fs, "cairn rm BUCKET/KEY", "Deletes an object (its manifest at once, then its shards).")
	return withCluster(ctx, fs, args, stdout, stderr, 1, func(ctx context.Context, cl *cluster, args []string) error {
		bucket, key, err := splitPath(args[0], true)
		if err != nil {
			return err
		}
		if err := cl.data.Delete(ctx, bucket, key); err != nil {
			return fmt.Errorf("rm %s: %w", args[0], err)
		}
		return nil
	})
}

func runStat(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn stat", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the manifest as JSON")
	cmdline.Usage(fs, "cairn stat [--json] BUCKET/KEY", "Prints an object's manifest: its size, code, block size and where each shard lives, with its checksum.")
	return withCluster(ctx, fs, args, stdout, stderr, 1, func(ctx context.Context, cl *cluster, args []string) error {
		bucket, key, err := splitPath(args[0], true)
		if err != nil {
			return err
		}
		m, err := cl.data.Stat(ctx, bucket, key)
		if err != nil {
			return fmt.Errorf("stat %s: %w", args[0], err)
		}
		if *asJSON {
			return printJSON(stdout, m)
		}
		printManifest(stdout, m)
		return nil
	})
}

func printManifest(w io.Writer, m *cairn.Manifest) {
	fmt.Fprintf(w, "object   %s/%s\nversion  %s\nsize     %d bytes\netag     %s\ncreated  %s\npolicy   %s\n",
		m.Bucket, m.Key, m.Version, m.Size, m.ETag, m.Created.Format(time.RFC3339), m.Policy)
	if e := m.Encryption; e != nil {
		fmt.Fprintf(w, "encrypt  %s, %s, %d bytes of plaintext", e.Scheme, e.Cipher, e.Size)
		if e.KeyID != "" {
			fmt.Fprintf(w, ", master key %s", e.KeyID)
		}
		fmt.Fprintln(w)
	}
	if m.Code != "" {
		fmt.Fprintf(w, "stored   as %s (a small object: copies that survive what %s survives)\n", m.Code, m.Policy)
	}
	if m.ContentType != "" {
		fmt.Fprintf(w, "type     %s\n", m.ContentType)
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range m.UserMeta {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(w, "meta     %s: %s\n", k, m.UserMeta[k])
	}
	printShards := func(indent string, l cairn.Layout) {
		fmt.Fprintf(w, "%sblock    %s per shard per stripe\n%spg       %d\n%sshards:\n", indent, units.FormatSize(int64(l.BlockSize)), indent, l.PG, indent)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for i, s := range l.Shards {
			spare := ""
			if s.Row != 0 {
				spare = fmt.Sprintf("\tspare parity row %d (written in place of a slow or failed shard)", s.Row)
			}
			fmt.Fprintf(tw, "%s  %d\t%s\t%d bytes\tcrc32c %08x%s\n", indent, i, s.Disk, s.Size, s.CRC, spare)
		}
		tw.Flush()
	}
	printLayout := func(indent string, l cairn.Layout) {
		if len(l.Coded) == 0 {
			printShards(indent, l)
			return
		}
		fmt.Fprintf(w, "%sblock    %s per coded block\n%sstripes  %d (fountain-coded: blocks on whichever disks took them)\n", indent,
			units.FormatSize(int64(l.BlockSize)), indent, len(l.Coded))
		for i, st := range l.Coded {
			per := map[cairn.DiskID]int{}
			for _, b := range st.Blocks {
				per[b.Disk]++
			}
			disks := slices.Sorted(maps.Keys(per))
			var parts []string
			for _, d := range disks {
				parts = append(parts, fmt.Sprintf("%s:%d", d, per[d]))
			}
			fmt.Fprintf(w, "%s  %d  %s  %d blocks on %d disks: %s\n", indent, i, st.Version, len(st.Blocks), len(disks), strings.Join(parts, " "))
		}
	}
	if m.RAIDP != nil {
		printRAIDP(w, m.RAIDP)
		return
	}
	if len(m.Parts) == 0 {
		printLayout("", m.Layout)
		return
	}
	fmt.Fprintf(w, "parts    %d (multipart upload)\n", len(m.Parts))
	for _, p := range m.Parts {
		fmt.Fprintf(w, "part %d: %d bytes, version %s, etag %s\n", p.Number, p.Size, p.Version, p.ETag)
		printLayout("  ", p.Layout)
	}
}

type countingReader struct {
	r  io.Reader
	n  int64
	fn func(int64)
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	c.fn(c.n)
	return n, err
}
