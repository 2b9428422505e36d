package s3

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"

	"cairn"
	"cairn/access"
	"cairn/client"
	"cairn/client/clienttest"
	"cairn/meta/mem"
)

func (nopMeta) UpdateBucketAccess(context.Context, string, func(*cairn.BucketAccess) (*cairn.BucketAccess, error)) error {
	return cairn.ErrNotFound
}

// accessEnv is a gateway with root and three users: alice owns the
// buckets of these tests, bob and carol are other users of the store.
type accessEnv struct {
	*env
	alice, bob, carol *s3.Client
}

func newAccessEnv(t *testing.T) accessEnv {
	t.Helper()
	creds := StaticCredentials{
		testAccess:  {Name: "root", AccessKey: testAccess, SecretKey: testSecret, Root: true},
		"AKIAALICE": {Name: "alice", AccessKey: "AKIAALICE", SecretKey: "alice-secret"},
		"AKIABOB":   {Name: "bob", AccessKey: "AKIABOB", SecretKey: "bob-secret"},
		"AKIACAROL": {Name: "carol", AccessKey: "AKIACAROL", SecretKey: "carol-secret"},
	}
	e := newEnvWith(t, creds)
	return accessEnv{env: e, alice: e.aws("AKIAALICE", "alice-secret"), bob: e.aws("AKIABOB", "bob-secret"), carol: e.aws("AKIACAROL", "carol-secret")}
}

// anon sends an unsigned request, as curl or a browser would.
func (e *env) anon(t *testing.T, method, path string, body []byte) s3Response {
	t.Helper()
	r, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return send(t, r)
}

// put stores key in bucket with c.
func put(t *testing.T, c *s3.Client, bucket, key, body string, acl types.ObjectCannedACL) {
	t.Helper()
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: strings.NewReader(body), ACL: acl}); err != nil {
		t.Fatalf("PutObject %s/%s: %v", bucket, key, err)
	}
}

func wantAnon(t *testing.T, got s3Response, status int, body string) {
	t.Helper()
	if got.status != status || (status == http.StatusOK && got.body != body) || (status == http.StatusForbidden && got.code != "AccessDenied") {
		t.Fatalf("anonymous request: %d %s %q, want %d %q", got.status, got.code, got.body, status, body)
	}
}

