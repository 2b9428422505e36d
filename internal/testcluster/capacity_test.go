package testcluster_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"cairn"
	"cairn/client"
	"cairn/codec/all"
	"cairn/internal/testcluster"
)

// serverDirect is a library client of a `cairn server` (from its
// client.conf) with the client's default settings, as the server's own.
func serverDirect(t *testing.T, s *testcluster.Server) *direct {
	raw, err := os.ReadFile(s.Conf)
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Meta   []string `json:"meta"`
		Secret string   `json:"secret"`
	}
	if err := json.Unmarshal(raw, &conf); err != nil {
		t.Fatal(err)
	}
	return newDirect(t, conf.Meta, conf.Secret, client.Config{})
}

// shardBytes walks the disk directories of a server and returns the bytes
// of its shard files (shards/, not tmp/) by disk directory and by version
// (the part of a file name before the dot), and the total.
func shardBytes(t *testing.T, data string) (byDisk, byVersion map[string]int64, files map[string]int64, total int64) {
	byDisk, byVersion, files = map[string]int64{}, map[string]int64{}, map[string]int64{}
	dirs, err := filepath.Glob(filepath.Join(data, "disk*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no disk directories under %s: %v", data, err)
	}
	for _, dir := range dirs {
		disk := filepath.Base(dir)
		err := filepath.WalkDir(filepath.Join(dir, "shards"), func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			info, err := e.Info()
			if err != nil {
				return err
			}
			version, _, _ := strings.Cut(e.Name(), ".")
			byDisk[disk] += info.Size()
			files[disk]++
			byVersion[version] += info.Size()
			total += info.Size()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return byDisk, byVersion, files, total
}

// identities reads the identity every shard file under the disk
// directories of data records (docs/design/volume.md, "Shard identity"),
// by "<disk dir>/<name>", and fails the test for a file without one: every
// writer of a fresh cluster records it.
func identities(t *testing.T, data string) map[string]cairn.ShardIdentity {
	t.Helper()
	out := map[string]cairn.ShardIdentity{}
	dirs, _ := filepath.Glob(filepath.Join(data, "disk*"))
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(dir, "shards"), func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			foot := b[len(b)-32:]
			format, n := binary.LittleEndian.Uint16(foot[8:]), int(binary.LittleEndian.Uint16(foot[10:]))
			if format != 2 || n == 0 || n > len(b)-32 {
				t.Errorf("%s: shard file of format %d with an identity of %d bytes", p, format, n)
				return nil
			}
			id, err := cairn.DecodeIdentity(b[len(b)-32-n : len(b)-32])
			if err != nil || id.Name() != e.Name() {
				t.Errorf("%s: identity %+v: %v", p, id, err)
			}
			out[filepath.Base(dir)+"/"+e.Name()] = id
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// checkIdentities checks that every shard file of m records the identity
// m derives for it (the PUT's, a part's, a copy's).
func checkIdentities(t *testing.T, ids map[string]cairn.ShardIdentity, m *cairn.Manifest) {
	t.Helper()
	check := func(part int, version string, l cairn.Layout) {
		for i, s := range l.Shards {
			row := cairn.RowOf(l.Shards, i)
			want, err := m.IdentityOf(part, row)
			if err != nil {
				t.Fatal(err)
			}
			dir := string(s.Disk[strings.IndexByte(string(s.Disk), '/')+1:])
			if got, ok := ids[dir+"/"+cairn.ShardName(version, row)]; !ok || got != want {
				t.Errorf("%s/%s part %d shard %d on %s: identity %+v, the manifest says %+v", m.Bucket, m.Key, part, i, s.Disk, got, want)
			}
		}
	}
	check(0, m.Version, m.Layout)
	for _, p := range m.Parts {
		check(p.Number, p.Version, p.Layout)
	}
}

// TestStoredBytesAtExpansion is the capacity acceptance test: for every
// policy and sizes from 0 B to 33 MiB, and multipart objects of 5 MiB
// parts, the shard files on disk (block CRCs and footers included) take
// at most the policy's expansion × the object's size × 1.01, plus a fixed
// allowance per object (per part of a multipart object):
//
//	N·(32 + 4 + multiple   a footer, a partial block's CRC and the last
//	   + 256)              block's alignment per shard file, and its identity
//	                       (docs/design/volume.md, "Shard identity": about
//	                       150–200 bytes with this test's short names);
//	+ (t+1 − N/K)·16 KiB   for an object stored as t+1 copies (at most
//	                       16 KiB: client.DefaultSmallObject).
//
// It prints the table, with what the shard files took before the last
// stripe was sized to its data (padded to 1 MiB blocks).
func TestStoredBytesAtExpansion(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 400 MiB of shards")
	}
	s := testcluster.StartServer(t, "", "--disks", "16")
	d := serverDirect(t, s)
	ctx := t.Context()
	const mib = 1 << 20
	sizes := []int64{0, 1, 4 << 10, mib - 1, mib + 1, 9 * mib / 2, 33 * mib}
	parts := []int64{5 * mib, 5 * mib, 5 * mib, 5 * mib / 2} // multipart: 17.5 MiB
	type row struct {
		policy, what         string
		versions             []string // of the object, or of each part
		logical, stored, old int64
		bound                int64
	}
	var rows []row
	for _, policy := range []string{"rs-4-2", "rs-10-4", "lrc-12-2-2", "clay-4-2-5", "rep-3"} {
		bucket := "cap-" + strings.ReplaceAll(policy, "-", "")
		s.CLI(t, "mb", bucket, "--policy", policy)
		code, err := all.New(policy)
		if err != nil {
			t.Fatal(err)
		}
		p := code.Params()
		n, k, mult := int64(p.N()), int64(p.K), int64(max(p.ShardMultiple, 1))
		expansion := float64(n) / float64(k)
		const identity = 256 // at most, with this test's names
		perLayout := n * (32 + 4 + mult + identity)
		smallExtra := int64(0)
		if m, err := d.data.Put(ctx, bucket, "probe", strings.NewReader("x"), client.PutOptions{Size: 1}); err != nil {
			t.Fatal(err)
		} else if m.Code != "" {
			var copies int64
			fmt.Sscanf(m.Code, "rep-%d", &copies)
			smallExtra = int64((float64(copies) - expansion) * client.DefaultSmallObject)
		}
		// padded is what the shard files of a layout of size bytes took when
		// the last stripe was padded to full 1 MiB blocks.
		padded := func(size int64) int64 {
			if size <= k*mib {
				return n * cairn.ShardFileBytes(max(mult, (size+k-1)/k+mult-1)/mult*mult)
			}
			stripes := (size + k*mib - 1) / (k * mib)
			return n * cairn.ShardFileBytes(stripes*mib)
		}
		for _, size := range sizes {
			m, err := d.data.Put(ctx, bucket, fmt.Sprintf("obj-%d", size), newPattern(size, uint64(size)), client.PutOptions{Size: size})
			if err != nil {
				t.Fatalf("%s: put %d: %v", policy, size, err)
			}
			rows = append(rows, row{policy: policy, what: fmt.Sprint(size), versions: []string{m.Version}, logical: size,
				bound: int64(expansion*float64(size)*1.01) + perLayout + smallExtra, old: padded(size)})
		}
		u, err := d.data.CreateUpload(ctx, bucket, "multipart", client.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var list []client.CompletePart
		var total, old int64
		for i, ps := range parts {
			p, err := d.data.UploadPart(ctx, bucket, "multipart", u.ID, i+1, newPattern(ps, uint64(i)), client.PutOptions{Size: ps})
			if err != nil {
				t.Fatal(err)
			}
			list = append(list, client.CompletePart{Number: p.Number, ETag: p.ETag})
			total += ps
			old += padded(ps)
		}
		m, err := d.data.CompleteUpload(ctx, bucket, "multipart", u.ID, list)
		if err != nil {
			t.Fatal(err)
		}
		r := row{policy: policy, what: "mp 5MiB×3+2.5MiB", logical: total,
			bound: int64(expansion*float64(total)*1.01) + int64(len(parts))*perLayout, old: old}
		for _, p := range m.Parts {
			r.versions = append(r.versions, p.Version)
		}
		rows = append(rows, r)
	}
	waitCleaned(t, d, time.Unix(0, 0)) // the files of cancelled shard streams
	_, byVersion, _, _ := shardBytes(t, s.Data)
	var table strings.Builder
	fmt.Fprintf(&table, "%-11s %-10s %12s %12s %7s %12s %7s %12s\n", "policy", "size", "logical", "stored", "ratio", "bound", "slack", "padded")
	for _, r := range rows {
		for _, v := range r.versions {
			r.stored += byVersion[v]
		}
		policy, what := r.policy, r.what
		if r.stored <= 0 {
			t.Errorf("%s %s: no shard files found", policy, what)
		}
		ratio := "-"
		if r.logical > 0 {
			ratio = fmt.Sprintf("%.3f", float64(r.stored)/float64(r.logical))
		}
		fmt.Fprintf(&table, "%-11s %-10s %12d %12d %7s %12d %7d %12d\n", policy, what, r.logical, r.stored, ratio, r.bound, r.bound-r.stored, r.old)
		if r.stored > r.bound {
			t.Errorf("%s %s: %d bytes stored, more than the bound %d", policy, what, r.stored, r.bound)
		}
	}
	t.Logf("stored bytes per object (shard files on disk):\n%s", table.String())
}

// TestUsageAgreesWithDisks: after a mixed S3 workload — PUTs small and
// large, overwrites, copies, multipart uploads (one completed, one
// aborted, one left in progress), deletes — on a real `cairn server`,
// the usage counters (`cairn admin du`) agree with a scan of the disk
// directories within 1 %, and the buckets' logical bytes with the
// listings exactly. Every shard file records the identity its manifest
// derives for it.
func TestUsageAgreesWithDisks(t *testing.T) {
	// No grace period: the overwritten and deleted objects' files go as
	// soon as the cleanup duty runs, which the test waits for.
	s := testcluster.StartServer(t, "", "--cleanup-grace", "0s", "--cleanup-every", "1s")
	d := serverDirect(t, s)
	ctx := context.Background()
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.S3), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""), Retryer: aws.NopRetryer{}})
	s.CLI(t, "mb", "alpha")
	s.CLI(t, "mb", "beta", "--policy", "rs-3-2")
	rng := rand.New(rand.NewPCG(25, 1))
	size := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return rng.Int64N(16 << 10) // small: stored as copies
		case 1:
			return 9 << 19 // 4.5 MiB
		default:
			return rng.Int64N(6 << 20)
		}
	}
	put := func(bucket, key string, n int64) {
		t.Helper()
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
			Body: newPattern(n, rng.Uint64()), ContentLength: aws.Int64(n)}); err != nil {
			t.Fatalf("put %s/%s: %v", bucket, key, err)
		}
	}
	for i := range 40 {
		bucket := []string{"alpha", "beta"}[i%2]
		put(bucket, fmt.Sprintf("k%02d", i), size())
	}
	for i := 0; i < 40; i += 3 { // overwrites
		put([]string{"alpha", "beta"}[i%2], fmt.Sprintf("k%02d", i), size())
	}
	for i := 1; i < 40; i += 5 { // copies, across buckets too
		if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("alpha"), Key: aws.String(fmt.Sprintf("copy%02d", i)),
			CopySource: aws.String(fmt.Sprintf("%s/k%02d", []string{"alpha", "beta"}[i%2], i))}); err != nil {
			t.Fatalf("copy %d: %v", i, err)
		}
	}
	multipart := func(bucket, key string, sizes []int64, finish string) {
		t.Helper()
		up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		var done []types.CompletedPart
		for i, n := range sizes {
			p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId,
				PartNumber: aws.Int32(int32(i + 1)), Body: newPattern(n, uint64(i)), ContentLength: aws.Int64(n)})
			if err != nil {
				t.Fatal(err)
			}
			done = append(done, types.CompletedPart{ETag: p.ETag, PartNumber: aws.Int32(int32(i + 1))})
		}
		switch finish {
		case "complete":
			_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key),
				UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
		case "abort":
			_, err = c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId})
		}
		if err != nil {
			t.Fatalf("%s %s/%s: %v", finish, bucket, key, err)
		}
	}
	multipart("alpha", "mp", []int64{5 << 20, 5 << 20, 1 << 20}, "complete")
	multipart("beta", "k04", []int64{5 << 20, 3 << 20}, "complete") // over an object
	multipart("beta", "aborted", []int64{5 << 20, 2 << 20}, "abort")
	multipart("alpha", "pending", []int64{5 << 20, 100}, "leave") // parts on disk, no object yet
	for i := 5; i < 40; i += 7 {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String([]string{"alpha", "beta"}[i%2]), Key: aws.String(fmt.Sprintf("k%02d", i))}); err != nil {
			t.Fatal(err)
		}
	}

	var du struct {
		Buckets []struct {
			Bucket  string `json:"bucket"`
			Objects int64  `json:"objects"`
			Logical int64  `json:"logical"`
			Stored  int64  `json:"stored"`
		} `json:"buckets"`
		Codes []struct {
			Code    string `json:"code"`
			Objects int64  `json:"objects"`
			Stored  int64  `json:"stored"`
		} `json:"codes"`
		Nodes []struct {
			Files int64 `json:"files"`
			Bytes int64 `json:"bytes"`
		} `json:"nodes"`
		Disks []struct {
			Disk  string `json:"disk"`
			Files int64  `json:"files"`
			Bytes int64  `json:"bytes"`
		} `json:"disks"`
	}
	waitCleaned(t, d, time.Now().Add(time.Hour))
	out := s.CLI(t, "admin", "du", "--json", "--disks")
	if err := json.Unmarshal([]byte(out), &du); err != nil {
		t.Fatalf("du --json: %v\n%s", err, out)
	}
	byDisk, _, files, scanned := shardBytes(t, s.Data)
	within := func(what string, counted, scan int64) {
		t.Helper()
		diff := float64(counted - scan)
		t.Logf("%s: counted %d bytes, the scan found %d (%+.4f %%)", what, counted, scan, 100*diff/float64(max(scan, 1)))
		if diff > 0.01*float64(scan) || -diff > 0.01*float64(scan) {
			t.Errorf("%s: counted %d bytes, the scan found %d: more than 1 %% apart", what, counted, scan)
		}
	}
	var disksTotal int64
	for _, dk := range du.Disks {
		dir := dk.Disk[strings.IndexByte(dk.Disk, '/')+1:] // node1/disk3 → disk3
		within("disk "+dk.Disk, dk.Bytes, byDisk[dir])
		if dk.Files != files[dir] {
			t.Errorf("disk %s: counted %d files, the scan found %d", dk.Disk, dk.Files, files[dir])
		}
		disksTotal += dk.Bytes
	}
	within("all disks", disksTotal, scanned)
	var nodesTotal int64
	for _, n := range du.Nodes {
		nodesTotal += n.Bytes
	}
	if nodesTotal != disksTotal {
		t.Errorf("nodes add up to %d bytes, disks to %d", nodesTotal, disksTotal)
	}
	// Objects (without the pending upload's parts, which are on the disks
	// but no object yet).
	_, byVersion, _, _ := shardBytes(t, s.Data)
	ids := identities(t, s.Data)
	var objectsScanned, bucketsStored, codesStored int64
	for _, b := range du.Buckets {
		list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b.Bucket)})
		if err != nil {
			t.Fatal(err)
		}
		var logical int64
		for _, o := range list.Contents {
			logical += aws.ToInt64(o.Size)
			m, err := d.meta.Manifest(ctx, b.Bucket, aws.ToString(o.Key))
			if err != nil {
				t.Fatal(err)
			}
			checkIdentities(t, ids, m)
			objectsScanned += byVersion[m.Version]
			for _, p := range m.Parts {
				objectsScanned += byVersion[p.Version]
			}
		}
		if b.Objects != int64(len(list.Contents)) || b.Logical != logical {
			t.Errorf("bucket %s: counted %d objects of %d bytes, the listing has %d of %d", b.Bucket, b.Objects, b.Logical, len(list.Contents), logical)
		}
		bucketsStored += b.Stored
		line := s.CLI(t, "admin", "du", b.Bucket)
		if !strings.Contains(line, b.Bucket) || !strings.Contains(line, fmt.Sprintf("%d", b.Objects)) {
			t.Errorf("admin du %s:\n%s", b.Bucket, line)
		}
	}
	for _, cd := range du.Codes {
		codesStored += cd.Stored
	}
	within("objects of every bucket", bucketsStored, objectsScanned)
	if codesStored != bucketsStored {
		t.Errorf("codes add up to %d stored bytes, buckets to %d", codesStored, bucketsStored)
	}
	if st := s.CLI(t, "admin", "status"); !strings.Contains(st, "usage: ") || !strings.Contains(st, "rs-3-2: ") {
		t.Errorf("admin status has no usage section:\n%s", st)
	}
	if _, err := s.TryCLI(ctx, "admin", "du", "nosuch"); err == nil {
		t.Error("admin du of a bucket that does not exist succeeded")
	}
	t.Logf("admin du:\n%s", s.CLI(t, "admin", "du"))
}

// waitCleaned waits until the cleanup queue holds no record due by until
// (docs/design/cleanup.md): the director's cleanup duty deleted their
// files.
func waitCleaned(t *testing.T, d *direct, until time.Time) {
	t.Helper()
	waitFor(t, time.Minute, "the cleanup queue to empty", func() bool {
		cs, err := d.meta.Cleanups(t.Context(), until, 1)
		return err == nil && len(cs) == 0
	})
}

// newPattern returns n pseudo-random bytes (seeded).
func newPattern(n int64, seed uint64) io.Reader {
	rng := rand.New(rand.NewPCG(seed, 99))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return bytes.NewReader(b)
}
