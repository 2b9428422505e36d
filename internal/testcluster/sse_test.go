package testcluster_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"cairn/internal/testcluster"
)

func sseClient(srv *testcluster.Server) *s3.Client {
	return s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.S3), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
		Retryer:     aws.NopRetryer{},
	})
}

func randData(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 11))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// ssec is an SSE-C key in the SDK's form.
type ssec struct{ alg, key, md5 *string }

func newSSEC(b byte) ssec {
	k := bytes.Repeat([]byte{b}, 32)
	s := md5.Sum(k)
	return ssec{aws.String("AES256"), aws.String(base64.StdEncoding.EncodeToString(k)), aws.String(base64.StdEncoding.EncodeToString(s[:]))}
}

func s3Code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return fmt.Sprint(err)
}

// bodyReader returns a reader of GetObject bodies that fails t on errors.
func bodyReader(t *testing.T) func(out *s3.GetObjectOutput, err error) []byte {
	return func(out *s3.GetObjectOutput, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// shardFiles returns every shard file under the server's disk directories.
func shardFiles(t *testing.T, data string) []string {
	t.Helper()
	var out []string
	disks, _ := filepath.Glob(filepath.Join(data, "disk*", "shards"))
	for _, d := range disks {
		filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err == nil && e.Type().IsRegular() {
				out = append(out, path)
			}
			return nil
		})
	}
	if len(out) == 0 {
		t.Fatalf("no shard files under %s", data)
	}
	return out
}

// plaintextFound returns the share of 32-byte samples of data (one every
// 4099 bytes) found in some shard file on disk.
func plaintextFound(t *testing.T, files []string, data []byte) float64 {
	t.Helper()
	var contents [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		contents = append(contents, b)
	}
	found, samples := 0, 0
	for i := 0; i+32 <= len(data); i += 4099 {
		samples++
		for _, c := range contents {
			if bytes.Contains(c, data[i:i+32]) {
				found++
				break
			}
		}
	}
	return float64(found) / float64(samples)
}

