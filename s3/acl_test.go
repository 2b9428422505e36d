package s3

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func TestCannedACLs(t *testing.T) {
	e := newAccessEnv(t)
	ctx := context.Background()
	if _, err := e.alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("pub"), ACL: types.BucketCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	put(t, e.alice, "pub", "open", "open data", types.ObjectCannedACLPublicRead)
	put(t, e.alice, "pub", "closed", "closed data", "")
	put(t, e.alice, "pub", "members", "members data", types.ObjectCannedACLAuthenticatedRead)

	// A public-read bucket lists to anyone; its objects read as their own ACL says.
	if got := e.anon(t, "GET", "/pub", nil); got.status != http.StatusOK || !strings.Contains(got.body, "<Key>closed</Key>") {
		t.Fatalf("anonymous listing of a public-read bucket: %d %s", got.status, got.body)
	}
	wantAnon(t, e.anon(t, "GET", "/pub/open", nil), http.StatusOK, "open data")
	wantAnon(t, e.anon(t, "GET", "/pub/closed", nil), http.StatusForbidden, "")
	wantAnon(t, e.anon(t, "GET", "/pub/members", nil), http.StatusForbidden, "")

	wantAnon(t, e.anon(t, "PUT", "/pub/new", []byte("x")), http.StatusForbidden, "")
	if _, err := e.bob.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("pub"), Key: aws.String("members")}); err != nil {
		t.Fatalf("bob reads an authenticated-read object: %v", err)
	}

	acl, err := e.alice.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String("pub"), Key: aws.String("open")})
	if err != nil || aws.ToString(acl.Owner.ID) != "alice" || len(acl.Grants) != 2 ||
		acl.Grants[0].Permission != types.PermissionFullControl || aws.ToString(acl.Grants[0].Grantee.ID) != "alice" ||
		acl.Grants[1].Grantee.Type != types.TypeGroup || aws.ToString(acl.Grants[1].Grantee.URI) != allUsersURI || acl.Grants[1].Permission != types.PermissionRead {
		t.Fatalf("GetObjectAcl of a public-read object: %v %+v", err, acl)
	}
	if _, err := e.alice.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String("pub"), Key: aws.String("open"), ACL: types.ObjectCannedACLPrivate}); err != nil {
		t.Fatal(err)
	}
	wantAnon(t, e.anon(t, "GET", "/pub/open", nil), http.StatusForbidden, "")
	_, err = e.bob.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String("pub"), Key: aws.String("open"), ACL: types.ObjectCannedACLPublicRead})
	wantCode(t, err, "AccessDenied")

	// The XML form: a grant to bob by canonical ID, on a private bucket.
	if _, err := e.alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("priv")}); err != nil {
		t.Fatal(err)
	}
	_, err = e.bob.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("priv")})
	wantCode(t, err, "AccessDenied")
	_, err = e.alice.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("priv"), AccessControlPolicy: &types.AccessControlPolicy{
		Owner: &types.Owner{ID: aws.String("alice")},
		Grants: []types.Grant{
			{Grantee: &types.Grantee{Type: types.TypeCanonicalUser, ID: aws.String("alice")}, Permission: types.PermissionFullControl},
			{Grantee: &types.Grantee{Type: types.TypeCanonicalUser, ID: aws.String("bob")}, Permission: types.PermissionRead},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.bob.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("priv")}); err != nil {
		t.Fatalf("bob lists with a READ grant: %v", err)
	}
	_, err = e.carol.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("priv")})
	wantCode(t, err, "AccessDenied")
	bacl, err := e.alice.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: aws.String("priv")})
	if err != nil || len(bacl.Grants) != 2 || aws.ToString(bacl.Grants[1].Grantee.ID) != "bob" || bacl.Grants[1].Grantee.Type != types.TypeCanonicalUser {
		t.Fatalf("GetBucketAcl: %v %+v", err, bacl)
	}
	// Grant headers; a public-read-write bucket takes anonymous writes.
	if _, err := e.alice.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("priv"), GrantWrite: aws.String(`uri="` + allUsersURI + `"`)}); err != nil {
		t.Fatal(err)
	}
	if got := e.anon(t, "PUT", "/priv/drop", []byte("dropped")); got.status != http.StatusOK {
		t.Fatalf("anonymous PUT to a bucket granting WRITE to AllUsers: %d %s", got.status, got.body)
	}
	if r, err := e.alice.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("priv"), Key: aws.String("drop")}); err != nil {
		t.Fatal(err)
	} else if b, _ := io.ReadAll(r.Body); string(b) != "dropped" {
		t.Fatalf("the anonymous upload holds %q", b)
	}
	_, err = e.bob.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("priv")})
	wantCode(t, err, "AccessDenied") // the new ACL replaced bob's READ

	// Errors.
	_, err = e.alice.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("priv"), ACL: "everyone-welcome"})
	wantCode(t, err, "InvalidArgument")
	_, err = e.alice.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("priv"), ACL: types.BucketCannedACLPrivate, GrantRead: aws.String(`id="bob"`)})
	wantCode(t, err, "InvalidRequest")
	_, err = e.alice.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("priv"), AccessControlPolicy: &types.AccessControlPolicy{
		Grants: []types.Grant{{Grantee: &types.Grantee{Type: types.TypeGroup, URI: aws.String("http://example.com/everyone")}, Permission: types.PermissionRead}}}})
	wantCode(t, err, "InvalidArgument")
}

