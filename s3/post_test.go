package s3

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/minio-go/v7"
	mcreds "github.com/minio/minio-go/v7/pkg/credentials"
)

// postForm builds a multipart form: the fields in the given order, then
// the file (named filename) unless file is nil, then the trailing fields.
func postFormBody(t *testing.T, fields [][2]string, filename string, file []byte, trailing ...[2]string) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	if file != nil {
		fw, err := mw.CreateFormFile("file", filename)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(file)
	}
	for _, f := range trailing {
		mw.WriteField(f[0], f[1])
	}
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

// post sends a form upload to bucket without following redirects.
func (e *env) post(t *testing.T, bucket, contentType string, body []byte) s3Response {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, e.srv.URL+"/"+bucket, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", contentType)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	return readResponse(t, resp)
}

// fieldList orders a presigner's fields (maps have no order; the file
// comes after all of them anyway).
func fieldList(m map[string]string) [][2]string {
	var out [][2]string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		out = append(out, [2]string{k, m[k]})
	}
	return out
}

// TestPostObjectAWSPresigner: a form signed by aws-sdk-go-v2's
// PresignPostObject uploads the file; the same form with its policy
// tampered with is refused and stores nothing.
func TestPostObjectAWSPresigner(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(t, "forms")
	pc := s3.NewPresignClient(e.root())
	pre, err := pc.PresignPostObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("forms"), Key: aws.String("up/a.bin")},
		func(o *s3.PresignPostOptions) {
			o.Expires = 10 * time.Minute
			o.Conditions = []any{[]any{"content-length-range", 1, 100000}}
		})
	if err != nil {
		t.Fatal(err)
	}
	data := randBytes(1, 3*stripe+17)
	ct, body := postFormBody(t, fieldList(pre.Values), "local.bin", data)
	if got := e.post(t, "forms", ct, body); got.status != http.StatusNoContent {
		t.Fatalf("POST: %d %s %s", got.status, got.code, got.message)
	}
	got, _ := getBytes(t, e.root(), "forms", "up/a.bin", "")
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes back, want the %d posted", len(got), len(data))
	}

	// Tampered: the key condition widened to anything, the signature kept.
	var doc map[string]any
	raw, _ := base64.StdEncoding.DecodeString(pre.Values["policy"])
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["conditions"] = append(doc["conditions"].([]any), []any{"starts-with", "$key", ""})
	raw, _ = json.Marshal(doc)
	bad := maps2(pre.Values)
	bad["policy"] = base64.StdEncoding.EncodeToString(raw)
	bad["key"] = "elsewhere"
	ct, body = postFormBody(t, fieldList(bad), "x", []byte("evil"))
	if got := e.post(t, "forms", ct, body); got.status != http.StatusForbidden || got.code != "SignatureDoesNotMatch" {
		t.Fatalf("tampered policy: %d %s %s", got.status, got.code, got.message)
	}
	if _, err := e.root().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("forms"), Key: aws.String("elsewhere")}); err == nil {
		t.Fatal("a tampered form stored its file")
	}
}

func maps2(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestPostObjectMinio: minio-go's PresignedPostPolicy (Signature V4 and
// V2) with a key prefix, Content-Type, user metadata and
// success_action_status 201; ${filename} names the object after the file.
func TestPostObjectMinio(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		name := map[bool]string{false: "v4", true: "v2"}[v2]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.mkBucket(t, "forms")
			creds := mcreds.NewStaticV4(testAccess, testSecret, "")
			if v2 {
				creds = mcreds.NewStaticV2(testAccess, testSecret, "")
			}
			mc, err := minio.New(strings.TrimPrefix(e.srv.URL, "http://"), &minio.Options{Creds: creds, Region: testRegion, BucketLookup: minio.BucketLookupPath})
			if err != nil {
				t.Fatal(err)
			}
			p := minio.NewPostPolicy()
			for _, err := range []error{
				p.SetBucket("forms"), p.SetKeyStartsWith("user/"), p.SetExpires(time.Now().Add(time.Hour)),
				p.SetContentType("text/plain"), p.SetUserMetadata("owner", "ann"), p.SetSuccessStatusAction("201"),
				p.SetContentLengthRange(1, 1<<20),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
			u, fd, err := mc.PresignedPostPolicy(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if u.Path != "/forms/" && u.Path != "/forms" {
				t.Fatalf("presigned URL %s", u)
			}
			fd["key"] = "user/${filename}"
			ct, body := postFormBody(t, fieldList(fd), "notes.txt", []byte("hello form"), [2]string{"x-amz-meta-late", "ignored"})
			got := e.post(t, "forms", ct, body)
			if got.status != http.StatusCreated {
				t.Fatalf("POST: %d %s %s", got.status, got.code, got.message)
			}
			var pr postResponse
			if err := xml.Unmarshal([]byte(got.body), &pr); err != nil {
				t.Fatal(err)
			}
			if pr.Bucket != "forms" || pr.Key != "user/notes.txt" || pr.ETag != got.header.Get("ETag") || !strings.HasSuffix(pr.Location, "/forms/user/notes.txt") {
				t.Fatalf("PostResponse %+v, ETag header %s", pr, got.header.Get("ETag"))
			}
			b, out := getBytes(t, e.root(), "forms", "user/notes.txt", "")
			if string(b) != "hello form" || aws.ToString(out.ContentType) != "text/plain" || out.Metadata["owner"] != "ann" || out.Metadata["late"] != "" {
				t.Fatalf("stored %q type %q meta %v", b, aws.ToString(out.ContentType), out.Metadata)
			}
		})
	}
}

