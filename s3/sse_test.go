package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"cairn"
)

// ssecKey is an SSE-C key as the SDK sends it: base64 of 32 bytes and of
// their MD5.
type ssecKey struct{ key, md5 string }

func newSSECKey(b byte) ssecKey {
	k := bytes.Repeat([]byte{b}, 32)
	s := md5.Sum(k)
	return ssecKey{base64.StdEncoding.EncodeToString(k), base64.StdEncoding.EncodeToString(s[:])}
}

// noPlaintext fails if a shard file holds 32 bytes in a row of data.
func (e *env) noPlaintext(t *testing.T, data []byte) {
	t.Helper()
	e.shards.Mu.Lock()
	defer e.shards.Mu.Unlock()
	for i := 0; i+32 <= len(data); i += 501 {
		for name, f := range e.shards.Files {
			if bytes.Contains(f, data[i:i+32]) {
				t.Fatalf("shard file %s holds plaintext", name)
			}
		}
	}
}

// bodyOf returns a reader of a GetObject's body that fails t on errors.
func bodyOf(t *testing.T) func(out *s3.GetObjectOutput, err error) []byte {
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

func TestSSES3(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	readBody := bodyOf(t)
	data := randBytes(20, 3*cairn.SegmentSize+777)
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: bytes.NewReader(data),
		ServerSideEncryption: types.ServerSideEncryptionAes256})
	if err != nil {
		t.Fatal(err)
	}
	if put.ServerSideEncryption != types.ServerSideEncryptionAes256 || aws.ToString(put.ETag) != `"`+md5hex(data)+`"` {
		t.Fatalf("PUT: encryption %q, ETag %s (want the plaintext's MD5 %s)", put.ServerSideEncryption, aws.ToString(put.ETag), md5hex(data))
	}
	e.noPlaintext(t, data)
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
	if err != nil || head.ServerSideEncryption != types.ServerSideEncryptionAes256 || aws.ToInt64(head.ContentLength) != int64(len(data)) {
		t.Fatalf("HEAD: %v %+v", err, head)
	}
	got := readBody(c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")}))
	if !bytes.Equal(got, data) {
		t.Fatalf("GET: %d bytes, want %d", len(got), len(data))
	}
	for _, r := range [][2]int{{0, 0}, {cairn.SegmentSize - 3, cairn.SegmentSize + 2}, {100, 3 * cairn.SegmentSize}, {len(data) - 5, len(data) - 1}} {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Range: aws.String(fmt.Sprintf("bytes=%d-%d", r[0], r[1]))})
		want := fmt.Sprintf("bytes %d-%d/%d", r[0], r[1], len(data))
		if err == nil && aws.ToString(out.ContentRange) != want {
			t.Fatalf("range %v: Content-Range %q, want %q", r, aws.ToString(out.ContentRange), want)
		}
		if got := readBody(out, err); !bytes.Equal(got, data[r[0]:r[1]+1]) {
			t.Fatalf("range %v: wrong bytes", r)
		}
	}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt")})
	if err != nil || len(list.Contents) != 1 || aws.ToInt64(list.Contents[0].Size) != int64(len(data)) {
		t.Fatalf("list: %v %+v", err, list)
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("kms"), Body: bytes.NewReader(data),
		ServerSideEncryption: types.ServerSideEncryptionAwsKms})
	wantCode(t, err, "NotImplemented")
}