// TestPolicyAnonymousRead is issue #16's acceptance: a bucket policy
// granting anonymous s3:GetObject on public/* lets an unsigned GET read
// public/x and refuses private/x; a presigned URL of another user reads
// public/x too; removing the policy closes the bucket again.
func TestPolicyAnonymousRead(t *testing.T) {
	e := newAccessEnv(t)
	ctx := context.Background()
	if _, err := e.alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("site")}); err != nil {
		t.Fatal(err)
	}
	put(t, e.alice, "site", "public/x", "hello world", "")
	put(t, e.alice, "site", "private/x", "secret", "")

	wantAnon(t, e.anon(t, "GET", "/site/public/x", nil), http.StatusForbidden, "")
	_, err := e.alice.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String("site")})
	wantCode(t, err, "NoSuchBucketPolicy")
	_, err = e.alice.GetBucketPolicyStatus(ctx, &s3.GetBucketPolicyStatusInput{Bucket: aws.String("site")})
	wantCode(t, err, "NoSuchBucketPolicy")

	const policy = `{"Version":"2012-10-17","Statement":[{"Sid":"PublicRead","Effect":"Allow","Principal":"*",` +
		`"Action":"s3:GetObject","Resource":"arn:aws:s3:::site/public/*"}]}`
	if _, err := e.alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("site"), Policy: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	wantAnon(t, e.anon(t, "GET", "/site/public/x", nil), http.StatusOK, "hello world")
	wantAnon(t, e.anon(t, "HEAD", "/site/public/x", nil), http.StatusOK, "")
	wantAnon(t, e.anon(t, "GET", "/site/private/x", nil), http.StatusForbidden, "")
	wantAnon(t, e.anon(t, "GET", "/site/public/missing", nil), http.StatusForbidden, "")   // no ListBucket: a missing key is not told
	wantAnon(t, e.anon(t, "GET", "/site", nil), http.StatusForbidden, "")                  // no ListBucket
	wantAnon(t, e.anon(t, "PUT", "/site/public/y", []byte("z")), http.StatusForbidden, "") // no PutObject
	wantAnon(t, e.anon(t, "DELETE", "/site/public/x", nil), http.StatusForbidden, "")
	wantAnon(t, e.anon(t, "GET", "/", nil), http.StatusForbidden, "") // no anonymous ListBuckets
	if got := e.anon(t, "GET", "/nosuch/public/x", nil); got.code != "NoSuchBucket" {
		t.Fatalf("anonymous GET of a missing bucket: %d %s", got.status, got.code)
	}

	// Another user reads through the same grant to "*", here by a
	// presigned URL, and nothing else.
	pre, err := s3.NewPresignClient(e.bob).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("site"), Key: aws.String("public/x")})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(pre.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "hello world" {
		t.Fatalf("bob's presigned GET: %d %q", resp.StatusCode, b)
	}
	_, err = e.bob.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("site"), Key: aws.String("private/x")})
	wantCode(t, err, "AccessDenied")

	got, err := e.alice.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String("site")})
	if err != nil || aws.ToString(got.Policy) != policy {
		t.Fatalf("GetBucketPolicy: %v %q", err, aws.ToString(got.Policy))
	}
	st, err := e.alice.GetBucketPolicyStatus(ctx, &s3.GetBucketPolicyStatusInput{Bucket: aws.String("site")})
	if err != nil || !aws.ToBool(st.PolicyStatus.IsPublic) {
		t.Fatalf("GetBucketPolicyStatus: %v %+v", err, st)
	}

	// Only the owner manages the policy.
	_, err = e.bob.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("site"), Policy: aws.String(policy)})
	wantCode(t, err, "AccessDenied")
	_, err = e.bob.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String("site")})
	wantCode(t, err, "AccessDenied")
	_, err = e.bob.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String("site")})
	wantCode(t, err, "AccessDenied")

	// Whoever may list the bucket learns that a key is missing.
	listable := strings.Replace(policy, `]}`, `,{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::site"}]}`, 1)
	if _, err := e.alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("site"), Policy: aws.String(listable)}); err != nil {
		t.Fatal(err)
	}
	if got := e.anon(t, "GET", "/site/public/missing", nil); got.code != "NoSuchKey" {
		t.Fatalf("anonymous GET of a missing key, with ListBucket: %d %s", got.status, got.code)
	}

	if _, err := e.alice.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String("site")}); err != nil {
		t.Fatal(err)
	}
	wantAnon(t, e.anon(t, "GET", "/site/public/x", nil), http.StatusForbidden, "")
	_, err = e.alice.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String("site")})
	wantCode(t, err, "NoSuchBucketPolicy")
}

func TestPolicyMalformed(t *testing.T) {
	e := newAccessEnv(t)
	ctx := context.Background()
	if _, err := e.alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bkt")}); err != nil {
		t.Fatal(err)
	}
	for doc, reason := range map[string]string{
		`not json`: "Policies must be valid JSON and the first byte must be '{'",
		`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::other/*"}]}`: "Policy has invalid resource",
		`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt"}]}`:     "Action does not apply to any resource(s) in statement",
		`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:Fly","Resource":"arn:aws:s3:::bkt/*"}]}`:         "Policy has invalid action",
		`{"Id":"` + strings.Repeat("x", 20<<10) + `"}`:                                                                 "Policy exceeds the maximum allowed document size.",
	} {
		_, err := e.alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("bkt"), Policy: aws.String(doc)})
		wantCode(t, err, "MalformedPolicy")
		if !strings.Contains(err.Error(), reason) {
			t.Errorf("PutBucketPolicy(%.40s): %v, want reason %q", doc, err, reason)
		}
	}
	_, err := e.alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("nosuch"), Policy: aws.String(`{}`)})
	wantCode(t, err, "NoSuchBucket")
}