// TestServerSSE: SSE-S3 and SSE-C objects through a real cairn server —
// PUT, HEAD, GET, ranged GET, copy, multipart; a wrong SSE-C key gets 403;
// no plaintext of an encrypted object is in any shard file, while that of
// an unencrypted one is (so the search would find it).
func TestServerSSE(t *testing.T) {
	srv := testcluster.StartServer(t, "", "--allow-insecure-ssec")
	c := sseClient(srv)
	ctx := context.Background()
	getBody := bodyReader(t)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("enc")}); err != nil {
		t.Fatal(err)
	}
	put := func(key string, data []byte, edit func(*s3.PutObjectInput)) *s3.PutObjectOutput {
		t.Helper()
		in := &s3.PutObjectInput{Bucket: aws.String("enc"), Key: aws.String(key), Body: bytes.NewReader(data)}
		if edit != nil {
			edit(in)
		}
		out, err := c.PutObject(ctx, in)
		if err != nil {
			t.Fatalf("PUT %s: %v", key, err)
		}
		return out
	}
	k1, k2 := newSSEC(1), newSSEC(2)
	plain, s3data, cdata := randData(1, 300<<10), randData(2, 300<<10), randData(3, 300<<10)
	put("plain", plain, nil)
	if out := put("s3", s3data, func(in *s3.PutObjectInput) { in.ServerSideEncryption = types.ServerSideEncryptionAes256 }); out.ServerSideEncryption != types.ServerSideEncryptionAes256 ||
		aws.ToString(out.ETag) != fmt.Sprintf(`"%x"`, md5.Sum(s3data)) {
		t.Fatalf("SSE-S3 PUT: %q %s", out.ServerSideEncryption, aws.ToString(out.ETag))
	}
	if out := put("c", cdata, func(in *s3.PutObjectInput) {
		in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = k1.alg, k1.key, k1.md5
	}); aws.ToString(out.SSECustomerKeyMD5) != *k1.md5 {
		t.Fatalf("SSE-C PUT echoes key MD5 %q", aws.ToString(out.SSECustomerKeyMD5))
	}

	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("enc"), Key: aws.String("s3")})
	if err != nil || head.ServerSideEncryption != types.ServerSideEncryptionAes256 || aws.ToInt64(head.ContentLength) != int64(len(s3data)) {
		t.Fatalf("SSE-S3 HEAD: %v", err)
	}
	if got := getBody(c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("enc"), Key: aws.String("s3")})); !bytes.Equal(got, s3data) {
		t.Fatal("SSE-S3 GET: wrong bytes")
	}
	if got := getBody(c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("enc"), Key: aws.String("s3"), Range: aws.String("bytes=65000-200000")})); !bytes.Equal(got, s3data[65000:200001]) {
		t.Fatal("SSE-S3 ranged GET: wrong bytes")
	}
	getC := func(k ssec, rng *string) (*s3.GetObjectOutput, error) {
		return c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("enc"), Key: aws.String("c"), Range: rng,
			SSECustomerAlgorithm: k.alg, SSECustomerKey: k.key, SSECustomerKeyMD5: k.md5})
	}
	if got := getBody(getC(k1, nil)); !bytes.Equal(got, cdata) {
		t.Fatal("SSE-C GET: wrong bytes")
	}
	if got := getBody(getC(k1, aws.String("bytes=-1000"))); !bytes.Equal(got, cdata[len(cdata)-1000:]) {
		t.Fatal("SSE-C ranged GET: wrong bytes")
	}
	if _, err := getC(k2, nil); s3Code(err) != "AccessDenied" {
		t.Fatalf("SSE-C GET with the wrong key: %v, want AccessDenied", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("enc"), Key: aws.String("c"),
		SSECustomerAlgorithm: k1.alg, SSECustomerKey: k1.key, SSECustomerKeyMD5: k1.md5}); err != nil {
		t.Fatalf("SSE-C HEAD: %v", err)
	}
	// Copy: the SSE-C object to another key under SSE-C with a new key.
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("enc"), Key: aws.String("c2"), CopySource: aws.String("enc/c"),
		CopySourceSSECustomerAlgorithm: k1.alg, CopySourceSSECustomerKey: k1.key, CopySourceSSECustomerKeyMD5: k1.md5,
		SSECustomerAlgorithm: k2.alg, SSECustomerKey: k2.key, SSECustomerKeyMD5: k2.md5}); err != nil {
		t.Fatalf("copy: %v", err)
	}
	if got := getBody(c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("enc"), Key: aws.String("c2"),
		SSECustomerAlgorithm: k2.alg, SSECustomerKey: k2.key, SSECustomerKeyMD5: k2.md5})); !bytes.Equal(got, cdata) {
		t.Fatal("copied SSE-C object: wrong bytes")
	}
	// Multipart SSE-S3: a 5 MiB part and a small one.
	mp := randData(4, 5<<20+12345)
	u, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("enc"), Key: aws.String("mp"), ServerSideEncryption: types.ServerSideEncryptionAes256})
	if err != nil {
		t.Fatal(err)
	}
	var parts []types.CompletedPart
	for i, cut := range [][2]int{{0, 5 << 20}, {5 << 20, len(mp)}} {
		p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("enc"), Key: aws.String("mp"), UploadId: u.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(mp[cut[0]:cut[1]])})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: p.ETag})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("enc"), Key: aws.String("mp"), UploadId: u.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	if got := getBody(c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("enc"), Key: aws.String("mp"), Range: aws.String(fmt.Sprintf("bytes=%d-", 5<<20-100))})); !bytes.Equal(got, mp[5<<20-100:]) {
		t.Fatal("multipart ranged GET across the parts: wrong bytes")
	}

	files := shardFiles(t, srv.Data)
	if f := plaintextFound(t, files, plain); f < 0.9 {
		t.Fatalf("only %.0f%% of the unencrypted object's samples found on disk: the search does not work", 100*f)
	}
	for name, data := range map[string][]byte{"sse-s3": s3data, "sse-c": cdata, "multipart": mp} {
		if f := plaintextFound(t, files, data); f > 0 {
			t.Errorf("%s object: %.1f%% of its plaintext samples are in shard files", name, 100*f)
		}
	}
}

