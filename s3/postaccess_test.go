package s3

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	mcreds "github.com/minio/minio-go/v7/pkg/credentials"
)

// presignPost is c's aws-sdk-go-v2 PresignPostObject form for bucket/key.
func presignPost(t *testing.T, c *s3.Client, bucket, key string) [][2]string {
	t.Helper()
	pre, err := s3.NewPresignClient(c).PresignPostObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)},
		func(o *s3.PresignPostOptions) { o.Expires = 10 * time.Minute })
	if err != nil {
		t.Fatal(err)
	}
	return fieldList(pre.Values)
}

// wantPost posts fields and a file to bucket and checks the answer: 204
// and the file stored under key, or code and nothing stored.
func (e accessEnv) wantPost(t *testing.T, bucket, key string, fields [][2]string, code string) {
	t.Helper()
	data := []byte("posted " + key)
	ct, body := postFormBody(t, fields, "f.txt", data)
	got := e.post(t, bucket, ct, body)
	head, herr := e.root().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if code == "" {
		if got.status != http.StatusNoContent {
			t.Fatalf("POST %s/%s: %d %s %s, want 204", bucket, key, got.status, got.code, got.message)
		}
		b, _ := getBytes(t, e.root(), bucket, key, "")
		if !bytes.Equal(b, data) {
			t.Fatalf("POST %s/%s stored %q, want %q", bucket, key, b, data)
		}
		return
	}
	if got.code != code {
		t.Fatalf("POST %s/%s: %d %s %s, want %s", bucket, key, got.status, got.code, got.message, code)
	}
	if herr == nil {
		t.Fatalf("refused POST %s/%s stored an object (%d bytes)", bucket, key, aws.ToInt64(head.ContentLength))
	}
}