// TestPolicyCrossUser: a policy naming bob lets bob in where it says and
// nowhere else; carol stays out; an explicit Deny binds even the owner,
// who keeps the right to change the policy.
func TestPolicyCrossUser(t *testing.T) {
	e := newAccessEnv(t)
	ctx := context.Background()
	if _, err := e.alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("team")}); err != nil {
		t.Fatal(err)
	}
	put(t, e.alice, "team", "shared/a", "A", "")
	put(t, e.alice, "team", "keep/b", "B", "")
	policy := `{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bob"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::team",
	   "Condition":{"StringLike":{"s3:prefix":"shared/*"}}},
	  {"Effect":"Allow","Principal":{"AWS":["arn:aws:iam:::user/bob"]},"Action":["s3:GetObject","s3:PutObject","s3:DeleteObject"],"Resource":"arn:aws:s3:::team/shared/*"},
	  {"Effect":"Deny","Principal":"*","Action":"s3:DeleteObject","Resource":"arn:aws:s3:::team/keep/*"}
	]}`
	if _, err := e.alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("team"), Policy: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	_, err := e.bob.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("team"), Key: aws.String("shared/missing")})
	wantCode(t, err, "AccessDenied") // bob may list only with a prefix
	l, err := e.bob.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("team"), Prefix: aws.String("shared/")})
	if err != nil || len(l.Contents) != 1 || aws.ToString(l.Contents[0].Key) != "shared/a" {
		t.Fatalf("bob lists shared/: %v %+v", err, l)
	}
	_, err = e.bob.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("team")})
	wantCode(t, err, "AccessDenied")
	put(t, e.bob, "team", "shared/from-bob", "hi", "")
	_, err = e.bob.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("team"), Key: aws.String("keep/c"), Body: strings.NewReader("x")})
	wantCode(t, err, "AccessDenied")
	if _, err := e.bob.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("team"), Key: aws.String("shared/a")}); err != nil {
		t.Fatal(err)
	}
	_, err = e.carol.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("team")})
	wantCode(t, err, "AccessDenied")
	// A copy needs s3:GetObject on its source: bob may copy shared/a to
	// shared/, not keep/b.
	if _, err := e.bob.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("team"), Key: aws.String("shared/copy"), CopySource: aws.String("team/shared/a")}); err != nil {
		t.Fatal(err)
	}
	_, err = e.bob.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("team"), Key: aws.String("shared/copy2"), CopySource: aws.String("team/keep/b")})
	wantCode(t, err, "AccessDenied")
	// Multi-delete is checked key by key.
	out, err := e.bob.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("team"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("shared/copy")}, {Key: aws.String("keep/b")}}}})
	if err != nil || len(out.Deleted) != 1 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].Code) != "AccessDenied" {
		t.Fatalf("bob's DeleteObjects: %v %+v", err, out)
	}
	// Carol is named nowhere; bob cannot reach alice's bucket's settings.
	_, err = e.carol.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("team"), Key: aws.String("shared/a")})
	wantCode(t, err, "AccessDenied")
	_, err = e.bob.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String("team")})
	wantCode(t, err, "AccessDenied")
	_, err = e.bob.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("team")})
	wantCode(t, err, "AccessDenied")
	if bs, err := e.bob.ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil || len(bs.Buckets) != 0 {
		t.Fatalf("bob's ListBuckets: %v %+v", err, bs)
	}

	// The Deny binds the owner too; the owner can still lift it.
	_, err = e.alice.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("team"), Key: aws.String("keep/b")})
	wantCode(t, err, "AccessDenied")
	out, err = e.alice.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("team"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("keep/b")}}}})
	if err != nil || len(out.Errors) != 1 || aws.ToString(out.Errors[0].Code) != "AccessDenied" {
		t.Fatalf("alice's DeleteObjects of a denied key: %v %+v", err, out)
	}
	if _, err := e.alice.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String("team")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.alice.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("team"), Key: aws.String("keep/b")}); err != nil {
		t.Fatal(err)
	}
	_, err = e.bob.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("team"), Key: aws.String("shared/a")})
	wantCode(t, err, "AccessDenied")
}