// TestServerSSERotation: rotate the master key, re-seal, drop the old
// key from the file and restart: the object still reads, so its data key
// really was re-sealed (the data was not rewritten: same ETag and version).
func TestServerSSERotation(t *testing.T) {
	srv := testcluster.StartServer(t, "")
	c := sseClient(srv)
	ctx := context.Background()
	getBody := bodyReader(t)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("rot")}); err != nil {
		t.Fatal(err)
	}
	data := randData(5, 200<<10)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("rot"), Key: aws.String("o"), Body: bytes.NewReader(data),
		ServerSideEncryption: types.ServerSideEncryptionAes256}); err != nil {
		t.Fatal(err)
	}
	kf := filepath.Join(srv.Data, "kms.json")
	old := readKeyFile(t, kf)
	out, err := exec.Command(testcluster.Binary(t), "admin", "keys", "rotate", "--kms-key-file", kf).CombinedOutput()
	if err != nil {
		t.Fatalf("rotate: %v\n%s", err, out)
	}
	rotated := readKeyFile(t, kf)
	if rotated.Current == old.Current || len(rotated.Keys) != 2 {
		t.Fatalf("after rotate: current %s (was %s), %d keys", rotated.Current, old.Current, len(rotated.Keys))
	}
	// SIGHUP: the server reloads the key file, and seals new objects with
	// the new current key.
	if err := srv.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	hup := time.Now()
	deadline := hup.Add(10 * time.Second)
	for {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("rot"), Key: aws.String("new"), Body: bytes.NewReader(data),
			ServerSideEncryption: types.ServerSideEncryptionAes256}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(srv.CLI(t, "stat", "rot/new"), "master key "+rotated.Current) {
			t.Logf("new objects sealed with the new key %v after SIGHUP", time.Since(hup))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("after SIGHUP, new objects are still sealed with the old master key")
		}
		// real time: a retry pause while the real server reloads its key file.
		time.Sleep(50 * time.Millisecond)
	}
	if out := srv.CLI(t, "admin", "keys", "reseal", "--kms-key-file", kf); !strings.Contains(out, "2 SSE-S3 objects, 1 re-sealed") {
		t.Fatalf("reseal:\n%s", out)
	}
	if out := srv.CLI(t, "admin", "keys", "reseal", "--kms-key-file", kf); !strings.Contains(out, "2 SSE-S3 objects, 0 re-sealed") {
		t.Fatalf("reseal again:\n%s", out)
	}
	delete(rotated.Keys, old.Current)
	b, _ := json.Marshal(rotated)
	if err := os.WriteFile(kf, b, 0o600); err != nil {
		t.Fatal(err)
	}
	srv.Restart(t)
	c = sseClient(srv)
	for _, key := range []string{"o", "new"} {
		if got := getBody(c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("rot"), Key: aws.String(key)})); !bytes.Equal(got, data) {
			t.Fatalf("%s after rotation and restart without the old key: wrong bytes", key)
		}
	}
}

type keyFile struct {
	Current string            `json:"current"`
	Keys    map[string]string `json:"keys"`
}

func readKeyFile(t *testing.T, path string) keyFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var k keyFile
	if err := json.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	return k
}

// TestServerSSECorruptShards: shards of an encrypted object changed on
// disk. One bad shard is read around; more than the code tolerates fails
// the GET cleanly; a change that also fixes the volume's block CRC (so the
// node serves it as good) fails authentication once decoded, and the
// reader reads around that shard too — never plaintext garbage.
func TestServerSSECorruptShards(t *testing.T) {
	srv := testcluster.StartServer(t, "")
	c := sseClient(srv)
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bad")}); err != nil {
		t.Fatal(err)
	}
	data := randData(6, 300<<10) // one stripe of rs-4-2: six shard files
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bad"), Key: aws.String("o"), Body: bytes.NewReader(data),
		ServerSideEncryption: types.ServerSideEncryptionAes256}); err != nil {
		t.Fatal(err)
	}
	shards := map[int]string{} // shard index → file
	for _, f := range shardFiles(t, srv.Data) {
		var idx int
		if _, err := fmt.Sscanf(filepath.Ext(f), ".%d", &idx); err == nil {
			shards[idx] = f
		}
	}
	if len(shards) != 6 {
		t.Fatalf("%d shard files, want 6", len(shards))
	}
	get := func() ([]byte, error) {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bad"), Key: aws.String("o")})
		if err != nil {
			return nil, err
		}
		defer out.Body.Close()
		return io.ReadAll(out.Body)
	}
	flip := func(path string, off int64, fixCRC bool) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b := []byte{0}
		f.ReadAt(b, off)
		b[0] ^= 0x40
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
		if fixCRC { // the first volume block: its data, then its CRC-32C (docs/design/volume.md)
			st, _ := f.Stat()
			n := min(st.Size()-4-32, 64<<10)
			blk := make([]byte, n)
			f.ReadAt(blk, 0)
			var crc [4]byte
			binary.LittleEndian.PutUint32(crc[:], crc32.Checksum(blk, crc32.MakeTable(crc32.Castagnoli)))
			if _, err := f.WriteAt(crc[:], n); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A change behind the node's checksum: decoded into the ciphertext,
	// it fails authentication, and the reader reads around the shard.
	flip(shards[0], 10, true)
	got, err := get()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("a shard changed behind its checksum: %d bytes, err %v", len(got), err)
	}
	flip(shards[0], 10, true) // undo
	// One shard corrupt (the node's CRC catches it): read around.
	flip(shards[1], 3, false)
	if got, err := get(); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("one corrupt shard: %v", err)
	}
	// Three corrupt shards, more than rs-4-2 tolerates: the GET fails.
	flip(shards[2], 3, false)
	flip(shards[4], 3, false)
	got, err = get()
	if err == nil {
		t.Fatalf("three corrupt shards: GET succeeded with %d bytes", len(got))
	}
	t.Logf("three corrupt shards: %v", err)
	if len(got) > 0 {
		t.Fatalf("three corrupt shards: %d bytes returned", len(got))
	}
}

