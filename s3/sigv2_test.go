package s3

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	mcreds "github.com/minio/minio-go/v7/pkg/credentials"
)

// AWS's example credentials, used by every documented SigV2 example.
const (
	exampleAccess = "AKIAIOSFODNN7EXAMPLE"
	exampleSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

// v2Handler is a gateway that knows the example credentials, with a
// clock the test sets.
func v2Handler(t *testing.T, now *time.Time) *Handler {
	t.Helper()
	h, err := New(Config{Objects: nopObjects{}, Meta: nopMeta{}, Credentials: RootCredentials(exampleAccess, exampleSecret),
		Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// rawRequest parses a request as the server would receive it (header
// lines joined by \n, no body).
func rawRequest(t *testing.T, raw string) *http.Request {
	t.Helper()
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(strings.ReplaceAll(raw, "\n", "\r\n") + "\r\n\r\n")))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The examples of AWS's "Signing and authenticating REST requests"
// (Signature Version 2), as path-style requests: the virtual-hosted
// bucket moves into the path, and the CanonicalizedResource — so the
// signature — stays the same. (The page's Delete example is left out:
// its StringToSign puts the x-amz-date value in the Date position and
// omits the x-amz-date header line, against the page's own rule, which
// botocore, boto, s3cmd and MinIO follow.)
func TestSigV2Examples(t *testing.T) {
	tests := []struct {
		name, request, date, sts, sig string
	}{
		{"object GET", "GET /awsexamplebucket1/photos/puppy.jpg HTTP/1.1\nHost: s3.us-west-1.amazonaws.com\nDate: Tue, 27 Mar 2007 19:36:42 +0000",
			"Tue, 27 Mar 2007 19:36:42 +0000", "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/awsexamplebucket1/photos/puppy.jpg", "qgk2+6Sv9/oM7G3qLEjTH1a1l1g="},
		{"object PUT", "PUT /awsexamplebucket1/photos/puppy.jpg HTTP/1.1\nContent-Type: image/jpeg\nContent-Length: 94328\nHost: s3.us-west-1.amazonaws.com\nDate: Tue, 27 Mar 2007 21:15:45 +0000",
			"Tue, 27 Mar 2007 21:15:45 +0000", "PUT\n\nimage/jpeg\nTue, 27 Mar 2007 21:15:45 +0000\n/awsexamplebucket1/photos/puppy.jpg", "iqRzw+ileNPu1fhspnRs8nOjjIA="},
		{"list", "GET /awsexamplebucket1/?prefix=photos&max-keys=50&marker=puppy HTTP/1.1\nUser-Agent: Mozilla/5.0\nHost: s3.us-west-1.amazonaws.com\nDate: Tue, 27 Mar 2007 19:42:41 +0000",
			"Tue, 27 Mar 2007 19:42:41 +0000", "GET\n\n\nTue, 27 Mar 2007 19:42:41 +0000\n/awsexamplebucket1/", "m0WP8eCtspQl5Ahe6L1SozdX9YA="},
		{"fetch acl", "GET /awsexamplebucket1/?acl HTTP/1.1\nHost: s3.us-west-1.amazonaws.com\nDate: Tue, 27 Mar 2007 19:44:46 +0000",
			"Tue, 27 Mar 2007 19:44:46 +0000", "GET\n\n\nTue, 27 Mar 2007 19:44:46 +0000\n/awsexamplebucket1/?acl", "82ZHiFIjc+WbcwFKGUVEQspPn+0="},
		{"upload", "PUT /static.awsexamplebucket1.net/db-backup.dat.gz HTTP/1.1\nUser-Agent: curl/7.15.5\nHost: s3.us-west-1.amazonaws.com\nDate: Tue, 27 Mar 2007 21:06:08 +0000\n" +
			"x-amz-acl: public-read\ncontent-type: application/x-download\nContent-MD5: 4gJE4saaMU4BqNR0kLY+lw==\nX-Amz-Meta-ReviewedBy: joe@awsexamplebucket1.net\nX-Amz-Meta-ReviewedBy: jane@awsexamplebucket1.net\n" +
			"X-Amz-Meta-FileChecksum: 0x02661779\nX-Amz-Meta-ChecksumAlgorithm: crc32\nContent-Disposition: attachment; filename=database.dat\nContent-Encoding: gzip\nContent-Length: 5913339",
			"Tue, 27 Mar 2007 21:06:08 +0000", "PUT\n4gJE4saaMU4BqNR0kLY+lw==\napplication/x-download\nTue, 27 Mar 2007 21:06:08 +0000\nx-amz-acl:public-read\nx-amz-meta-checksumalgorithm:crc32\n" +
				"x-amz-meta-filechecksum:0x02661779\nx-amz-meta-reviewedby:joe@awsexamplebucket1.net,jane@awsexamplebucket1.net\n/static.awsexamplebucket1.net/db-backup.dat.gz", "dKZcB+bz2EPXgSdXZp9ozGeOM4I="},
		{"list all my buckets", "GET / HTTP/1.1\nHost: s3.us-west-1.amazonaws.com\nDate: Wed, 28 Mar 2007 01:29:59 +0000",
			"Wed, 28 Mar 2007 01:29:59 +0000", "GET\n\n\nWed, 28 Mar 2007 01:29:59 +0000\n/", "qGdzdERIC03wnaRNKh6OqZehG9s="},
		{"unicode keys", "GET /dictionary/fran%C3%A7ais/pr%c3%a9f%c3%a8re HTTP/1.1\nHost: s3.us-west-1.amazonaws.com\nDate: Wed, 28 Mar 2007 01:49:49 +0000",
			"Wed, 28 Mar 2007 01:49:49 +0000", "GET\n\n\nWed, 28 Mar 2007 01:49:49 +0000\n/dictionary/fran%C3%A7ais/pr%c3%a9f%c3%a8re", "DNEZGsoieTZ92F3bUfSPQcbGmlM="},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rawRequest(t, tc.request)
			sub, _ := sigV2Subresource(r.URL.RawQuery)
			if sts := sigV2StringToSign(r, tc.date, requestPaths(r)[0]+sub); sts != tc.sts {
				t.Fatalf("StringToSign\n%q, want\n%q", sts, tc.sts)
			}
			now, err := parseV2Date(tc.date)
			if err != nil {
				t.Fatal(err)
			}
			now = now.Add(time.Minute)
			r.Header.Set("Authorization", "AWS "+exampleAccess+":"+tc.sig)
			a, err := v2Handler(t, &now).authenticate(r)
			if err != nil || a.id.AccessKey != exampleAccess || a.payload != unsignedPayload {
				t.Fatalf("authenticate: %+v, %v", a, err)
			}
		})
	}

	// The query-string example (path style: the bucket is "johnsmith", as
	// in the signature AWS's page shows).
	const presigned = "GET /johnsmith/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires=1175139620 HTTP/1.1\nHost: s3.us-west-1.amazonaws.com"
	now := time.Unix(1175139620, 0)
	h := v2Handler(t, &now)
	if _, err := h.authenticate(rawRequest(t, presigned)); err != nil {
		t.Fatalf("presigned at its expiry: %v", err)
	}
	// A '+' sent unescaped (it decodes as a space) is taken as sent.
	if _, err := h.authenticate(rawRequest(t, strings.Replace(presigned, "%2B", "+", 1))); err != nil {
		t.Fatalf("presigned with a raw '+': %v", err)
	}
	now = now.Add(time.Second)
	if _, err := h.authenticate(rawRequest(t, presigned)); apiError(err) != ErrExpiredPresign {
		t.Fatalf("presigned a second after its expiry: %v", err)
	}
}

// Bad signatures, keys, dates and presign parameters are refused with
// S3's codes.
func TestSigV2Refused(t *testing.T) {
	const get = "GET /awsexamplebucket1/photos/puppy.jpg?acl HTTP/1.1\nHost: gw\nDate: Tue, 27 Mar 2007 19:36:42 +0000\nContent-Type: text/plain\nX-Amz-Meta-A: 1"
	now, _ := parseV2Date("Tue, 27 Mar 2007 19:36:42 +0000")
	h := v2Handler(t, &now)
	sign := func(r *http.Request, secret string) {
		sub, _ := sigV2Subresource(r.URL.RawQuery)
		date := r.Header.Get("Date")
		if r.Header.Get("X-Amz-Date") != "" {
			date = ""
		}
		sig := hmacSHA1(secret, sigV2StringToSign(r, date, requestPaths(r)[0]+sub))
		r.Header.Set("Authorization", "AWS "+exampleAccess+":"+base64.StdEncoding.EncodeToString(sig))
	}
	tests := []struct {
		name   string
		change func(r *http.Request) // after signing
		want   *Error                // nil: accepted
	}{
		{"as signed", func(*http.Request) {}, nil},
		{"a parameter that is no subresource", func(r *http.Request) { r.URL.RawQuery += "&prefix=x" }, nil},
		{"another subresource", func(r *http.Request) { r.URL.RawQuery = "policy" }, ErrSignatureDoesNotMatch},
		{"subresource dropped", func(r *http.Request) { r.URL.RawQuery = "" }, ErrSignatureDoesNotMatch},
		{"other path", func(r *http.Request) {
			r.RequestURI = "/awsexamplebucket1/photos/kitten.jpg?acl"
			r.URL.Path = "/awsexamplebucket1/photos/kitten.jpg"
		}, ErrSignatureDoesNotMatch},
		{"other content type", func(r *http.Request) { r.Header.Set("Content-Type", "text/html") }, ErrSignatureDoesNotMatch},
		{"an x-amz header added", func(r *http.Request) { r.Header.Set("X-Amz-Meta-B", "2") }, ErrSignatureDoesNotMatch},
		{"an x-amz value with inner spaces, signed as sent", func(r *http.Request) {
			r.Header.Set("X-Amz-Meta-A", "a  b")
			sign(r, exampleSecret)
		}, nil},
		{"an x-amz value's inner spaces changed", func(r *http.Request) {
			r.Header.Set("X-Amz-Meta-A", "a  b")
			sign(r, exampleSecret)
			r.Header.Set("X-Amz-Meta-A", "a b")
		}, ErrSignatureDoesNotMatch},
		{"other method", func(r *http.Request) { r.Method = "DELETE" }, ErrSignatureDoesNotMatch},
		{"wrong secret", func(r *http.Request) { sign(r, "not-the-secret") }, ErrSignatureDoesNotMatch},
		{"not base64", func(r *http.Request) { r.Header.Set("Authorization", "AWS "+exampleAccess+":!!!") }, ErrSignatureDoesNotMatch},
		{"unknown key", func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), exampleAccess, "AKIAUNKNOWN", 1))
		}, ErrInvalidAccessKeyID},
		{"no colon", func(r *http.Request) { r.Header.Set("Authorization", "AWS "+exampleAccess) }, ErrAuthHeaderMalformed},
		{"no date", func(r *http.Request) { r.Header.Del("Date"); sign(r, exampleSecret) }, ErrAccessDenied},
		{"skewed date", func(r *http.Request) {
			r.Header.Set("Date", now.Add(-20*time.Minute).Format(http.TimeFormat))
			sign(r, exampleSecret)
		}, ErrRequestTimeTooSkewed},
		{"x-amz-date", func(r *http.Request) {
			r.Header.Del("Date")
			r.Header.Set("X-Amz-Date", now.Format(time.RFC1123Z))
			sign(r, exampleSecret)
		}, nil},
		{"x-amz-date with Date, Date signed", func(r *http.Request) {
			r.Header.Set("X-Amz-Date", now.Format(time.RFC1123Z))
			sub, _ := sigV2Subresource(r.URL.RawQuery)
			sig := hmacSHA1(exampleSecret, sigV2StringToSign(r, r.Header.Get("Date"), requestPaths(r)[0]+sub))
			r.Header.Set("Authorization", "AWS "+exampleAccess+":"+base64.StdEncoding.EncodeToString(sig))
		}, nil},
		{"signed streaming payload", func(r *http.Request) {
			r.Header.Set("X-Amz-Content-Sha256", streamingPayload)
			sign(r, exampleSecret)
		}, ErrInvalidRequest},
		{"presign parameters too", func(r *http.Request) { r.URL.RawQuery += "&AWSAccessKeyId=" + exampleAccess }, ErrInvalidArgument},
		{"presigned without Expires", func(r *http.Request) {
			r.Header.Del("Authorization")
			r.URL.RawQuery = "AWSAccessKeyId=" + exampleAccess + "&Signature=x"
		}, ErrMissingV2Query},
		{"presigned with a bad Expires", func(r *http.Request) {
			r.Header.Del("Authorization")
			r.URL.RawQuery = "AWSAccessKeyId=" + exampleAccess + "&Signature=x&Expires=soon"
		}, ErrMissingV2Query},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rawRequest(t, get)
			sign(r, exampleSecret)
			tc.change(r)
			a, err := h.authenticate(r)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != nil && (err == nil || apiError(err) != tc.want):
				t.Fatalf("got %+v, %v; want %s", a, err, tc.want.Code)
			}
		})
	}
}

