package s3

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/signer"
)

func TestAuthErrors(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")

	_, err := e.aws(testAccess, "wrong-secret").ListBuckets(ctx, &s3.ListBucketsInput{})
	wantCode(t, err, "SignatureDoesNotMatch")
	_, err = e.aws("AKIAUNKNOWN", testSecret).ListBuckets(ctx, &s3.ListBucketsInput{})
	wantCode(t, err, "InvalidAccessKeyId")
	_, err = e.aws(testAccess, "wrong-secret").PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("x")})
	wantCode(t, err, "SignatureDoesNotMatch")
	if _, err := e.minio(t).ListBuckets(ctx); err != nil {
		t.Fatal(err)
	}

	// Clock skew: 15 minutes either way is the limit.
	for _, skew := range []time.Duration{20 * time.Minute, -20 * time.Minute} {
		e.skew.Store(int64(skew))
		_, err = e.root().ListBuckets(ctx, &s3.ListBucketsInput{})
		wantCode(t, err, "RequestTimeTooSkewed")
	}
	e.skew.Store(int64(14 * time.Minute))
	if _, err := e.root().ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
		t.Fatalf("14 minutes of skew: %v", err)
	}
	e.skew.Store(0)

	// Anonymous, undated SigV2 and malformed headers.
	for name, hdr := range map[string]string{
		"anonymous": "",
		"sigv2":     "AWS " + testAccess + ":c2lnbmF0dXJl",
		"garbage":   "Bearer xyz",
		"no-sig":    "AWS4-HMAC-SHA256 Credential=" + testAccess + "/20250101/us-east-1/s3/aws4_request, SignedHeaders=host",
	} {
		r, _ := http.NewRequest("GET", e.srv.URL+"/bkt/k", nil)
		if hdr != "" {
			r.Header.Set("Authorization", hdr)
		}
		st, body := do(t, r)
		want := map[string]string{"anonymous": "AccessDenied", "sigv2": "AccessDenied", "garbage": "AuthorizationHeaderMalformed", "no-sig": "AuthorizationHeaderMalformed"}[name]
		if st/100 != 4 || !strings.Contains(body, "<Code>"+want+"</Code>") {
			t.Errorf("%s: %d %s", name, st, body)
		}
	}

	// A signed request altered in transit.
	r := e.signed(t, "GET", "/bkt?list-type=2", nil, "", nil)
	r.URL.RawQuery = "list-type=2&prefix=x"
	if st, body := do(t, r); st != http.StatusForbidden || !strings.Contains(body, "SignatureDoesNotMatch") {
		t.Fatalf("tampered query: %d %s", st, body)
	}

	// x-amz-content-sha256 must match the body; nothing is stored if not.
	sum := sha256.Sum256([]byte("other"))
	st, body := do(t, e.signed(t, "PUT", "/bkt/sha", bytes.Repeat([]byte("a"), 3*stripe), fmt.Sprintf("%x", sum), nil))
	if st != http.StatusBadRequest || !strings.Contains(body, "XAmzContentSHA256Mismatch") {
		t.Fatalf("sha256 mismatch: %d %s", st, body)
	}
	if _, err := e.meta.Manifest(ctx, "bkt", "sha"); err == nil {
		t.Fatal("an object with a bad payload hash is visible")
	}
	// UNSIGNED-PAYLOAD is accepted, and Content-MD5 still checked.
	st, body = do(t, e.signed(t, "PUT", "/bkt/unsigned", []byte("hello"), unsignedPayload, nil))
	if st != http.StatusOK {
		t.Fatalf("unsigned payload: %d %s", st, body)
	}
	st, body = do(t, e.signed(t, "PUT", "/bkt/unsigned2", []byte("hello"), unsignedPayload, http.Header{"Content-Md5": {"XUFAKrxLKna5cZ2REBfFkg=="}}))
	if st != http.StatusOK {
		t.Fatalf("unsigned payload with right MD5: %d %s", st, body)
	}
	st, body = do(t, e.signed(t, "PUT", "/bkt/unsigned3", []byte("hellO"), unsignedPayload, http.Header{"Content-Md5": {"XUFAKrxLKna5cZ2REBfFkg=="}}))
	if st != http.StatusBadRequest || !strings.Contains(body, "BadDigest") {
		t.Fatalf("unsigned payload with wrong MD5: %d %s", st, body)
	}
}