func TestBlockPublicAccess(t *testing.T) {
	e := newAccessEnv(t)
	ctx := context.Background()
	if _, err := e.alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bpa")}); err != nil {
		t.Fatal(err)
	}
	put(t, e.alice, "bpa", "open", "open data", types.ObjectCannedACLPublicRead)
	_, err := e.alice.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: aws.String("bpa")})
	wantCode(t, err, "NoSuchPublicAccessBlockConfiguration")
	setPAB := func(c types.PublicAccessBlockConfiguration) {
		t.Helper()
		if _, err := e.alice.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: aws.String("bpa"), PublicAccessBlockConfiguration: &c}); err != nil {
			t.Fatal(err)
		}
	}
	const public = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bpa/*"}]}`
	const forBob = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam:::user/bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bpa/*"}]}`

	// BlockPublicPolicy refuses a public policy, not a private one.
	setPAB(types.PublicAccessBlockConfiguration{BlockPublicPolicy: aws.Bool(true)})
	got, err := e.alice.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: aws.String("bpa")})
	if err != nil || !aws.ToBool(got.PublicAccessBlockConfiguration.BlockPublicPolicy) || aws.ToBool(got.PublicAccessBlockConfiguration.BlockPublicAcls) {
		t.Fatalf("GetPublicAccessBlock: %v %+v", err, got)
	}
	_, err = e.alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("bpa"), Policy: aws.String(public)})
	wantCode(t, err, "AccessDenied")
	if _, err := e.alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("bpa"), Policy: aws.String(forBob)}); err != nil {
		t.Fatal(err)
	}

	// BlockPublicAcls refuses public ACLs on writes and on PUT ?acl.
	setPAB(types.PublicAccessBlockConfiguration{BlockPublicAcls: aws.Bool(true)})
	_, err = e.alice.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bpa"), Key: aws.String("k"), Body: strings.NewReader("x"), ACL: types.ObjectCannedACLPublicRead})
	wantCode(t, err, "AccessDenied")
	_, err = e.alice.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("bpa"), ACL: types.BucketCannedACLPublicRead})
	wantCode(t, err, "AccessDenied")
	_, err = e.alice.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String("bpa"), Key: aws.String("open"), ACL: types.ObjectCannedACLAuthenticatedRead})
	wantCode(t, err, "AccessDenied")
	put(t, e.alice, "bpa", "k", "x", types.ObjectCannedACLPrivate)
	wantAnon(t, e.anon(t, "GET", "/bpa/open", nil), http.StatusOK, "open data") // an existing public ACL still works

	// IgnorePublicAcls makes it count for nothing.
	setPAB(types.PublicAccessBlockConfiguration{IgnorePublicAcls: aws.Bool(true)})
	wantAnon(t, e.anon(t, "GET", "/bpa/open", nil), http.StatusForbidden, "")

	// RestrictPublicBuckets: a public policy no longer lets anonymous
	// requests in.
	if _, err := e.alice.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: aws.String("bpa")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.alice.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("bpa"), Policy: aws.String(public)}); err != nil {
		t.Fatal(err)
	}
	put(t, e.alice, "bpa", "open", "open data", "") // private: only the policy grants it
	wantAnon(t, e.anon(t, "GET", "/bpa/open", nil), http.StatusOK, "open data")
	setPAB(types.PublicAccessBlockConfiguration{RestrictPublicBuckets: aws.Bool(true)})
	wantAnon(t, e.anon(t, "GET", "/bpa/open", nil), http.StatusForbidden, "")

	// Only the owner manages it.
	_, err = e.bob.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: aws.String("bpa"),
		PublicAccessBlockConfiguration: &types.PublicAccessBlockConfiguration{}})
	wantCode(t, err, "AccessDenied")
	_, err = e.bob.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: aws.String("bpa")})
	wantCode(t, err, "AccessDenied")
	if _, err := e.alice.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: aws.String("bpa")}); err != nil {
		t.Fatal(err)
	}
	_, err = e.alice.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: aws.String("bpa")})
	wantCode(t, err, "NoSuchPublicAccessBlockConfiguration")
}

func TestOwnershipControls(t *testing.T) {
	e := newAccessEnv(t)
	ctx := context.Background()
	_, err := e.alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("own"), ACL: types.BucketCannedACLPublicRead,
		ObjectOwnership: types.ObjectOwnershipBucketOwnerEnforced})
	wantCode(t, err, "InvalidBucketAclWithObjectOwnership")
	if _, err := e.alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("own"), ACL: types.BucketCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	put(t, e.alice, "own", "open", "open data", types.ObjectCannedACLPublicRead)
	_, err = e.alice.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: aws.String("own")})
	wantCode(t, err, "OwnershipControlsNotFoundError")
	enforce := &s3.PutBucketOwnershipControlsInput{Bucket: aws.String("own"), OwnershipControls: &types.OwnershipControls{
		Rules: []types.OwnershipControlsRule{{ObjectOwnership: types.ObjectOwnershipBucketOwnerEnforced}}}}
	_, err = e.alice.PutBucketOwnershipControls(ctx, enforce)
	wantCode(t, err, "InvalidBucketAclWithObjectOwnership")
	if _, err := e.alice.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("own"), ACL: types.BucketCannedACLPrivate}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.alice.PutBucketOwnershipControls(ctx, enforce); err != nil {
		t.Fatal(err)
	}
	got, err := e.alice.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: aws.String("own")})
	if err != nil || len(got.OwnershipControls.Rules) != 1 || got.OwnershipControls.Rules[0].ObjectOwnership != types.ObjectOwnershipBucketOwnerEnforced {
		t.Fatalf("GetBucketOwnershipControls: %v %+v", err, got)
	}
	wantAnon(t, e.anon(t, "GET", "/own/open", nil), http.StatusForbidden, "") // the object's public-read counts for nothing
	acl, err := e.alice.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String("own"), Key: aws.String("open")})
	if err != nil || len(acl.Grants) != 1 {
		t.Fatalf("GetObjectAcl under BucketOwnerEnforced: %v %+v", err, acl)
	}
	_, err = e.alice.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("own"), Key: aws.String("k"), Body: strings.NewReader("x"), ACL: types.ObjectCannedACLPublicRead})
	wantCode(t, err, "AccessControlListNotSupported")
	_, err = e.alice.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("own"), GrantRead: aws.String(`id="bob"`)})
	wantCode(t, err, "AccessControlListNotSupported")
	put(t, e.alice, "own", "k", "x", types.ObjectCannedACLBucketOwnerFullControl)
	_, err = e.bob.PutBucketOwnershipControls(ctx, enforce)
	wantCode(t, err, "AccessDenied")

	// Back to ACLs: the stored public-read grant works again.
	if _, err := e.alice.DeleteBucketOwnershipControls(ctx, &s3.DeleteBucketOwnershipControlsInput{Bucket: aws.String("own")}); err != nil {
		t.Fatal(err)
	}
	wantAnon(t, e.anon(t, "GET", "/own/open", nil), http.StatusOK, "open data")
	_, err = e.alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("own2"), ObjectOwnership: "Everyone"})
	wantCode(t, err, "InvalidArgument")
}

func TestObjectACLVersions(t *testing.T) {
	e := newAccessEnv(t)
	ctx := context.Background()
	if _, err := e.alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("ver")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.alice.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("ver"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	v1, err := e.alice.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("ver"), Key: aws.String("k"), Body: strings.NewReader("one"), ACL: types.ObjectCannedACLPublicRead})
	if err != nil {
		t.Fatal(err)
	}
	put(t, e.alice, "ver", "k", "two", "")
	id := aws.ToString(v1.VersionId)
	wantAnon(t, e.anon(t, "GET", "/ver/k?versionId="+id, nil), http.StatusOK, "one")
	wantAnon(t, e.anon(t, "GET", "/ver/k", nil), http.StatusForbidden, "")
	acl, err := e.alice.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String("ver"), Key: aws.String("k"), VersionId: aws.String(id)})
	if err != nil || len(acl.Grants) != 2 {
		t.Fatalf("GetObjectAcl of version 1: %v %+v", err, acl)
	}
	if acl, err := e.alice.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String("ver"), Key: aws.String("k")}); err != nil || len(acl.Grants) != 1 {
		t.Fatalf("GetObjectAcl of the current version: %v %+v", err, acl)
	}
	_, err = e.alice.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String("ver"), Key: aws.String("k"), VersionId: aws.String(id), ACL: types.ObjectCannedACLPrivate})
	wantCode(t, err, "NotImplemented")
}

func TestACLErrors(t *testing.T) {
	e := newAccessEnv(t)
	ctx := context.Background()
	if _, err := e.alice.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("acls")}); err != nil {
		t.Fatal(err)
	}
	put := func(body string, hdr http.Header) s3Response { // signed by root
		return send(t, e.signed(t, "PUT", "/acls?acl", []byte(body), "", hdr))
	}
	grant := func(grantee, perm string) string {
		return `<AccessControlPolicy><AccessControlList><Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser">` +
			grantee + `</Grantee><Permission>` + perm + `</Permission></Grant></AccessControlList></AccessControlPolicy>`
	}
	for _, tt := range []struct {
		name, body string
		hdr        http.Header
		code       string
	}{
		{"nothing", "", http.Header{}, "MissingSecurityHeader"},
		{"both", grant("<ID>bob</ID>", "READ"), http.Header{"X-Amz-Acl": {"private"}}, "UnexpectedContent"},
		{"bad permission", grant("<ID>bob</ID>", "EVERYTHING"), http.Header{}, "MalformedACLError"},
		{"bad id", grant("<ID>bob/../x</ID>", "READ"), http.Header{}, "InvalidArgument"},
		{"e-mail", grant("<EmailAddress>bob@example.com</EmailAddress>", "READ"), http.Header{}, "NotImplemented"},
		{"not XML", "<AccessControlPolicy>", http.Header{}, "MalformedACLError"},
		{"bad grant header", "", http.Header{"X-Amz-Grant-Read": {`name="bob"`}}, "InvalidArgument"},
	} {
		if got := put(tt.body, tt.hdr); got.code != tt.code {
			t.Errorf("%s: %d %s, want %s", tt.name, got.status, got.code, tt.code)
		}
	}
}