// minio-go signing with Signature V2 (its own signer, header and
// presigned) drives the gateway end to end: buckets, objects, ranges,
// listing, multipart, multi-delete, a presigned GET.
func TestSigV2Clients(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	mc, err := minio.New(strings.TrimPrefix(e.srv.URL, "http://"), &minio.Options{
		Creds: mcreds.NewStaticV2(testAccess, testSecret, ""), Region: testRegion,
		BucketLookup: minio.BucketLookupPath, MaxRetries: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.MakeBucket(ctx, "sigv2", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	small := randBytes(21, 3*stripe+5)
	if _, err := mc.PutObject(ctx, "sigv2", "dir/small ü+", bytes.NewReader(small), int64(len(small)), minio.PutObjectOptions{ContentType: "x/y"}); err != nil {
		t.Fatal(err)
	}
	big := randBytes(22, 11<<20) // multipart: 5 MiB parts
	if _, err := mc.PutObject(ctx, "sigv2", "big", bytes.NewReader(big), int64(len(big)), minio.PutObjectOptions{PartSize: 5 << 20}); err != nil {
		t.Fatal(err)
	}
	opts := minio.GetObjectOptions{}
	opts.SetRange(7, 99)
	obj, err := mc.GetObject(ctx, "sigv2", "dir/small ü+", opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	obj.Close()
	if err != nil || !bytes.Equal(got, small[7:100]) {
		t.Fatalf("range GET: %d bytes, %v", len(got), err)
	}
	var keys []string
	for o := range mc.ListObjects(ctx, "sigv2", minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
	}
	if strings.Join(keys, ",") != "big,dir/small ü+" {
		t.Fatalf("listing: %q", keys)
	}
	u, err := mc.PresignedGetObject(ctx, "sigv2", "big", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !u.Query().Has("AWSAccessKeyId") {
		t.Fatalf("not a SigV2 URL: %s", u)
	}
	resp, err := http.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, big) {
		t.Fatalf("presigned GET: %d, %d bytes", resp.StatusCode, len(got))
	}
	objs := make(chan minio.ObjectInfo, 2)
	objs <- minio.ObjectInfo{Key: "big"}
	objs <- minio.ObjectInfo{Key: "dir/small ü+"}
	close(objs)
	for err := range mc.RemoveObjects(ctx, "sigv2", objs, minio.RemoveObjectsOptions{}) {
		t.Fatal(err.Err)
	}
	if err := mc.RemoveBucket(ctx, "sigv2"); err != nil {
		t.Fatal(err)
	}
	// SigV2 sends no x-amz-content-sha256: every request had none.
	if m := e.payloadModes(); len(m) != 1 || m[""] == 0 {
		t.Fatalf("payload modes %v: not every request was SigV2", m)
	}
}