func TestPresigned(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	data := randBytes(11, 2*stripe+3)
	pc := s3.NewPresignClient(e.root())

	put, err := pc.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("pre/signed ü")}, s3.WithPresignExpires(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := http.NewRequest(put.Method, put.URL, bytes.NewReader(data))
	for k, v := range put.SignedHeader {
		r.Header[k] = v
	}
	if st, body := do(t, r); st != http.StatusOK {
		t.Fatalf("presigned PUT: %d %s", st, body)
	}
	get, err := pc.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("pre/signed ü"), Range: aws.String("bytes=5-10")}, s3.WithPresignExpires(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	r, _ = http.NewRequest(get.Method, get.URL, nil)
	for k, v := range get.SignedHeader {
		r.Header[k] = v
	}
	if st, body := do(t, r); st != http.StatusPartialContent || body != string(data[5:11]) {
		t.Fatalf("presigned GET: %d %q", st, body)
	}

	// minio-go's presigned URLs.
	mc := e.minio(t)
	pu, err := mc.PresignedPutObject(ctx, "bkt", "m", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r, _ = http.NewRequest("PUT", pu.String(), bytes.NewReader(data))
	if st, body := do(t, r); st != http.StatusOK {
		t.Fatalf("minio presigned PUT: %d %s", st, body)
	}
	gu, err := mc.PresignedGetObject(ctx, "bkt", "m", time.Hour, url.Values{"response-content-type": {"text/csv"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(gu.String())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(b, data) || resp.Header.Get("Content-Type") != "text/csv" {
		t.Fatalf("minio presigned GET: %d, %d bytes, %s", resp.StatusCode, len(b), resp.Header.Get("Content-Type"))
	}

	// Tampered, expired, unknown key.
	tampered := strings.Replace(gu.String(), "/bkt/m?", "/bkt/put?", 1)
	if resp, err := http.Get(tampered); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("tampered presigned URL: %v %v", resp.StatusCode, err)
	}
	e.skew.Store(int64(2 * time.Hour))
	resp, err = http.Get(gu.String())
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "expired") {
		t.Fatalf("expired presigned URL: %d %s", resp.StatusCode, b)
	}
	e.skew.Store(0)
	other := s3.NewPresignClient(e.aws("AKIAOTHER", "x"))
	g2, _ := other.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("m")})
	if resp, err := http.Get(g2.URL); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("unknown key presigned: %v", err)
	}
	if m := e.payloadModes(); m["presigned"] < 4 {
		t.Fatalf("payload modes %v", m)
	}
}

type sha256Hasher struct{ hash.Hash }

func (sha256Hasher) Close() {}

// streamingRequest builds a PUT with minio-go's STREAMING-AWS4-HMAC-SHA256-PAYLOAD
// signer and returns it with its encoded body in memory (for tampering).
func (e *env) streamingRequest(t *testing.T, path string, data []byte) (*http.Request, []byte) {
	t.Helper()
	r, err := http.NewRequest("PUT", e.srv.URL+path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	r = signer.StreamingSignV4(r, testAccess, testSecret, "", testRegion, int64(len(data)), time.Now().UTC(), sha256Hasher{sha256.New()})
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(body)) != r.ContentLength {
		t.Fatalf("encoded %d bytes, Content-Length %d", len(body), r.ContentLength)
	}
	return r, body
}