// signedForm returns the fields of a Signature V4 form with policy doc
// (JSON), signed with the test secret, plus extra.
func signedForm(t *testing.T, doc string, extra ...[2]string) [][2]string {
	t.Helper()
	now := time.Now().UTC()
	date := now.Format(scopeDateFormat)
	cred := testAccess + "/" + date + "/" + testRegion + "/s3/aws4_request"
	policy := base64.StdEncoding.EncodeToString([]byte(doc))
	sig := hex.EncodeToString(hmacSHA256(signingKey(testSecret, date, testRegion, "s3"), policy))
	fields := [][2]string{
		{"key", "k"}, {"x-amz-algorithm", sigV4Algorithm}, {"x-amz-credential", cred},
		{"x-amz-date", now.Format(amzDateFormat)}, {"policy", policy}, {"x-amz-signature", sig},
	}
	return append(fields, extra...)
}

// basicConditions covers the fields signedForm always sends.
const basicConditions = `{"bucket":"forms"},["eq","$key","k"],["starts-with","$x-amz-algorithm",""],["starts-with","$x-amz-credential",""],["starts-with","$x-amz-date",""]`

// TestPostObjectRefused: each way a form fails, with S3's code and
// message, and none of them stores the file.
func TestPostObjectRefused(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(t, "forms")
	future := time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
	past := time.Now().Add(-time.Minute).UTC().Format("2006-01-02T15:04:05.000Z")
	doc := func(exp, extra string) string {
		return `{"expiration":"` + exp + `","conditions":[` + basicConditions + extra + `]}`
	}
	tests := []struct {
		name          string
		fields        [][2]string
		file          []byte
		status        int
		code, message string
	}{
		{"expired", signedForm(t, doc(past, "")), []byte("x"), 403, "AccessDenied", "Invalid according to Policy: Policy expired."},
		{"condition", signedForm(t, doc(future, `,["starts-with","$Content-Type","image/"]`), [2]string{"Content-Type", "text/html"}), []byte("x"),
			403, "AccessDenied", `Invalid according to Policy: Policy Condition failed: ["starts-with","$Content-Type","image/"]`},
		{"extra field", signedForm(t, doc(future, ""), [2]string{"x-amz-meta-sneaky", "1"}), []byte("x"),
			403, "AccessDenied", "Invalid according to Policy: Extra input fields: x-amz-meta-sneaky"},
		{"too large", signedForm(t, doc(future, `,["content-length-range",1,10]`)), []byte("eleven bytes"),
			400, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size"},
		{"too small", signedForm(t, doc(future, `,["content-length-range",5,10]`)), []byte("four"),
			400, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size"},
		{"bad signature", append(signedForm(t, doc(future, ""))[:5], [2]string{"x-amz-signature", strings.Repeat("0", 64)}), []byte("x"),
			403, "SignatureDoesNotMatch", ""},
		{"anonymous", [][2]string{{"key", "k"}}, []byte("x"), 403, "AccessDenied", ""},
		{"no file", signedForm(t, doc(future, "")), nil, 400, "InvalidArgument", ""},
		{"bad json", signedForm(t, `{"expiration":`), []byte("x"), 400, "InvalidPolicyDocument", ""},
		{"no expiration", signedForm(t, `{"conditions":[]}`), []byte("x"), 400, "InvalidPolicyDocument", ""},
		{"fields too large", signedForm(t, doc(future, ""), [2]string{"x-ignore-pad", strings.Repeat("p", maxPostFields)}), []byte("x"),
			400, "MaxPostPreDataLengthExceeded", ""},
		{"checksum mismatch", signedForm(t, doc(future, `,["starts-with","$x-amz-checksum-sha256",""]`),
			[2]string{"x-amz-checksum-sha256", base64.StdEncoding.EncodeToString(make([]byte, 32))}), []byte("x"), 400, "BadDigest", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ct, body := postFormBody(t, tc.fields, "f", tc.file)
			got := e.post(t, "forms", ct, body)
			if got.status != tc.status || got.code != tc.code || (tc.message != "" && got.message != tc.message) {
				t.Fatalf("got %d %s %q, want %d %s %q", got.status, got.code, got.message, tc.status, tc.code, tc.message)
			}
			if _, err := e.root().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("forms"), Key: aws.String("k")}); err == nil {
				t.Fatal("a refused form stored its file")
			}
		})
	}
}