// TestPolicyConditions: conditions see the request: an anonymous listing
// allowed only for a prefix, and writes refused over plain HTTP.
func TestPolicyConditions(t *testing.T) {
	e := newAccessEnv(t)
	ctx := context.Background()
	if _, err := e.alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("cond")}); err != nil {
		t.Fatal(err)
	}
	put(t, e.alice, "cond", "pub/a", "A", "")
	put(t, e.alice, "cond", "site/logo.png", "logo", "")
	policy := `{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::cond/site/*",
	   "Condition":{"StringLike":{"aws:Referer":["https://www.example.com/*"]}}},
	  {"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::cond",
	   "Condition":{"StringEquals":{"s3:prefix":"pub/"},"NumericLessThanEquals":{"s3:max-keys":"100"},"IpAddress":{"aws:SourceIp":["127.0.0.0/8","::1/128"]}}},
	  {"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bob"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::cond/*"},
	  {"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::cond/*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}
	]}`
	if _, err := e.alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("cond"), Policy: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	if got := e.anon(t, "GET", "/cond?list-type=2&prefix=pub/&max-keys=10", nil); got.status != http.StatusOK || !strings.Contains(got.body, "<Key>pub/a</Key>") {
		t.Fatalf("anonymous listing of pub/: %d %s", got.status, got.body)
	}
	wantAnon(t, e.anon(t, "GET", "/cond?list-type=2&prefix=pub/&max-keys=1000", nil), http.StatusForbidden, "")
	wantAnon(t, e.anon(t, "GET", "/cond?list-type=2&prefix=other/", nil), http.StatusForbidden, "")
	wantAnon(t, e.anon(t, "GET", "/cond?list-type=2", nil), http.StatusForbidden, "")
	// The hotlink guard of a static site: only pages of the site may embed.
	wantAnon(t, e.anon(t, "GET", "/cond/site/logo.png", nil), http.StatusForbidden, "")
	r, _ := http.NewRequest("GET", e.srv.URL+"/cond/site/logo.png", nil)
	r.Header.Set("Referer", "https://www.example.com/index.html")
	wantAnon(t, send(t, r), http.StatusOK, "logo")
	// The gateway here serves plain HTTP: the Deny on insecure writes
	// stops bob and the owner alike.
	_, err := e.bob.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cond"), Key: aws.String("x"), Body: strings.NewReader("x")})
	wantCode(t, err, "AccessDenied")
	_, err = e.alice.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cond"), Key: aws.String("x"), Body: strings.NewReader("x")})
	wantCode(t, err, "AccessDenied")
}

// TestCannedACLs: x-amz-acl on CreateBucket and PutObject, the ACL
// operations in canned, grant-header and XML form, and what each grants.
// TestBlockPublicAccess: each of the four settings, with S3's errors.
// TestMayBypassGovernance: the hook object lock asks before honouring
// x-amz-bypass-governance-retention.
func TestMayBypassGovernance(t *testing.T) {
	e := newAccessEnv(t)
	ctx := context.Background()
	if _, err := e.alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("locked")}); err != nil {
		t.Fatal(err)
	}
	policy := `{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bob"},"Action":"s3:BypassGovernanceRetention","Resource":"arn:aws:s3:::locked/tmp/*"},
	  {"Effect":"Deny","Principal":{"AWS":"arn:aws:iam:::user/alice"},"Action":"s3:BypassGovernanceRetention","Resource":"arn:aws:s3:::locked/audit/*"}
	]}`
	if _, err := e.alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("locked"), Policy: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	ident := map[string]*authResult{
		"root": {id: Identity{Name: "root", Root: true}}, "alice": {id: Identity{Name: "alice"}},
		"bob": {id: Identity{Name: "bob"}}, "carol": {id: Identity{Name: "carol"}}, "anonymous": {anonymous: true},
	}
	for _, tt := range []struct {
		who, key string
		want     bool
	}{
		{"root", "audit/x", true}, {"alice", "tmp/x", true}, {"alice", "audit/x", false},
		{"bob", "tmp/x", true}, {"bob", "audit/x", false}, {"carol", "tmp/x", false}, {"anonymous", "tmp/x", false},
	} {
		r, _ := http.NewRequest("DELETE", e.srv.URL+"/locked/"+tt.key, nil)
		q := &request{r: r, auth: ident[tt.who], bucket: "locked", key: tt.key}
		if got := e.h.mayBypassGovernance(q, tt.key); got != tt.want {
			t.Errorf("%s bypasses governance on %s: %v, want %v", tt.who, tt.key, got, tt.want)
		}
	}
}