func TestStreamingSignature(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	data := randBytes(21, 200_000) // minio-go signs 64 KiB chunks: 4 chunks + the final one

	// minio-go uses the streaming signature for PUTs over plain HTTP.
	if _, err := e.minio(t).PutObject(ctx, "bkt", "stream", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	modes := e.payloadModes()
	if modes[streamingPayload]+modes[streamingPayloadTrailer] == 0 {
		t.Fatalf("minio-go did not stream: %v", modes)
	}
	got := readAll(t, e, "bkt", "stream")
	if !bytes.Equal(got, data) {
		t.Fatal("streamed object differs")
	}

	// The same, by hand, then tampered: a flipped data byte in any chunk, a
	// changed chunk signature or a truncated body stores nothing.
	r, body := e.streamingRequest(t, "/bkt/hand", data)
	send := func(b []byte) (int, string) {
		req, _ := http.NewRequest("PUT", r.URL.String(), bytes.NewReader(b))
		req.Header = r.Header.Clone()
		req.ContentLength = int64(len(b))
		return do(t, req)
	}
	if st, resp := send(body); st != http.StatusOK {
		t.Fatalf("hand-streamed PUT: %d %s", st, resp)
	}
	for _, off := range []int{200, 70_000, len(body) - 200} {
		bad := bytes.Clone(body)
		bad[off] ^= 1
		st, resp := send(bad)
		if st != http.StatusForbidden && st != http.StatusBadRequest {
			t.Fatalf("flipped byte %d: %d %s", off, st, resp)
		}
		if !strings.Contains(resp, "SignatureDoesNotMatch") && !strings.Contains(resp, "IncompleteBody") {
			t.Fatalf("flipped byte %d: %s", off, resp)
		}
	}
	// The last chunk's signature (final, empty chunk).
	i := bytes.LastIndex(body, []byte("0;chunk-signature="))
	bad := bytes.Clone(body)
	bad[i+20] = map[bool]byte{true: '1', false: '0'}[bad[i+20] == '0'] // another hex digit
	if st, resp := send(bad); st != http.StatusForbidden || !strings.Contains(resp, "SignatureDoesNotMatch") {
		t.Fatalf("bad final signature: %d %s", st, resp)
	}
	if st, resp := send(body[:len(body)/2]); st != http.StatusBadRequest {
		t.Fatalf("half a chunked body: %d %s", st, resp)
	}
	// Nothing replaced "hand".
	if got := readAll(t, e, "bkt", "hand"); !bytes.Equal(got, data) {
		t.Fatal("a rejected streaming PUT replaced the object")
	}
}

func readAll(t *testing.T, e *env, bucket, key string) []byte {
	t.Helper()
	out, err := e.root().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
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

// The trailer variants minio-go's signer produces (its client uses them
// over TLS with checksums): STREAMING-UNSIGNED-PAYLOAD-TRAILER and
// STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, whose trailer is signed.
func TestTrailerPayloads(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(t, "bkt")
	data := randBytes(31, 150_000)
	crc := crc32.ChecksumIEEE(data)
	trailer := func() http.Header {
		return http.Header{"X-Amz-Checksum-Crc32": {base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc))}}
	}

	r, _ := http.NewRequest("PUT", e.srv.URL+"/bkt/unsigned-trailer", bytes.NewReader(data))
	r.Header.Set("X-Amz-Content-Sha256", streamingUnsignedTrailer)
	r = signer.SignV4Trailer(*r, testAccess, testSecret, "", testRegion, trailer())
	if st, body := do(t, r); st != http.StatusOK {
		t.Fatalf("unsigned trailer: %d %s", st, body)
	}

	r, _ = http.NewRequest("PUT", e.srv.URL+"/bkt/signed-trailer", bytes.NewReader(data))
	r.Trailer = trailer()
	r = signer.StreamingSignV4(r, testAccess, testSecret, "", testRegion, int64(len(data)), time.Now().UTC(), sha256Hasher{sha256.New()})
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	send := func(b []byte) (int, string) {
		req, _ := http.NewRequest("PUT", r.URL.String(), bytes.NewReader(b))
		req.Header = r.Header.Clone()
		req.ContentLength = int64(len(b))
		return do(t, req)
	}
	if st, resp := send(body); st != http.StatusOK {
		t.Fatalf("signed trailer: %d %s", st, resp)
	}
	// A changed trailer value fails the trailer signature.
	bad := bytes.Replace(body, []byte("x-amz-checksum-crc32:"), []byte("x-amz-checksum-crc32:A"), 1)
	if st, resp := send(bad); st != http.StatusForbidden || !strings.Contains(resp, "SignatureDoesNotMatch") {
		t.Fatalf("tampered trailer: %d %s", st, resp)
	}
	// A wrong checksum in an unsigned trailer is BadDigest.
	r, _ = http.NewRequest("PUT", e.srv.URL+"/bkt/bad-trailer", bytes.NewReader(data))
	r.Header.Set("X-Amz-Content-Sha256", streamingUnsignedTrailer)
	r = signer.SignV4Trailer(*r, testAccess, testSecret, "", testRegion, http.Header{"X-Amz-Checksum-Crc32": {"AAAAAA=="}})
	if st, body := do(t, r); st != http.StatusBadRequest || !strings.Contains(body, "BadDigest") {
		t.Fatalf("bad trailer checksum: %d %s", st, body)
	}
	m := e.payloadModes()
	if m[streamingUnsignedTrailer] != 2 || m[streamingPayloadTrailer] != 2 {
		t.Fatalf("payload modes %v", m)
	}
	for _, k := range []string{"unsigned-trailer", "signed-trailer"} {
		if got := readAll(t, e, "bkt", k); !bytes.Equal(got, data) {
			t.Fatalf("%s differs", k)
		}
		// The trailer's checksum is stored and returned.
		head, err := e.root().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String(k), ChecksumMode: types.ChecksumModeEnabled})
		if err != nil || aws.ToString(head.ChecksumCRC32) != trailer().Get("X-Amz-Checksum-Crc32") {
			t.Fatalf("%s: stored checksum %q: %v", k, aws.ToString(head.ChecksumCRC32), err)
		}
	}
}