// TestPostObjectRedirectAndFields: success_action_redirect answers 303
// with bucket, key and etag; tagging (XML), a checksum and a storage
// class field apply to the stored object as their PutObject headers do.
func TestPostObjectRedirectAndFields(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(t, "forms")
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	tags := `<Tagging><TagSet><Tag><Key>team</Key><Value>web</Value></Tag></TagSet></Tagging>`
	data := []byte("tagged and summed")
	sum := sha256Sum(data)
	doc := `{"expiration":"` + future + `","conditions":[` + basicConditions +
		`,["starts-with","$success_action_redirect","https://app.example/"],{"tagging":` + jsonString(tags) + `},["eq","$x-amz-checksum-sha256","` + sum + `"]]}`
	fields := signedForm(t, doc, [2]string{"success_action_redirect", "https://app.example/done?x=1"},
		[2]string{"tagging", tags}, [2]string{"x-amz-checksum-sha256", sum})
	ct, body := postFormBody(t, fields, "f", data)
	got := e.post(t, "forms", ct, body)
	if got.status != http.StatusSeeOther {
		t.Fatalf("POST: %d %s %s", got.status, got.code, got.message)
	}
	loc, err := url.Parse(got.header.Get("Location"))
	if err != nil || loc.Host != "app.example" || loc.Query().Get("x") != "1" || loc.Query().Get("bucket") != "forms" ||
		loc.Query().Get("key") != "k" || loc.Query().Get("etag") != got.header.Get("ETag") {
		t.Fatalf("Location %q (ETag %s)", got.header.Get("Location"), got.header.Get("ETag"))
	}
	tg, err := e.root().GetObjectTagging(context.Background(), &s3.GetObjectTaggingInput{Bucket: aws.String("forms"), Key: aws.String("k")})
	if err != nil || len(tg.TagSet) != 1 || aws.ToString(tg.TagSet[0].Key) != "team" {
		t.Fatalf("tags %+v %v", tg, err)
	}
	h, err := e.root().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("forms"), Key: aws.String("k"), ChecksumMode: "ENABLED"})
	if err != nil || aws.ToString(h.ChecksumSHA256) != sum {
		t.Fatalf("checksum %v %v", h, err)
	}
}