// TestEveryOperationHasAnAction: each operation the gateway serves has
// its action in access.Operations, the table authorize checks, so no
// operation falls to "owner only" by omission.
func TestEveryOperationHasAnAction(t *testing.T) {
	reqs := []struct{ method, target, copy string }{
		{"GET", "/b", ""}, {"GET", "/b?list-type=2", ""}, {"GET", "/b?versions", ""}, {"GET", "/b?uploads", ""},
		{"GET", "/b?location", ""}, {"HEAD", "/b", ""}, {"PUT", "/b", ""}, {"DELETE", "/b", ""}, {"POST", "/b?delete", ""},
		{"GET", "/b?versioning", ""}, {"PUT", "/b?versioning", ""}, {"GET", "/b?tagging", ""}, {"PUT", "/b?tagging", ""},
		{"DELETE", "/b?tagging", ""}, {"GET", "/b?cors", ""}, {"PUT", "/b?cors", ""}, {"DELETE", "/b?cors", ""},
		{"GET", "/b?encryption", ""}, {"PUT", "/b?encryption", ""}, {"DELETE", "/b?encryption", ""},
		{"GET", "/b?policy", ""}, {"PUT", "/b?policy", ""}, {"DELETE", "/b?policy", ""}, {"GET", "/b?policyStatus", ""},
		{"GET", "/b?acl", ""}, {"PUT", "/b?acl", ""}, {"GET", "/b?publicAccessBlock", ""}, {"PUT", "/b?publicAccessBlock", ""},
		{"DELETE", "/b?publicAccessBlock", ""}, {"GET", "/b?ownershipControls", ""}, {"PUT", "/b?ownershipControls", ""},
		{"DELETE", "/b?ownershipControls", ""}, {"GET", "/b?object-lock", ""}, {"PUT", "/b?object-lock", ""},
		{"GET", "/b/k?retention", ""}, {"PUT", "/b/k?retention", ""}, {"GET", "/b/k?legal-hold", ""}, {"PUT", "/b/k?legal-hold", ""},
		{"GET", "/b/k", ""}, {"HEAD", "/b/k", ""}, {"PUT", "/b/k", ""}, {"PUT", "/b/k", "b/src"}, {"DELETE", "/b/k", ""},
		{"POST", "/b/k?uploads", ""}, {"PUT", "/b/k?uploadId=u&partNumber=1", ""}, {"PUT", "/b/k?uploadId=u&partNumber=1", "b/src"},
		{"POST", "/b/k?uploadId=u", ""}, {"DELETE", "/b/k?uploadId=u", ""}, {"GET", "/b/k?uploadId=u", ""},
		{"GET", "/b/k?tagging", ""}, {"PUT", "/b/k?tagging", ""}, {"DELETE", "/b/k?tagging", ""}, {"GET", "/b/k?attributes", ""},
		{"GET", "/b/k?acl", ""}, {"PUT", "/b/k?acl", ""},
	}
	for _, rq := range reqs {
		r, _ := http.NewRequest(rq.method, "http://gw"+rq.target, nil)
		if rq.copy != "" {
			r.Header.Set("X-Amz-Copy-Source", rq.copy)
		}
		op := Operation(r)
		if _, ok := access.Operations[op]; !ok {
			t.Errorf("%s %s: operation %s has no action in access.Operations", rq.method, rq.target, op)
		}
	}
	// A browser POST upload is known by its body's type; it is a
	// PutObject of the form's key.
	r, _ := http.NewRequest("POST", "http://gw/b", nil)
	r.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	if op := Operation(r); op != "PostObject" || access.Operations[op] != "s3:PutObject" {
		t.Errorf("POST /b (form): operation %s, action %q; want PostObject, s3:PutObject", op, access.Operations[op])
	}
}