func TestSSEC(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	readBody := bodyOf(t)
	key, other := newSSECKey(1), newSSECKey(2)
	data := randBytes(21, 2*cairn.SegmentSize+5)
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: bytes.NewReader(data),
		SSECustomerAlgorithm: aws.String("AES256"), SSECustomerKey: aws.String(key.key), SSECustomerKeyMD5: aws.String(key.md5)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(put.SSECustomerAlgorithm) != "AES256" || aws.ToString(put.SSECustomerKeyMD5) != key.md5 {
		t.Fatalf("PUT echoes %q %q", aws.ToString(put.SSECustomerAlgorithm), aws.ToString(put.SSECustomerKeyMD5))
	}
	if aws.ToString(put.ETag) == `"`+md5hex(data)+`"` {
		t.Error("an SSE-C ETag is the MD5 of the data")
	}
	e.noPlaintext(t, data)
	get := func(k ssecKey, rng string) (*s3.GetObjectOutput, error) {
		in := &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"),
			SSECustomerAlgorithm: aws.String("AES256"), SSECustomerKey: aws.String(k.key), SSECustomerKeyMD5: aws.String(k.md5)}
		if rng != "" {
			in.Range = aws.String(rng)
		}
		return c.GetObject(ctx, in)
	}
	out, err := get(key, "")
	if got := readBody(out, err); !bytes.Equal(got, data) || aws.ToString(out.SSECustomerKeyMD5) != key.md5 {
		t.Fatalf("GET: %d bytes, key MD5 %q", len(got), aws.ToString(out.SSECustomerKeyMD5))
	}
	if got := readBody(get(key, "bytes=65530-65540")); !bytes.Equal(got, data[65530:65541]) {
		t.Fatal("ranged GET: wrong bytes")
	}
	_, err = get(other, "")
	wantCode(t, err, "AccessDenied")
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"),
		SSECustomerAlgorithm: aws.String("AES256"), SSECustomerKey: aws.String(other.key), SSECustomerKeyMD5: aws.String(other.md5)})
	wantStatus(t, err, http.StatusForbidden)
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"),
		SSECustomerAlgorithm: aws.String("AES256"), SSECustomerKey: aws.String(key.key), SSECustomerKeyMD5: aws.String(key.md5)})
	if err != nil || aws.ToInt64(head.ContentLength) != int64(len(data)) || aws.ToString(head.SSECustomerAlgorithm) != "AES256" {
		t.Fatalf("HEAD: %v", err)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
	wantCode(t, err, "InvalidRequest")
	// A key whose MD5 does not match.
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k2"), Body: bytes.NewReader(data),
		SSECustomerAlgorithm: aws.String("AES256"), SSECustomerKey: aws.String(key.key), SSECustomerKeyMD5: aws.String(other.md5)})
	wantCode(t, err, "InvalidArgument")

	// Copy: SSE-C source to an SSE-S3 destination, and back to SSE-C
	// under another key.
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String("s3copy"), CopySource: aws.String("bkt/k"),
		ServerSideEncryption: types.ServerSideEncryptionAes256})
	wantCode(t, err, "InvalidRequest") // no source key
	cp, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String("s3copy"), CopySource: aws.String("bkt/k"),
		ServerSideEncryption:           types.ServerSideEncryptionAes256,
		CopySourceSSECustomerAlgorithm: aws.String("AES256"), CopySourceSSECustomerKey: aws.String(key.key), CopySourceSSECustomerKeyMD5: aws.String(key.md5)})
	if err != nil || cp.ServerSideEncryption != types.ServerSideEncryptionAes256 {
		t.Fatalf("copy to SSE-S3: %v", err)
	}
	if got := readBody(c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("s3copy")})); !bytes.Equal(got, data) {
		t.Fatal("SSE-S3 copy: wrong bytes")
	}
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), CopySource: aws.String("bkt/s3copy"),
		SSECustomerAlgorithm: aws.String("AES256"), SSECustomerKey: aws.String(other.key), SSECustomerKeyMD5: aws.String(other.md5)})
	if err != nil {
		t.Fatalf("copy to SSE-C: %v", err)
	}
	if got := readBody(get(other, "")); !bytes.Equal(got, data) {
		t.Fatal("SSE-C copy: wrong bytes")
	}
	_, err = get(key, "")
	wantCode(t, err, "AccessDenied")

	// Over plain HTTP without the loopback switch, SSE-C is refused,
	// unless a TLS-terminating proxy says it was HTTPS.
	e.h.cfg.AllowInsecureSSEC = false
	_, err = get(other, "")
	wantCode(t, err, "InvalidRequest")
	proxied := func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue("X-Forwarded-Proto", "https"))
	}
	out, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"),
		SSECustomerAlgorithm: aws.String("AES256"), SSECustomerKey: aws.String(other.key), SSECustomerKeyMD5: aws.String(other.md5)}, proxied)
	if got := readBody(out, err); !bytes.Equal(got, data) {
		t.Fatal("SSE-C behind a TLS proxy: wrong bytes")
	}
}