// TestServerCLIEncrypt: cairn put --encrypt in direct mode, with the
// server's key file: the shards hold no plaintext, cairn get and the S3
// gateway both read it, and cairn get without the key file cannot.
func TestServerCLIEncrypt(t *testing.T) {
	srv := testcluster.StartServer(t, "")
	kf := filepath.Join(srv.Data, "kms.json")
	srv.CLI(t, "mb", "cli")
	dir := t.TempDir()
	data := randData(7, 150<<10)
	in := filepath.Join(dir, "in")
	if err := os.WriteFile(in, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := srv.CLI(t, "put", "--encrypt", "--kms-key-file", kf, in, "cli/obj"); !strings.Contains(out, "encrypted (sse-s3)") {
		t.Fatalf("put --encrypt:\n%s", out)
	}
	if out, err := srv.TryCLI(t.Context(), "put", "--encrypt", in, "cli/x"); err == nil {
		t.Fatalf("put --encrypt without a key file succeeded:\n%s", out)
	}
	if f := plaintextFound(t, shardFiles(t, srv.Data), data); f > 0 {
		t.Fatalf("%.1f%% of the plaintext samples are in shard files", 100*f)
	}
	got := filepath.Join(dir, "got")
	srv.CLI(t, "get", "--kms-key-file", kf, "cli/obj", got)
	if b, err := os.ReadFile(got); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("cairn get: %v", err)
	}
	if out, err := srv.TryCLI(t.Context(), "get", "cli/obj", filepath.Join(dir, "nokey")); err == nil {
		t.Fatalf("get without the key file succeeded:\n%s", out)
	}
	c := sseClient(srv)
	out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String("cli"), Key: aws.String("obj")})
	if b := bodyReader(t)(out, err); !bytes.Equal(b, data) || out.ServerSideEncryption != types.ServerSideEncryptionAes256 {
		t.Fatal("the gateway reads the CLI's encrypted object wrongly")
	}
}

// TestServerBenchSSE: cairn bench put/get --sse time both modes in one
// run and report the ratio (the speed itself is the benchmark's to
// measure, not this test's).
func TestServerBenchSSE(t *testing.T) {
	srv := testcluster.StartServer(t, "")
	for _, op := range []string{"put", "get"} {
		out := srv.CLI(t, "bench", op, "--sse", "--json", "--size", "2MiB", "--runs", "1", "--warmup", "0")
		var res struct {
			BytesPerS    float64   `json:"bytes_per_s"`
			SSEBytesPerS float64   `json:"sse_bytes_per_s"`
			SSERuns      []float64 `json:"sse_runs_bytes_per_s"`
			SSERatio     float64   `json:"sse_ratio"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &res); err != nil {
			t.Fatalf("bench %s --sse: %v\n%s", op, err, out)
		}
		if res.SSEBytesPerS <= 0 || len(res.SSERuns) != 1 || res.SSERatio != res.SSEBytesPerS/res.BytesPerS {
			t.Fatalf("bench %s --sse: %+v", op, res)
		}
	}
	if out := srv.CLI(t, "ls", "cairn-bench"); strings.TrimSpace(out) != "" {
		t.Fatalf("bench objects left behind:\n%s", out)
	}
}
