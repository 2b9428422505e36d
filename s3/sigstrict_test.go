package s3

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestUnsignedAmzHeaders: an x-amz-* header added to a Signature V4
// request after signing (by header or presigned) makes it a 403
// AccessDenied with S3's message, and nothing is written; the exempt
// x-amz-content-sha256, non-x-amz headers (x-amzn-trace-id) and signed
// x-amz-* headers pass.
func TestUnsignedAmzHeaders(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	body := []byte("hello")

	refused := func(what string, r *http.Request) {
		t.Helper()
		got := send(t, r)
		if got.status != http.StatusForbidden || got.code != "AccessDenied" || got.message != ErrHeadersNotSigned.Message {
			t.Fatalf("%s: %d %s %q, want 403 AccessDenied %q", what, got.status, got.code, got.message, ErrHeadersNotSigned.Message)
		}
	}
	ok := func(what string, r *http.Request) {
		t.Helper()
		if st, b := do(t, r); st != http.StatusOK {
			t.Fatalf("%s: %d %s", what, st, b)
		}
	}
	absent := func(key string) {
		t.Helper()
		_, err := e.root().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key)})
		wantStatus(t, err, http.StatusNotFound)
	}

	// Header auth.
	for _, h := range []string{"X-Amz-Meta-Owner", "X-Amz-Copy-Source", "X-Amz-Server-Side-Encryption", "X-Amz-Tagging"} {
		r := e.signed(t, "PUT", "/bkt/added", body, "", nil)
		r.Header.Set(h, "bkt/other")
		refused(h+" added after signing", r)
	}
	absent("added")
	r := e.signed(t, "PUT", "/bkt/signed-meta", body, "", http.Header{"X-Amz-Meta-Owner": {"alice"}})
	r.Header.Set("X-Amzn-Trace-Id", "Root=1-abc") // not x-amz-: SDKs leave it unsigned
	ok("signed metadata and an unsigned trace id", r)

	// Presigned.
	pc := s3.NewPresignClient(e.root())
	put, err := pc.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("pre")}, s3.WithPresignExpires(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	presigned := func(extra http.Header) *http.Request {
		r, err := http.NewRequest(put.Method, put.URL, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range put.SignedHeader {
			r.Header[k] = v
		}
		for k, v := range extra {
			r.Header[k] = v
		}
		return r
	}
	refused("presigned with an unsigned x-amz-meta", presigned(http.Header{"X-Amz-Meta-Owner": {"mallory"}}))
	refused("presigned with an unsigned x-amz-acl", presigned(http.Header{"X-Amz-Acl": {"public-read"}}))
	absent("pre")
	ok("presigned with x-amz-content-sha256 (exempt)", presigned(http.Header{"X-Amz-Content-Sha256": {unsignedPayload}}))
}

// TestCheckAmzSigned: the pure check lists exactly the unsigned x-amz-*
// headers.
func TestCheckAmzSigned(t *testing.T) {
	h := http.Header{}
	for _, k := range []string{"X-Amz-Date", "X-Amz-Content-Sha256", "X-Amz-Meta-A", "X-Amz-Meta-B", "X-Amzn-Trace-Id", "X-Cairn-Policy", "Content-Type"} {
		h.Set(k, "v")
	}
	r := &http.Request{Header: h}
	err := checkAmzSigned(r, []string{"host", "x-amz-date", "x-amz-meta-a"})
	if err == nil || apiError(err) != ErrHeadersNotSigned || err.Error() != ErrHeadersNotSigned.Error()+": x-amz-meta-b" {
		t.Fatalf("checkAmzSigned = %v, want ErrHeadersNotSigned naming x-amz-meta-b only", err)
	}
	if err := checkAmzSigned(r, []string{"x-amz-date", "x-amz-meta-a", "x-amz-meta-b"}); err != nil {
		t.Fatalf("all x-amz-* signed: %v", err)
	}
}
