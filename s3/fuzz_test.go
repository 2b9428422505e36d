package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/minio/minio-go/v7/pkg/signer"
)

func FuzzParseAuthHeader(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=AK/20250101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + strings.Repeat("ab", 32))
	f.Add("AWS4-HMAC-SHA256 Credential=a/b/c/d/e/f, SignedHeaders=, Signature=")
	f.Add("AWS AK:sig")
	f.Add("AWS4-HMAC-SHA256 ,,,==")
	f.Fuzz(func(t *testing.T, v string) {
		h, err := parseAuthHeader(v)
		if err != nil {
			return
		}
		if !validSignature(h.Signature) || h.AccessKey == "" || len(h.SignedHeaders) == 0 || h.Service != "s3" {
			t.Fatalf("accepted %q as %+v", v, h)
		}
	})
}

// Random headers never authenticate, and never panic. A request without
// an Authorization header or presign parameters is anonymous (bucket
// policies decide what it may do); one that carries either never is.
func FuzzAuthenticate(f *testing.F) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	good := "AWS4-HMAC-SHA256 Credential=" + testAccess + "/20250101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + strings.Repeat("0", 64)
	f.Add(good, "20250101T120000Z", emptySHA256, "/b/k?list-type=2")
	f.Add("", "", "", "/?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential="+testAccess+"%2F20250101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20250101T120000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature="+strings.Repeat("0", 64))
	f.Add(good, "garbage", "UNSIGNED-PAYLOAD", "/%zz")
	f.Add("AWS "+testAccess+":c2lnbmF0dXJlc2lnbmF0dXJlMTIzNA==", "Wed, 01 Jan 2025 12:00:00 GMT", "", "/b/k?acl&uploadId=1")
	f.Add("", "", "", "/b/k?AWSAccessKeyId="+testAccess+"&Expires=1735736400&Signature=c2lnbmF0dXJlc2lnbmF0dXJlMTIzNA%3D%3D")
	h, err := New(Config{Objects: nopObjects{}, Meta: nopMeta{}, Credentials: RootCredentials(testAccess, testSecret), Now: func() time.Time { return now }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, authz, date, sha, target string) {
		r, err := http.NewRequest("GET", "http://gw"+target, nil)
		if err != nil || !strings.HasPrefix(target, "/") {
			return
		}
		r.Header.Set("Authorization", authz)
		r.Header.Set("X-Amz-Date", date)
		r.Header.Set("X-Amz-Content-Sha256", sha)
		q := r.URL.Query()
		unsigned := r.Header.Get("Authorization") == "" && !q.Has("X-Amz-Algorithm") && !q.Has("X-Amz-Signature") &&
			!q.Has("X-Amz-Credential") && !q.Has("AWSAccessKeyId")
		if a, err := h.authenticate(r); err == nil {
			if !a.anonymous || !unsigned || a.id.Name != "" {
				t.Fatalf("authenticated %+v", a)
			}
		} else if apiError(err) == ErrInternal {
			t.Fatalf("auth failure is an internal error: %v", err)
		}
	})
}

func FuzzParseDeleteRequest(f *testing.F) {
	f.Add([]byte(`<Delete><Quiet>true</Quiet><Object><Key>a</Key></Object><Object><Key>b</Key><VersionId>null</VersionId></Object></Delete>`))
	f.Add([]byte(`<Delete><Object><Key>&amp;&lt;</Key></Object>`))
	f.Add([]byte(`<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><Delete><Object><Key>&a;</Key></Object></Delete>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseDeleteRequest(b)
		if err != nil {
			if apiError(err) != ErrMalformedXML {
				t.Fatalf("error %v is not MalformedXML", err)
			}
			return
		}
		if len(d.Objects) == 0 || len(d.Objects) > maxDeleteObjects {
			t.Fatalf("accepted %d objects", len(d.Objects))
		}
	})
}

func FuzzParseCreateBucket(f *testing.F) {
	f.Add([]byte(`<CreateBucketConfiguration><LocationConstraint>us-west-2</LocationConstraint></CreateBucketConfiguration>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c createBucketConfiguration
		if err := parseXML(b, &c); err != nil && apiError(err) != ErrMalformedXML {
			t.Fatal(err)
		}
	})
}

// The aws-chunked decoder never panics, never returns more bytes than the
// body holds, and accepts a signed body only if it is the one signed.
func FuzzChunkedReader(f *testing.F) {
	data := randBytes(1, 70_000)
	r, _ := http.NewRequest("PUT", "http://gw/b/k", bytes.NewReader(data))
	reqTime := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	r = signer.StreamingSignV4(r, testAccess, testSecret, "", testRegion, int64(len(data)), reqTime, sha256Hasher{sha256.New()})
	body, _ := io.ReadAll(r.Body)
	seed := r.Header.Get("Authorization")
	seed = seed[strings.LastIndex(seed, "=")+1:]
	f.Add(body, true)
	f.Add([]byte("5\r\nhello\r\n0\r\nx-amz-checksum-crc32:AAAA\r\n\r\n"), false)
	f.Add([]byte("fffffffffffffff;chunk-signature=zz\r\n"), true)
	f.Fuzz(func(t *testing.T, in []byte, signed bool) {
		a := &authResult{payload: streamingUnsignedTrailer}
		if signed {
			a = &authResult{payload: streamingPayload, signingKey: signingKey(testSecret, "20250101", testRegion, "s3"),
				amzDate: reqTime.Format(amzDateFormat), scope: "20250101/" + testRegion + "/s3/aws4_request", seedSig: seed}
		}
		out, err := io.ReadAll(newChunkedReader(bytes.NewReader(in), a))
		if len(out) > len(in) {
			t.Fatalf("decoded %d bytes from %d", len(out), len(in))
		}
		if signed && err == nil && !bytes.Equal(out, data) {
			t.Fatalf("accepted a signed body that was not signed (%d bytes)", len(out))
		}
	})
}