func TestSSEMultipart(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	readBody := bodyOf(t)
	key := newSSECKey(3)
	data := randBytes(22, 5<<20+cairn.SegmentSize/2)
	for _, ssec := range []bool{false, true} {
		name := fmt.Sprintf("mp-%v", ssec)
		create := &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String(name)}
		if ssec {
			create.SSECustomerAlgorithm, create.SSECustomerKey, create.SSECustomerKeyMD5 = aws.String("AES256"), aws.String(key.key), aws.String(key.md5)
		} else {
			create.ServerSideEncryption = types.ServerSideEncryptionAes256
		}
		u, err := c.CreateMultipartUpload(ctx, create)
		if err != nil {
			t.Fatal(err)
		}
		if !ssec && u.ServerSideEncryption != types.ServerSideEncryptionAes256 {
			t.Errorf("create: encryption %q", u.ServerSideEncryption)
		}
		// SSE-C crosses a part boundary (parts but the last are 5 MiB);
		// SSE-S3 has one small part, to keep the test quick.
		cuts := [][2]int{{0, 5 << 20}, {5 << 20, len(data)}}
		if !ssec {
			cuts = [][2]int{{5 << 20, len(data)}}
		}
		var parts []types.CompletedPart
		for i, cut := range cuts {
			in := &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String(name), UploadId: u.UploadId,
				PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(data[cut[0]:cut[1]])}
			if ssec {
				in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = aws.String("AES256"), aws.String(key.key), aws.String(key.md5)
			}
			p, err := c.UploadPart(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if ssec && (aws.ToString(p.SSECustomerAlgorithm) != "AES256" || aws.ToString(p.SSECustomerKeyMD5) != key.md5 || p.ServerSideEncryption != "") {
				t.Errorf("SSE-C part: algorithm %q key MD5 %q encryption %q", aws.ToString(p.SSECustomerAlgorithm), aws.ToString(p.SSECustomerKeyMD5), p.ServerSideEncryption)
			}
			if !ssec && (p.ServerSideEncryption != types.ServerSideEncryptionAes256 || p.SSECustomerAlgorithm != nil) {
				t.Errorf("SSE-S3 part: encryption %q algorithm %v", p.ServerSideEncryption, p.SSECustomerAlgorithm)
			}
			if !ssec && aws.ToString(p.ETag) != `"`+md5hex(data[cut[0]:cut[1]])+`"` {
				t.Errorf("SSE-S3 part ETag %s is not the part's MD5", aws.ToString(p.ETag))
			}
			parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: p.ETag})
		}
		lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("bkt"), Key: aws.String(name), UploadId: u.UploadId})
		if err != nil || aws.ToInt64(lp.Parts[0].Size) != int64(cuts[0][1]-cuts[0][0]) {
			t.Fatalf("list parts: %v", err)
		}
		done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String(name), UploadId: u.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]types.ServerSideEncryption{false: types.ServerSideEncryptionAes256}[ssec]; done.ServerSideEncryption != want {
			t.Errorf("%s: complete: encryption %q, want %q", name, done.ServerSideEncryption, want)
		}
		want := data[cuts[0][0]:]
		from := max(10, len(want)-cairn.SegmentSize-10)
		in := &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String(name), Range: aws.String(fmt.Sprintf("bytes=%d-", from))}
		if ssec {
			in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = aws.String("AES256"), aws.String(key.key), aws.String(key.md5)
		}
		if got := readBody(c.GetObject(ctx, in)); !bytes.Equal(got, want[from:]) {
			t.Fatalf("%s: ranged GET (across parts for SSE-C): wrong bytes", name)
		}
		in.Range = nil
		if got := readBody(c.GetObject(ctx, in)); !bytes.Equal(got, want) {
			t.Fatalf("%s: GET: wrong bytes", name)
		}
	}
	e.noPlaintext(t, data)
}

