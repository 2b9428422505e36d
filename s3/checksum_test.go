package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"hash/crc64"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"cairn"
)

// b64 is the base64 of a digest.
func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func crc32Sum(data []byte) []byte {
	h := crc32.NewIEEE()
	h.Write(data)
	return h.Sum(nil)
}

// The verified checksum of a PUT is stored and returned on GET and HEAD
// with x-amz-checksum-mode: ENABLED, whether it came as a header or as
// an aws-chunked trailer (the SDK's default).
func TestChecksumStored(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	b := aws.String("bkt")
	data := randBytes(52, 2*stripe+77)
	crc64h := crc64.New(crc64.MakeTable(cairn.CRC64NVME))
	crc64h.Write(data)
	sha := sha256.Sum256(data)
	for _, tc := range []struct {
		alg  types.ChecksumAlgorithm
		want string
		got  func(*s3.HeadObjectOutput) *string
	}{
		{types.ChecksumAlgorithmCrc32, b64(crc32Sum(data)), func(o *s3.HeadObjectOutput) *string { return o.ChecksumCRC32 }},
		{types.ChecksumAlgorithmCrc64nvme, b64(crc64h.Sum(nil)), func(o *s3.HeadObjectOutput) *string { return o.ChecksumCRC64NVME }},
		{types.ChecksumAlgorithmSha256, b64(sha[:]), func(o *s3.HeadObjectOutput) *string { return o.ChecksumSHA256 }},
	} {
		k := aws.String("sum-" + string(tc.alg))
		put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: bytes.NewReader(data), ChecksumAlgorithm: tc.alg})
		if err != nil {
			t.Fatalf("%s: %v", tc.alg, err)
		}
		if put.ChecksumType != types.ChecksumTypeFullObject {
			t.Fatalf("%s: PUT answered checksum type %q", tc.alg, put.ChecksumType)
		}
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k, ChecksumMode: types.ChecksumModeEnabled})
		if err != nil || aws.ToString(tc.got(head)) != tc.want || head.ChecksumType != types.ChecksumTypeFullObject {
			t.Fatalf("%s: HEAD checksum %q (type %q), want %q: %v", tc.alg, aws.ToString(tc.got(head)), head.ChecksumType, tc.want, err)
		}
		// The SDK checks the body against the returned checksum.
		get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(get.Body)
		get.Body.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: GET with checksum mode: %v", tc.alg, err)
		}
	}
	// Over plain HTTP the SDK signs the payload and sends the checksum as
	// a header (over TLS it sends it as a trailer of an aws-chunked body,
	// which TestTrailerPayloads checks is stored too).
	if m := e.payloadModes(); m["sha256"] < 3 {
		t.Fatalf("payload modes %v", m)
	}
	// Without the mode, or for a range, no checksum.
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("sum-CRC32")})
	if err != nil || head.ChecksumCRC32 != nil {
		t.Fatalf("HEAD without checksum mode: %v %v", head.ChecksumCRC32, err)
	}
	rg, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("sum-CRC32"), Range: aws.String("bytes=0-9"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || rg.ChecksumCRC32 != nil {
		t.Fatalf("ranged GET: %v %v", rg, err)
	}
	rg.Body.Close()

	// A checksum header on a signed PUT.
	st, _ := do(t, e.signed(t, "PUT", "/bkt/hdr", data, "", http.Header{"X-Amz-Checksum-Sha256": {b64(sha[:])}}))
	if st != http.StatusOK {
		t.Fatalf("PUT with x-amz-checksum-sha256: %d", st)
	}
	head, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("hdr"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(head.ChecksumSHA256) != b64(sha[:]) {
		t.Fatalf("HEAD of a header-checksummed PUT: %v %v", head, err)
	}

	// A copy keeps the source's checksum; with x-amz-checksum-algorithm it
	// gets a new one of the copied bytes.
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copy"), CopySource: aws.String("bkt/sum-CRC32")}); err != nil {
		t.Fatal(err)
	}
	if head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("copy"), ChecksumMode: types.ChecksumModeEnabled}); err != nil || aws.ToString(head.ChecksumCRC32) != b64(crc32Sum(data)) {
		t.Fatalf("copy's checksum: %v", err)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copy2"), CopySource: aws.String("bkt/sum-CRC32"),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256}); err != nil {
		t.Fatal(err)
	}
	if head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("copy2"), ChecksumMode: types.ChecksumModeEnabled}); err != nil || aws.ToString(head.ChecksumSHA256) != b64(sha[:]) || head.ChecksumCRC32 != nil {
		t.Fatalf("copy with a new algorithm: %+v %v", head, err)
	}
}