func FuzzParseRange(f *testing.F) {
	f.Add("bytes=0-10", int64(5))
	f.Add("bytes=-3", int64(0))
	f.Add("bytes=9223372036854775807-", int64(10))
	f.Fuzz(func(t *testing.T, v string, size int64) {
		if size < 0 {
			return
		}
		off, n, ok, err := parseRange(v, size)
		if ok && err == nil && (off < 0 || n <= 0 || off+n > size) {
			t.Fatalf("parseRange(%q, %d) = %d+%d", v, size, off, n)
		}
	})
}

// A request signed by aws-sdk-go-v2's signer (by header or presigned),
// then tampered with: an added or replaced header and extra query text.
// It may authenticate only if the query means the same and the header is
// not an x-amz-* header the signature leaves out (x-amz-content-sha256
// aside), and it never panics or fails as an internal error.
func FuzzSignedRequestTampered(f *testing.F) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	h, err := New(Config{Objects: nopObjects{}, Meta: nopMeta{}, Credentials: RootCredentials(testAccess, testSecret), Now: func() time.Time { return now }})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(false, "/b/k", "list-type=2&prefix=a", "X-Amz-Meta-Owner", "mallory", "")
	f.Add(true, "/b/k", "", "X-Amz-Copy-Source", "b/other", "")
	f.Add(false, "/b/k", "uploadId=1&partNumber=2", "X-Amzn-Trace-Id", "Root=1", "&")
	f.Add(true, "/b/k%20x", "versionId=null", "X-Amz-Date", "20250101T120000Z", "&prefix=z")
	f.Add(false, "/b/k", "", "X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD", "acl")
	f.Fuzz(func(t *testing.T, presign bool, path, query, name, value, extra string) {
		if !strings.HasPrefix(path, "/") {
			return
		}
		r, err := http.NewRequest("GET", "http://gw"+path+"?"+query, nil)
		if err != nil {
			return
		}
		r.Header.Set("X-Amz-Meta-Signed", "yes")
		creds := aws.Credentials{AccessKeyID: testAccess, SecretAccessKey: testSecret}
		s := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
		if presign {
			r.URL.RawQuery += "&X-Amz-Expires=60"
			u, hdr, err := s.PresignHTTP(context.Background(), creds, r, unsignedPayload, "s3", testRegion, now)
			if err != nil {
				return
			}
			if r, err = http.NewRequest("GET", u, nil); err != nil {
				return
			}
			r.Header = hdr
		} else {
			r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
			if err := s.SignHTTP(context.Background(), creds, r, emptySHA256, "s3", testRegion, now); err != nil {
				return
			}
		}
		if _, err := h.authenticate(r); err != nil {
			if plain(path) && plain(query) {
				t.Fatalf("a request signed by the SDK does not authenticate: %v", err)
			}
			return // the signer and the gateway may disagree on an odd path: not this target's concern
		}
		before := r.URL.Query()
		lname := strings.ToLower(name)
		wasSigned := r.Header.Get(name) != "" || strings.EqualFold(name, "host")
		r.Header.Set(name, value)
		if extra != "" {
			r.URL.RawQuery += "&" + extra
		}
		a, err := h.authenticate(r)
		if err != nil {
			if apiError(err) == ErrInternal {
				t.Fatalf("auth failure is an internal error: %v", err)
			}
			return
		}
		if !maps.EqualFunc(before, r.URL.Query(), slices.Equal) {
			t.Fatalf("authenticated with the query changed from %v to %v", before, r.URL.Query())
		}
		if strings.HasPrefix(lname, "x-amz-") && lname != "x-amz-content-sha256" && !wasSigned && !slices.Contains(a.signed, lname) {
			t.Fatalf("authenticated with the unsigned header %s: %q", name, value)
		}
	})
}

// plain: only characters no signer escapes or normalizes differently.
func plain(s string) bool {
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789/=&-") == "" && !strings.Contains(s, "//") && !strings.Contains(s, "&&") && !strings.HasPrefix(s, "=") && !strings.Contains(s, "&=")
}

// The XML bodies of CompleteMultipartUpload and PutBucketEncryption never
// panic the decoder, and any failure is MalformedXML.
func FuzzParseXMLBodies(f *testing.F) {
	f.Add([]byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"e"</ETag></Part></CompleteMultipartUpload>`), false)
	f.Add([]byte(`<CompleteMultipartUpload><Part><PartNumber>99999999999999999999</PartNumber></Part>`), false)
	f.Add([]byte(`<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>`), true)
	f.Fuzz(func(t *testing.T, b []byte, sse bool) {
		var v any = &completeRequest{}
		if sse {
			v = &sseConfig{}
		}
		if err := parseXML(b, v); err != nil && apiError(err) != ErrMalformedXML {
			t.Fatalf("error %v is not MalformedXML", err)
		}
	})
}