// TestPolicyMinio: minio-go's SetBucketPolicy and GetBucketPolicy, and its
// anonymous client (no credentials: unsigned requests) reading and
// listing what the policy grants.
func TestPolicyMinio(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	mc := e.minio(t)
	if err := mc.MakeBucket(ctx, "mini", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"pub/a", "priv/b"} {
		if _, err := mc.PutObject(ctx, "mini", k, strings.NewReader(k), int64(len(k)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	policy := `{"Version":"2012-10-17","Statement":[` +
		`{"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::mini/pub/*"]},` +
		`{"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::mini"],"Condition":{"StringEquals":{"s3:prefix":["pub/"]}}}]}`
	if err := mc.SetBucketPolicy(ctx, "mini", policy); err != nil {
		t.Fatal(err)
	}
	if got, err := mc.GetBucketPolicy(ctx, "mini"); err != nil || got != policy {
		t.Fatalf("GetBucketPolicy: %v %q", err, got)
	}
	anon, err := minio.New(strings.TrimPrefix(e.srv.URL, "http://"), &minio.Options{Region: testRegion, BucketLookup: minio.BucketLookupPath, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := anon.GetObject(ctx, "mini", "pub/a", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(obj); err != nil || string(b) != "pub/a" {
		t.Fatalf("anonymous minio-go GET of pub/a: %q %v", b, err)
	}
	obj, err = anon.GetObject(ctx, "mini", "priv/b", minio.GetObjectOptions{})
	if err == nil {
		_, err = io.ReadAll(obj)
	}
	if minio.ToErrorResponse(err).Code != "AccessDenied" {
		t.Fatalf("anonymous minio-go GET of priv/b: %v, want AccessDenied", err)
	}
	var keys []string
	for o := range anon.ListObjects(ctx, "mini", minio.ListObjectsOptions{Prefix: "pub/"}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
	}
	if len(keys) != 1 || keys[0] != "pub/a" {
		t.Fatalf("anonymous minio-go listing of pub/: %v", keys)
	}
	for o := range anon.ListObjects(ctx, "mini", minio.ListObjectsOptions{Prefix: "priv/"}) {
		if minio.ToErrorResponse(o.Err).Code != "AccessDenied" {
			t.Fatalf("anonymous minio-go listing of priv/: %+v", o)
		}
	}
	if err := mc.SetBucketPolicy(ctx, "mini", ""); err != nil { // minio-go's way to delete it
		t.Fatal(err)
	}
	if _, err := anon.StatObject(ctx, "mini", "pub/a", minio.StatObjectOptions{}); minio.ToErrorResponse(err).StatusCode != http.StatusForbidden {
		t.Fatalf("anonymous stat after the policy was deleted: %v", err)
	}
}

// TestPolicyCache: a policy is parsed once per bucket and text, a new
// text is parsed anew, a bad one is not kept, and the cache stays
// bounded.
func TestPolicyCache(t *testing.T) {
	var c policyCache
	doc := func(i int) string {
		return `{"Id":"` + strings.Repeat("x", i) + `","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}]}`
	}
	p1, err := c.parse("b", doc(1))
	if err != nil {
		t.Fatal(err)
	}
	if p2, _ := c.parse("b", doc(1)); p2 != p1 {
		t.Fatal("the same policy was parsed again")
	}
	if p3, _ := c.parse("b", doc(2)); p3 == p1 {
		t.Fatal("a changed policy came from the cache")
	}
	if _, err := c.parse("other", doc(1)); err == nil {
		t.Fatal("a policy of bucket b was accepted for bucket other")
	}
	for i := range 2 * maxPolicies {
		if _, err := c.parse("b", doc(i)); err != nil {
			t.Fatal(err)
		}
		if len(c.m) > maxPolicies {
			t.Fatalf("%d cached policies, more than %d", len(c.m), maxPolicies)
		}
	}
}

// TestOwnershipControls: BucketOwnerEnforced disables ACLs (setting one
// fails with AccessControlListNotSupported, stored grants count for
// nothing), and cannot be set over a bucket ACL.
// TestPolicyGovernanceBypass: bob, whom alice's bucket policy grants
// s3:DeleteObjectVersion and s3:BypassGovernanceRetention on tmp/*,
// deletes a GOVERNANCE-locked version there with the bypass header, and
// not under keep/ (DeleteObject and DeleteObjects alike); alice, denied
// the bypass on keep/ by her own policy, cannot bypass there either.
func TestPolicyGovernanceBypass(t *testing.T) {
	e := newAccessEnv(t)
	ctx := context.Background()
	if _, err := e.alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("gov"), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(24 * time.Hour)
	tmp := putLocked(t, e.alice, "gov", "tmp/a", types.ObjectLockModeGovernance, until, false)
	keep := putLocked(t, e.alice, "gov", "keep/a", types.ObjectLockModeGovernance, until, false)
	policy := `{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bob"},"Action":["s3:DeleteObjectVersion","s3:BypassGovernanceRetention"],"Resource":"arn:aws:s3:::gov/tmp/*"},
	  {"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bob"},"Action":"s3:DeleteObjectVersion","Resource":"arn:aws:s3:::gov/keep/*"},
	  {"Effect":"Deny","Principal":"*","Action":"s3:BypassGovernanceRetention","Resource":"arn:aws:s3:::gov/keep/*"}
	]}`
	if _, err := e.alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("gov"), Policy: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, deleteVersion(e.bob, "gov", "keep/a", keep, true), "AccessDenied")
	wantCode(t, deleteVersion(e.alice, "gov", "keep/a", keep, true), "AccessDenied")
	wantCode(t, deleteVersion(e.bob, "gov", "tmp/a", tmp, false), "AccessDenied") // locked: the bypass is needed
	out, err := e.bob.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("gov"), BypassGovernanceRetention: aws.Bool(true),
		Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("keep/a"), VersionId: aws.String(keep)}, {Key: aws.String("tmp/a"), VersionId: aws.String(tmp)}}}})
	if err != nil || len(out.Deleted) != 1 || aws.ToString(out.Deleted[0].Key) != "tmp/a" || len(out.Errors) != 1 || aws.ToString(out.Errors[0].Code) != "AccessDenied" {
		t.Fatalf("bob's DeleteObjects with the bypass: %v %+v", err, out)
	}
	// Root bypasses anywhere.
	if err := deleteVersion(e.root(), "gov", "keep/a", keep, true); err != nil {
		t.Fatal(err)
	}
}