// A multipart upload created with x-amz-checksum-algorithm gets the
// composite checksum of its parts.
func TestChecksumMultipart(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	b, k := aws.String("bkt"), aws.String("mp")
	cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k, ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
	if err != nil {
		t.Fatal(err)
	}
	parts := [][]byte{randBytes(60, 5*mib), randBytes(61, 1234)}
	var done []types.CompletedPart
	var cat []byte
	for i, p := range parts {
		up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: cr.UploadId, PartNumber: aws.Int32(int32(i + 1)),
			Body: bytes.NewReader(p), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(up.ChecksumCRC32) != b64(crc32Sum(p)) {
			t.Fatalf("part %d checksum %q", i+1, aws.ToString(up.ChecksumCRC32))
		}
		done = append(done, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: up.ETag, ChecksumCRC32: up.ChecksumCRC32})
		cat = append(cat, crc32Sum(p)...)
	}
	// A part with another algorithm is refused.
	_, err = c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: cr.UploadId, PartNumber: aws.Int32(3),
		Body: bytes.NewReader([]byte("x")), ChecksumAlgorithm: types.ChecksumAlgorithmSha1})
	wantCode(t, err, "InvalidRequest")
	want := b64(crc32Sum(cat)) + "-2"
	// Checksums the completion carries must be the stored ones: a part's
	// (InvalidPart), the object's (BadDigest); nothing commits.
	wrong := append([]types.CompletedPart{}, done...)
	wrong[1].ChecksumCRC32 = aws.String(b64(crc32Sum([]byte("other"))))
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: wrong}})
	wantCode(t, err, "InvalidPart")
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}, ChecksumCRC32: aws.String(b64(crc32Sum([]byte("other"))) + "-2")})
	wantCode(t, err, "BadDigest")
	if _, err := e.meta.Manifest(ctx, "bkt", "mp"); err == nil {
		t.Fatal("a refused completion committed the object")
	}
	out, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
	if err != nil || aws.ToString(out.ChecksumCRC32) != want || out.ChecksumType != types.ChecksumTypeComposite {
		t.Fatalf("Complete: checksum %q type %q, want %q: %v", aws.ToString(out.ChecksumCRC32), out.ChecksumType, want, err)
	}
	// Completing again (the parts' checksums with it) answers the same.
	again, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: cr.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
	if err != nil || aws.ToString(again.ETag) != aws.ToString(out.ETag) || aws.ToString(again.ChecksumCRC32) != want {
		t.Fatalf("Complete again: %+v %v", again, err)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(head.ChecksumCRC32) != want || head.ChecksumType != types.ChecksumTypeComposite {
		t.Fatalf("HEAD: %q %v", aws.ToString(head.ChecksumCRC32), err)
	}
	// A GET of part 2 returns that part's checksum.
	head, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k, PartNumber: aws.Int32(2), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(head.ChecksumCRC32) != b64(crc32Sum(parts[1])) {
		t.Fatalf("HEAD of part 2: %q %v", aws.ToString(head.ChecksumCRC32), err)
	}
	// The full-object form: CRC64NVME's default, CRC32C's on request; the
	// parts' CRCs combine into the CRC of the whole content.
	full := append(append([]byte{}, parts[0]...), parts[1]...)
	for _, tc := range []struct {
		alg  types.ChecksumAlgorithm
		typ  types.ChecksumType
		want func([]byte) string
		got  func(*s3.HeadObjectOutput) *string
	}{
		{types.ChecksumAlgorithmCrc64nvme, "", func(b []byte) string {
			h := crc64.New(crc64.MakeTable(cairn.CRC64NVME))
			h.Write(b)
			return b64(h.Sum(nil))
		}, func(o *s3.HeadObjectOutput) *string { return o.ChecksumCRC64NVME }},
		{types.ChecksumAlgorithmCrc32c, types.ChecksumTypeFullObject, func(b []byte) string {
			return b64(binary.BigEndian.AppendUint32(nil, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))))
		}, func(o *s3.HeadObjectOutput) *string { return o.ChecksumCRC32C }},
	} {
		key := aws.String("full-" + string(tc.alg))
		cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: key, ChecksumAlgorithm: tc.alg, ChecksumType: tc.typ})
		if err != nil || cr.ChecksumType != types.ChecksumTypeFullObject {
			t.Fatalf("%s: create: %v %v", tc.alg, cr, err)
		}
		var done []types.CompletedPart
		for i, p := range parts {
			up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: key, UploadId: cr.UploadId, PartNumber: aws.Int32(int32(i + 1)),
				Body: bytes.NewReader(p), ChecksumAlgorithm: tc.alg})
			if err != nil {
				t.Fatal(err)
			}
			done = append(done, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: up.ETag})
		}
		// The SDK's full-object checksum on the completion is checked.
		in := &s3.CompleteMultipartUploadInput{Bucket: b, Key: key, UploadId: cr.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: done}, ChecksumType: types.ChecksumTypeFullObject}
		if tc.alg == types.ChecksumAlgorithmCrc64nvme {
			in.ChecksumCRC64NVME = aws.String(tc.want(full[1:]))
			_, err := c.CompleteMultipartUpload(ctx, in)
			wantCode(t, err, "BadDigest")
			in.ChecksumCRC64NVME = aws.String(tc.want(full))
		}
		if _, err := c.CompleteMultipartUpload(ctx, in); err != nil {
			t.Fatal(err)
		}
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: key, ChecksumMode: types.ChecksumModeEnabled})
		if want := tc.want(full); err != nil || aws.ToString(tc.got(head)) != want || head.ChecksumType != types.ChecksumTypeFullObject {
			t.Fatalf("%s: HEAD checksum %q type %q, want %q: %v", tc.alg, aws.ToString(tc.got(head)), head.ChecksumType, want, err)
		}
		// The SDK checks a GET of the whole object against it.
		get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: key, ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(get.Body); err != nil || !bytes.Equal(got, full) {
			t.Fatalf("%s: GET: %v", tc.alg, err)
		}
		get.Body.Close()
	}
	_, err = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k, ChecksumAlgorithm: types.ChecksumAlgorithmSha256, ChecksumType: types.ChecksumTypeFullObject})
	wantCode(t, err, "InvalidRequest")
	_, err = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k, ChecksumAlgorithm: "MD5"})
	wantCode(t, err, "InvalidRequest")
}