// A client that declares Content-Length N, sends fewer bytes and hangs up
// leaves no object (and does not replace an existing one).
func TestTruncatedBody(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	old := []byte("the old content")
	if _, err := e.root().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("old"), Body: bytes.NewReader(old)}); err != nil {
		t.Fatal(err)
	}
	base := e.files(t)
	data := randBytes(41, 5*stripe)
	for _, tc := range []struct {
		name, key, payload string
	}{
		{"unsigned", "new", unsignedPayload},
		{"sha256", "new", ""},
		{"overwrite", "old", unsignedPayload},
	} {
		r := e.signed(t, "PUT", "/bkt/"+tc.key, data, tc.payload, nil)
		served := e.served.Load()
		sendTruncated(t, e.srv.Listener.Addr().String(), r, 3*stripe+17)
		waitServed(t, e, served+1)
		if tc.key == "new" {
			if _, err := e.meta.Manifest(ctx, "bkt", "new"); err == nil {
				t.Fatalf("%s: a truncated PUT is visible", tc.name)
			}
		} else if got := readAll(t, e, "bkt", "old"); !bytes.Equal(got, old) {
			t.Fatalf("%s: a truncated PUT replaced the object", tc.name)
		}
		if n := e.files(t); n != base {
			t.Fatalf("%s: %d shard files, want %d", tc.name, n, base)
		}
	}
	// A truncated Transfer-Encoding: chunked body (no Content-Length; net/http
	// reports io.ErrUnexpectedEOF, which must not pass for a short object).
	{
		r := e.signed(t, "PUT", "/bkt/new", data, unsignedPayload, nil)
		conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		r.ContentLength, r.TransferEncoding = -1, []string{"chunked"}
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(data[:2*stripe]), errReader{}))
		served := e.served.Load()
		_ = r.Write(conn)
		conn.Close()
		waitServed(t, e, served+1)
		if _, err := e.meta.Manifest(ctx, "bkt", "new"); err == nil {
			t.Fatal("a truncated chunked PUT is visible")
		}
	}
	// A truncated streaming body too.
	r, body := e.streamingRequest(t, "/bkt/new", data)
	r.Body = io.NopCloser(bytes.NewReader(body))
	served := e.served.Load()
	sendTruncated(t, e.srv.Listener.Addr().String(), r, len(body)-100)
	waitServed(t, e, served+1)
	if _, err := e.meta.Manifest(ctx, "bkt", "new"); err == nil {
		t.Fatal("a truncated streaming PUT is visible")
	}
}

// sendTruncated writes r's headers and the first n bytes of its body on a
// raw connection, then closes it.
func sendTruncated(t *testing.T, addr string, r *http.Request, n int) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	full, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	r.Body = io.NopCloser(bytes.NewReader(full[:n]))
	r.ContentLength = int64(len(full))
	_ = r.Write(conn) // fails: the body is shorter than Content-Length
}

// waitServed waits until the gateway has finished n requests.
func waitServed(t *testing.T, e *env, n int64) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for e.served.Load() < n {
		select {
		case <-e.finish:
		case <-deadline:
			t.Fatal("the gateway did not finish the request")
		}
	}
}

// A client that stops sending mid-body is cut off after BodyIdleTimeout,
// and nothing becomes visible.
func TestStalledBody(t *testing.T) {
	e := newEnv(t)
	e.h.cfg.BodyIdleTimeout = 200 * time.Millisecond
	e.mkBucket(t, "bkt")
	data := randBytes(61, 4*stripe)
	r := e.signed(t, "PUT", "/bkt/stalled", data, unsignedPayload, nil)
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stop := make(chan struct{})
	defer close(stop)
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(data[:stripe]), blockingReader(stop)))
	r.ContentLength = int64(len(data))
	served := e.served.Load()
	go r.Write(conn) // blocks in blockingReader until the test ends
	waitServed(t, e, served+1)
	if _, err := e.meta.Manifest(context.Background(), "bkt", "stalled"); err == nil {
		t.Fatal("a stalled PUT is visible")
	}
	// The answer is S3's for an idle client, naming no address.
	resp, err := http.ReadResponse(bufio.NewReader(conn), r)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "<Code>RequestTimeout</Code>") || strings.Contains(string(body), "127.0.0.1") {
		t.Fatalf("stalled PUT: %d %s", resp.StatusCode, body)
	}
}

// blockingReader blocks until it is closed.
type blockingReader chan struct{}

func (b blockingReader) Read([]byte) (int, error) { <-b; return 0, io.ErrClosedPipe }

// errReader fails every read.
type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrClosedPipe }
