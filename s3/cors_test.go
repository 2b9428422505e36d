package s3

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7/pkg/cors"

	"cairn"
)

func TestBucketCORS(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	c := e.root()
	b := aws.String("bkt")
	_, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: b})
	wantCode(t, err, "NoSuchCORSConfiguration")
	rules := []types.CORSRule{
		{ID: aws.String("app"), AllowedOrigins: []string{"https://*.example.com"}, AllowedMethods: []string{"GET", "PUT"},
			AllowedHeaders: []string{"x-amz-*", "Content-Type"}, ExposeHeaders: []string{"ETag"}, MaxAgeSeconds: aws.Int32(600)},
		{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET"}},
	}
	if _, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: b, CORSConfiguration: &types.CORSConfiguration{CORSRules: rules}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: b})
	if err != nil || len(got.CORSRules) != 2 || aws.ToString(got.CORSRules[0].ID) != "app" || aws.ToInt32(got.CORSRules[0].MaxAgeSeconds) != 600 ||
		strings.Join(got.CORSRules[0].AllowedHeaders, ",") != "x-amz-*,Content-Type" || got.CORSRules[1].MaxAgeSeconds != nil {
		t.Fatalf("GetBucketCors: %+v %v", got, err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("obj"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}

	preflight := func(bucket, origin, method, headers string) *http.Response {
		t.Helper()
		r, _ := http.NewRequest(http.MethodOptions, e.srv.URL+"/"+bucket+"/obj", nil)
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if method != "" {
			r.Header.Set("Access-Control-Request-Method", method)
		}
		if headers != "" {
			r.Header.Set("Access-Control-Request-Headers", headers)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	// A matching preflight, unsigned: the first matching rule answers.
	resp := preflight("bkt", "https://app.example.com", "PUT", "X-Amz-Date, content-type")
	if h := resp.Header; resp.StatusCode != http.StatusOK || h.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		h.Get("Access-Control-Allow-Methods") != "GET, PUT" || h.Get("Access-Control-Allow-Headers") != "X-Amz-Date, content-type" ||
		h.Get("Access-Control-Max-Age") != "600" || h.Get("Access-Control-Expose-Headers") != "ETag" || h.Get("Access-Control-Allow-Credentials") != "true" {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	resp = preflight("bkt", "https://elsewhere.org", "GET", "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("preflight by the * rule: %d %v", resp.StatusCode, resp.Header)
	}
	// No rule allows it, no bucket, no rules: 403 alike.
	for _, tc := range []struct{ bucket, origin, method, headers string }{
		{"bkt", "https://elsewhere.org", "PUT", ""},
		{"bkt", "https://app.example.com", "DELETE", ""},
		{"bkt", "https://app.example.com", "PUT", "Authorization"},
		{"nobucket", "https://app.example.com", "GET", ""},
	} {
		if resp := preflight(tc.bucket, tc.origin, tc.method, tc.headers); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%+v: %d", tc, resp.StatusCode)
		}
	}
	if resp := preflight("bkt", "", "GET", ""); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("preflight without Origin: %d", resp.StatusCode)
	}
	if resp := preflight("bkt", "https://app.example.com", "", ""); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("preflight without a method: %d", resp.StatusCode)
	}

	// An actual request with an Origin gets the rule's headers.
	r := e.signed(t, "GET", "/bkt/obj", nil, "", http.Header{"Origin": {"https://app.example.com"}})
	got2 := send(t, r)
	if got2.status != http.StatusOK || got2.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" || got2.header.Get("Access-Control-Expose-Headers") != "ETag" {
		t.Fatalf("GET with Origin: %d %v", got2.status, got2.header)
	}
	r = e.signed(t, "DELETE", "/bkt/nothing", nil, "", http.Header{"Origin": {"https://app.example.com"}})
	if got2 := send(t, r); got2.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("DELETE (no rule allows it) got CORS headers: %v", got2.header)
	}

	// Bad configurations.
	for _, bad := range []types.CORSRule{
		{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"PATCH"}},
		{AllowedOrigins: []string{"https://*.*.example.com"}, AllowedMethods: []string{"GET"}},
	} {
		_, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: b, CORSConfiguration: &types.CORSConfiguration{CORSRules: []types.CORSRule{bad}}})
		wantCode(t, err, "InvalidRequest")
	}
	// A rule without an origin (the SDK refuses to send one).
	st, body := do(t, e.signed(t, "PUT", "/bkt?cors", []byte("<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>"), "", http.Header{}))
	if st != http.StatusBadRequest || !strings.Contains(body, "MalformedXML") {
		t.Fatalf("a rule without an origin: %d %s", st, body)
	}
	_, err = c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: aws.String("nobucket"), CORSConfiguration: &types.CORSConfiguration{CORSRules: rules}})
	wantCode(t, err, "NoSuchBucket")

	if _, err := c.DeleteBucketCors(ctx, &s3.DeleteBucketCorsInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: b})
	wantCode(t, err, "NoSuchCORSConfiguration")
	if resp := preflight("bkt", "https://app.example.com", "GET", ""); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("preflight after DeleteBucketCors: %d", resp.StatusCode)
	}
}

// minio-go sets and reads the same configuration.
func TestBucketCORSMinio(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mkBucket(t, "bkt")
	mc := e.minio(t)
	cfg := cors.NewConfig([]cors.Rule{{AllowedOrigin: []string{"https://a.example"}, AllowedMethod: []string{"GET", "HEAD"}, MaxAgeSeconds: 60}})
	if err := mc.SetBucketCors(ctx, "bkt", cfg); err != nil {
		t.Fatal(err)
	}
	got, err := mc.GetBucketCors(ctx, "bkt")
	if err != nil || len(got.CORSRules) != 1 || got.CORSRules[0].MaxAgeSeconds != 60 || strings.Join(got.CORSRules[0].AllowedMethod, ",") != "GET,HEAD" {
		t.Fatalf("minio GetBucketCors: %+v %v", got, err)
	}
	if err := mc.SetBucketCors(ctx, "bkt", nil); err != nil { // minio-go deletes with a nil configuration
		t.Fatal(err)
	}
	if got, err := mc.GetBucketCors(ctx, "bkt"); err != nil || got != nil {
		t.Fatalf("after the delete: %+v %v", got, err)
	}
}

func TestWildcardMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		fold, want bool
	}{
		{"*", "anything", false, true},
		{"https://*.example.com", "https://a.example.com", false, true},
		{"https://*.example.com", "https://example.com", false, false},
		{"https://*.example.com", "http://a.example.com", false, false},
		{"https://a.com", "https://a.com", false, true},
		{"https://a.com", "https://A.com", false, false},
		{"x-amz-*", "X-Amz-Date", true, true},
		{"ab*ba", "aba", false, false}, // prefix and suffix may not overlap
	}
	for _, tc := range tests {
		if got := wildcardMatch(tc.pattern, tc.s, tc.fold); got != tc.want {
			t.Errorf("wildcardMatch(%q, %q, %v) = %v", tc.pattern, tc.s, tc.fold, got)
		}
	}
	rules := []cairn.CORSRule{{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET"}, AllowedHeaders: []string{"*"}}}
	if matchCORS(rules, "o", "GET", []string{"Anything"}) == nil || matchCORS(rules, "o", "PUT", nil) != nil {
		t.Fatal("matchCORS")
	}
}