// TestObjectACLVersions: each version has its own ACL: an anonymous GET
// of a public-read version by ID succeeds while the current, private
// version stays closed; GetObjectAcl reads a version's, PutObjectAcl
// changes the current version's only.
// TestACLErrors: the refusals of PUT ?acl, with S3's codes.
// BenchmarkAuthorize: what authorize adds to a request of a user that is
// not root: reading the bucket record (meta/mem here) and deciding, for
// the owner (no policy) and for an anonymous reader granted by a policy
// of three statements (parsed once, then cached).
func BenchmarkAuthorize(b *testing.B) {
	store := mem.New()
	h, err := New(Config{Objects: client.New(store, clienttest.NewMemShards(), client.Config{}), Meta: store, Credentials: StaticCredentials{}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := store.CreateBucket(ctx, cairn.Bucket{Name: "plain", Policy: "rs-4-2", Owner: "alice"}); err != nil {
		b.Fatal(err)
	}
	policy := `{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::site/public/*"},
	  {"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bob"},"Action":"s3:*","Resource":"arn:aws:s3:::site/bob/*"},
	  {"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::site/*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}`
	if err := store.CreateBucket(ctx, cairn.Bucket{Name: "site", Policy: "rs-4-2", Owner: "alice", Access: &cairn.BucketAccess{Policy: policy}}); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name, path string
		auth       *authResult
	}{
		{"owner", "/plain/k", &authResult{id: Identity{Name: "alice"}}},
		{"anonymous-policy", "/site/public/k", &authResult{anonymous: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r, _ := http.NewRequest("GET", "http://gw"+bc.path, nil)
			bucket, key, _ := strings.Cut(strings.TrimPrefix(bc.path, "/"), "/")
			b.ReportAllocs()
			for b.Loop() {
				q := &request{r: r, auth: bc.auth, bucket: bucket, key: key}
				if err := h.authorize(q); err != nil || !(q.granted || q.access.owner) {
					b.Fatalf("authorize: %v", err)
				}
			}
		})
	}
}