// TestPostObjectPolicy: a browser POST upload is authorized as a
// PutObject of the form's key. A second user's presigned form (aws-sdk-go-v2
// and minio-go) is accepted where alice's bucket policy grants that user
// s3:PutObject and refused elsewhere; an unsigned form is anonymous,
// accepted where the policy grants s3:PutObject to "*" (within its
// conditions and Block Public Access) and refused without; the owner
// and root keep their access. A refused form stores nothing.
func TestPostObjectPolicy(t *testing.T) {
	e := newAccessEnv(t)
	ctx := context.Background()
	for _, b := range []string{"team", "drop", "closed"} {
		if _, err := e.alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	setPolicy := func(bucket, policy string) {
		t.Helper()
		if _, err := e.alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(policy)}); err != nil {
			t.Fatal(err)
		}
	}
	setPolicy("team", `{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bob"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::team/bob/*"}]}`)
	setPolicy("drop", `{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::drop/in/*"},
	  {"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::drop/ref/*",
	   "Condition":{"StringLike":{"aws:Referer":"https://site.example/*"}}},
	  {"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::drop/in/*",
	   "Condition":{"StringEquals":{"s3:x-amz-storage-class":"REDUCED_REDUNDANCY"}}}]}`)

	t.Run("second user", func(t *testing.T) {
		e.wantPost(t, "team", "bob/a", presignPost(t, e.bob, "team", "bob/a"), "")
		e.wantPost(t, "team", "other/a", presignPost(t, e.bob, "team", "other/a"), "AccessDenied")
		e.wantPost(t, "team", "bob/c", presignPost(t, e.carol, "team", "bob/c"), "AccessDenied")
		e.wantPost(t, "closed", "bob/a", presignPost(t, e.bob, "closed", "bob/a"), "AccessDenied")
		e.wantPost(t, "nosuch", "bob/a", presignPost(t, e.bob, "nosuch", "bob/a"), "NoSuchBucket")
		// The owner and root need no grant.
		e.wantPost(t, "closed", "mine", presignPost(t, e.alice, "closed", "mine"), "")
		e.wantPost(t, "closed", "root", presignPost(t, e.root(), "closed", "root"), "")
	})

	t.Run("second user minio", func(t *testing.T) {
		for _, v2 := range []bool{false, true} {
			creds := mcreds.NewStaticV4("AKIABOB", "bob-secret", "")
			if v2 {
				creds = mcreds.NewStaticV2("AKIABOB", "bob-secret", "")
			}
			mc, err := minio.New(strings.TrimPrefix(e.srv.URL, "http://"), &minio.Options{Creds: creds, Region: testRegion, BucketLookup: minio.BucketLookupPath})
			if err != nil {
				t.Fatal(err)
			}
			form := func(key string) [][2]string {
				p := minio.NewPostPolicy()
				for _, err := range []error{p.SetBucket("team"), p.SetKey(key), p.SetExpires(time.Now().Add(time.Hour))} {
					if err != nil {
						t.Fatal(err)
					}
				}
				_, fd, err := mc.PresignedPostPolicy(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				return fieldList(fd)
			}
			e.wantPost(t, "team", "bob/minio-"+map[bool]string{false: "v4", true: "v2"}[v2], form("bob/minio-"+map[bool]string{false: "v4", true: "v2"}[v2]), "")
			e.wantPost(t, "team", "elsewhere", form("elsewhere"), "AccessDenied")
		}
	})

	t.Run("anonymous", func(t *testing.T) {
		anon := func(key string, extra ...[2]string) [][2]string { return append([][2]string{{"key", key}}, extra...) }
		e.wantPost(t, "drop", "in/x", anon("in/x"), "")
		e.wantPost(t, "drop", "in/f.txt", anon("in/${filename}"), "")
		e.wantPost(t, "drop", "out/x", anon("out/x"), "AccessDenied")
		e.wantPost(t, "closed", "in/x", anon("in/x"), "AccessDenied")
		e.wantPost(t, "team", "bob/x", anon("bob/x"), "AccessDenied") // bob's grant is not everyone's
		e.wantPost(t, "nosuch", "in/x", anon("in/x"), "NoSuchBucket")
		// The policy's conditions see the form's fields as headers.
		e.wantPost(t, "drop", "in/rr", anon("in/rr", [2]string{"x-amz-storage-class", "REDUCED_REDUNDANCY"}), "AccessDenied")
		// A half-signed form is not anonymous.
		e.wantPost(t, "drop", "in/half", anon("in/half", [2]string{"signature", "abc"}), "InvalidArgument")
		e.wantPost(t, "drop", "in/half", anon("in/half", [2]string{"x-amz-date", "20260101T000000Z"}), "InvalidArgument")
		// An anonymous form's own policy, when it sends one, still binds it.
		exp := time.Now().Add(-time.Minute).UTC().Format("2006-01-02T15:04:05.000Z")
		e.wantPost(t, "drop", "in/expired", anon("in/expired", [2]string{"policy", b64([]byte(`{"expiration":"` + exp + `","conditions":[]}`))}), "AccessDenied")
	})

	t.Run("anonymous referer", func(t *testing.T) {
		for _, tc := range []struct{ referer, key string }{{"https://site.example/form", "ref/ok"}, {"https://evil.example/", "ref/no"}, {"", "ref/none"}} {
			ct, body := postFormBody(t, [][2]string{{"key", tc.key}}, "f", []byte("x"))
			r, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/drop", bytes.NewReader(body))
			r.Header.Set("Content-Type", ct)
			if tc.referer != "" {
				r.Header.Set("Referer", tc.referer)
			}
			got := send(t, r)
			_, herr := e.root().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("drop"), Key: aws.String(tc.key)})
			if ok := tc.key == "ref/ok"; ok != (got.status == http.StatusNoContent) || ok != (herr == nil) || (!ok && got.code != "AccessDenied") {
				t.Fatalf("Referer %q: %d %s, stored: %v", tc.referer, got.status, got.code, herr == nil)
			}
		}
	})

	t.Run("block public access", func(t *testing.T) {
		c := types.PublicAccessBlockConfiguration{RestrictPublicBuckets: aws.Bool(true)}
		if _, err := e.alice.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: aws.String("drop"), PublicAccessBlockConfiguration: &c}); err != nil {
			t.Fatal(err)
		}
		e.wantPost(t, "drop", "in/restricted", [][2]string{{"key", "in/restricted"}}, "AccessDenied")
	})
}