// TestSSEMultipartParams checks S3's answers to parts and completions
// whose encryption does not fit their upload, and to SSE-KMS.
func TestSSEMultipartParams(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	key, other := newSSECKey(5), newSSECKey(6)
	withKey := func(k ssecKey) (*string, *string, *string) {
		return aws.String("AES256"), aws.String(k.key), aws.String(k.md5)
	}
	create := func(name string, ssec bool) *string {
		t.Helper()
		in := &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String(name)}
		if ssec {
			in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = withKey(key)
		} else {
			in.ServerSideEncryption = types.ServerSideEncryptionAes256
		}
		u, err := c.CreateMultipartUpload(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if ssec && (aws.ToString(u.SSECustomerAlgorithm) != "AES256" || aws.ToString(u.SSECustomerKeyMD5) != key.md5) {
			t.Errorf("SSE-C create: algorithm %q key MD5 %q", aws.ToString(u.SSECustomerAlgorithm), aws.ToString(u.SSECustomerKeyMD5))
		}
		return u.UploadId
	}
	part := func(name string, id *string, k *ssecKey) error {
		in := &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String(name), UploadId: id,
			PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("part body"))}
		if k != nil {
			in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = withKey(*k)
		}
		_, err := c.UploadPart(ctx, in)
		return err
	}
	wantMessage := func(err error, code, msg string) {
		t.Helper()
		wantCode(t, err, code)
		var ae interface{ ErrorMessage() string }
		if !errors.As(err, &ae) || !strings.Contains(ae.ErrorMessage(), msg) {
			t.Errorf("error %v: want message %q", err, msg)
		}
	}
	cid, sid := create("c", true), create("s", false)
	wantMessage(part("c", cid, nil), "InvalidRequest", ErrSSEPartParams.Message)
	wantMessage(part("c", cid, &other), "InvalidRequest", ErrSSEPartKey.Message)
	wantMessage(part("s", sid, &key), "InvalidRequest", ErrSSEPartParams.Message)
	if err := part("c", cid, &key); err != nil {
		t.Fatal(err)
	}
	lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("bkt"), Key: aws.String("c"), UploadId: cid})
	if err != nil || len(lp.Parts) != 1 {
		t.Fatalf("list parts: %v, want the one part stored with the right key", err)
	}
	// A completion may carry the key: another key is refused, the right
	// one is echoed.
	complete := &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("c"), UploadId: cid,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: lp.Parts[0].ETag}}}}
	complete.SSECustomerAlgorithm, complete.SSECustomerKey, complete.SSECustomerKeyMD5 = withKey(other)
	_, err = c.CompleteMultipartUpload(ctx, complete)
	wantMessage(err, "InvalidRequest", ErrSSEPartKey.Message)
	complete.SSECustomerAlgorithm, complete.SSECustomerKey, complete.SSECustomerKeyMD5 = withKey(key)
	if _, err := c.CompleteMultipartUpload(ctx, complete); err != nil {
		t.Fatal(err)
	}
	for _, in := range []*s3.CreateMultipartUploadInput{
		{Bucket: aws.String("bkt"), Key: aws.String("k"), ServerSideEncryption: types.ServerSideEncryptionAwsKms},
		{Bucket: aws.String("bkt"), Key: aws.String("k"), ServerSideEncryption: types.ServerSideEncryptionAwsKmsDsse},
	} {
		_, err := c.CreateMultipartUpload(ctx, in)
		wantMessage(err, "NotImplemented", ErrSSEKMS.Message)
	}
}

func TestBucketEncryption(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	_, err := c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: aws.String("bkt")})
	wantCode(t, err, "ServerSideEncryptionConfigurationNotFoundError")
	if _, err := c.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: aws.String("bkt"),
		ServerSideEncryptionConfiguration: &types.ServerSideEncryptionConfiguration{Rules: []types.ServerSideEncryptionRule{{
			ApplyServerSideEncryptionByDefault: &types.ServerSideEncryptionByDefault{SSEAlgorithm: types.ServerSideEncryptionAes256},
		}}}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: aws.String("bkt")})
	if err != nil || len(got.ServerSideEncryptionConfiguration.Rules) != 1 ||
		got.ServerSideEncryptionConfiguration.Rules[0].ApplyServerSideEncryptionByDefault.SSEAlgorithm != types.ServerSideEncryptionAes256 {
		t.Fatalf("GetBucketEncryption: %v %+v", err, got)
	}
	data := randBytes(30, 100<<10)
	put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("dflt"), Body: bytes.NewReader(data)})
	if err != nil || put.ServerSideEncryption != types.ServerSideEncryptionAes256 {
		t.Fatalf("PUT into a default-encrypted bucket: %v, encryption %q", err, put.ServerSideEncryption)
	}
	e.noPlaintext(t, data)
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("dflt")})
	if err != nil || head.ServerSideEncryption != types.ServerSideEncryptionAes256 {
		t.Fatalf("HEAD: %v", err)
	}
	_, err = c.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: aws.String("bkt"),
		ServerSideEncryptionConfiguration: &types.ServerSideEncryptionConfiguration{Rules: []types.ServerSideEncryptionRule{{
			ApplyServerSideEncryptionByDefault: &types.ServerSideEncryptionByDefault{SSEAlgorithm: types.ServerSideEncryptionAwsKms},
		}}}})
	wantCode(t, err, "NotImplemented")
	if _, err := c.DeleteBucketEncryption(ctx, &s3.DeleteBucketEncryptionInput{Bucket: aws.String("bkt")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: aws.String("bkt")})
	wantCode(t, err, "ServerSideEncryptionConfigurationNotFoundError")
	put, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("clear"), Body: bytes.NewReader(data)})
	if err != nil || put.ServerSideEncryption != "" {
		t.Fatalf("PUT after DeleteBucketEncryption: %v, encryption %q", err, put.ServerSideEncryption)
	}
	_, err = c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: aws.String("nope")})
	wantCode(t, err, "NoSuchBucket")
}