func sha256Sum(b []byte) string {
	s := sha256Hex(string(b))
	raw, _ := hex.DecodeString(s)
	return base64.StdEncoding.EncodeToString(raw)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestPostPolicyCheck: the pure policy checks, one table.
func TestPostPolicyCheck(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	enc := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name   string
		doc    string
		fields map[string]string
		err    string // "" ok; else a substring of the error
	}{
		{"eq object", `{"expiration":"2026-05-02T00:00:00Z","conditions":[{"acl":"private"}]}`, map[string]string{"acl": "private"}, ""},
		{"eq object fails", `{"expiration":"2026-05-02T00:00:00Z","conditions":[{"acl":"private"}]}`, map[string]string{"acl": "public-read"}, `Policy Condition failed: {"acl":"private"}`},
		{"field names fold case", `{"expiration":"2026-05-02T00:00:00.000Z","conditions":[["eq","$Content-Type","a/b"]]}`, map[string]string{"content-type": "a/b"}, ""},
		{"starts-with empty", `{"expiration":"2026-05-02T00:00:00Z","conditions":[["starts-with","$key",""]]}`, map[string]string{"key": "any"}, ""},
		{"content types each", `{"expiration":"2026-05-02T00:00:00Z","conditions":[["starts-with","$content-type","image/"]]}`, map[string]string{"content-type": "image/png, text/html"}, "Condition failed"},
		{"missing field fails eq", `{"expiration":"2026-05-02T00:00:00Z","conditions":[["eq","$x-amz-meta-a","1"]]}`, map[string]string{}, "Condition failed"},
		{"expired at the instant", `{"expiration":"2026-05-01T12:00:00Z","conditions":[]}`, nil, "Policy expired."},
		{"ignored and exempt fields", `{"expiration":"2026-05-02T00:00:00Z","conditions":[]}`, map[string]string{"x-ignore-a": "1", "policy": "p", "x-amz-signature": "s", "file": "", "bucket": "b"}, ""},
		{"bad range", `{"expiration":"2026-05-02T00:00:00Z","conditions":[["content-length-range",10,1]]}`, nil, "content-length-range"},
		{"range as strings", `{"expiration":"2026-05-02T00:00:00Z","conditions":[["content-length-range","1","10"]]}`, nil, ""},
		{"unknown op", `{"expiration":"2026-05-02T00:00:00Z","conditions":[["matches","$key","x"]]}`, nil, "unknown operation"},
		{"no conditions", `{"expiration":"2026-05-02T00:00:00Z"}`, nil, "missing conditions"},
		{"bad expiration", `{"expiration":"tomorrow","conditions":[]}`, nil, "expiration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parsePostPolicy(enc(tc.doc))
			if err == nil {
				err = p.check(now, tc.fields)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("got %v, want an error with %q", err, tc.err)
			}
		})
	}
	p, err := parsePostPolicy(enc(`{"expiration":"2026-05-02T00:00:00Z","conditions":[["content-length-range",3,9]]}`))
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := p.lengthRange(); lo != 3 || hi != 9 {
		t.Fatalf("range %d-%d", lo, hi)
	}
}

// TestPostObjectLock: a form's x-amz-object-lock-* fields lock the
// version as PutObject's headers do, and, as there, need a checksum
// field (without one: InvalidRequest, nothing stored).
func TestPostObjectLock(t *testing.T) {
	e := newEnv(t)
	e.mkLockBucket(t, "locks")
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	until := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	data := []byte("kept for two days")
	sum := sha256Sum(data)
	conds := `{"bucket":"locks"},["eq","$key","k"],["starts-with","$x-amz-algorithm",""],["starts-with","$x-amz-credential",""],["starts-with","$x-amz-date",""]` +
		`,["starts-with","$x-amz-object-lock-mode",""],["starts-with","$x-amz-object-lock-retain-until-date",""],["starts-with","$x-amz-checksum-sha256",""]`
	doc := `{"expiration":"` + future + `","conditions":[` + conds + `]}`
	lock := [][2]string{{"x-amz-object-lock-mode", "COMPLIANCE"}, {"x-amz-object-lock-retain-until-date", until}}
	ct, body := postFormBody(t, signedForm(t, doc, lock...), "f", data)
	if got := e.post(t, "locks", ct, body); got.status != http.StatusBadRequest || got.code != "InvalidRequest" {
		t.Fatalf("a lock without a checksum: %d %s %s", got.status, got.code, got.message)
	}
	ct, body = postFormBody(t, signedForm(t, doc, append(lock, [2]string{"x-amz-checksum-sha256", sum})...), "f", data)
	if got := e.post(t, "locks", ct, body); got.status != http.StatusNoContent {
		t.Fatalf("POST: %d %s %s", got.status, got.code, got.message)
	}
	h, err := e.root().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("locks"), Key: aws.String("k")})
	if err != nil || h.ObjectLockMode != "COMPLIANCE" || aws.ToTime(h.ObjectLockRetainUntilDate).UTC().Format(time.RFC3339) != until {
		t.Fatalf("head: %+v, %v", h, err)
	}
}
