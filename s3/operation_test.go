package s3

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestOperation(t *testing.T) {
	tests := []struct {
		method, target, copy string
		want                 string
	}{
		{"GET", "/", "", "ListBuckets"},
		{"POST", "/?" + AdminQuery + "=user-add", "", "Admin"},
		{"PUT", "/", "", "Other"},
		{"GET", "/b?encryption", "", "GetBucketEncryption"},
		{"PUT", "/b?encryption", "", "PutBucketEncryption"},
		{"DELETE", "/b?encryption", "", "DeleteBucketEncryption"},
		{"GET", "/b?location", "", "GetBucketLocation"},
		{"GET", "/b?uploads", "", "ListMultipartUploads"},
		{"GET", "/b?versions", "", "ListObjectVersions"},
		{"GET", "/b?list-type=2&prefix=x", "", "ListObjectsV2"},
		{"GET", "/b", "", "ListObjects"},
		{"PUT", "/b", "", "CreateBucket"},
		{"HEAD", "/b/", "", "HeadBucket"},
		{"DELETE", "/b", "", "DeleteBucket"},
		{"POST", "/b?delete", "", "DeleteObjects"},
		{"POST", "/b", "", "Other"},
		{"POST", "/b/k?uploads", "", "CreateMultipartUpload"},
		{"PUT", "/b/k?uploadId=u&partNumber=1", "", "UploadPart"},
		{"POST", "/b/k?uploadId=u", "", "CompleteMultipartUpload"},
		{"DELETE", "/b/k?uploadId=u", "", "AbortMultipartUpload"},
		{"GET", "/b/k?uploadId=u", "", "ListParts"},
		{"PUT", "/b/k", "", "PutObject"},
		{"PUT", "/b/dir/k", "b/src", "CopyObject"},
		{"GET", "/b/k?partNumber=2", "", "GetObject"},
		{"HEAD", "/b/k", "", "HeadObject"},
		{"DELETE", "/b/k", "", "DeleteObject"},
		{"PATCH", "/b/k", "", "Other"},
		{"GET", "/b/k?tagging", "", "GetObjectTagging"},
		{"PUT", "/b/k?tagging", "", "PutObjectTagging"},
		{"DELETE", "/b/k?tagging", "", "DeleteObjectTagging"},
		{"GET", "/b?tagging", "", "GetBucketTagging"},
		{"PUT", "/b?cors", "", "PutBucketCors"},
		{"GET", "/b/k?attributes", "", "GetObjectAttributes"},
		{"OPTIONS", "/b/k", "", "Preflight"},
		{"OPTIONS", "/b?lifecycle", "", "Preflight"},
		{"PUT", "/b/k?uploadId=u&partNumber=2", "b/src", "UploadPartCopy"},
		{"GET", "/b?versioning", "", "GetBucketVersioning"},
		{"PUT", "/b?versioning", "", "PutBucketVersioning"},
		{"PUT", "/b?policy", "", "PutBucketPolicy"},
		{"GET", "/b?policyStatus", "", "GetBucketPolicyStatus"},
		{"DELETE", "/b?publicAccessBlock", "", "DeletePublicAccessBlock"},
		{"GET", "/b?acl", "", "GetBucketAcl"},
		{"PUT", "/b/k?acl", "", "PutObjectAcl"},
		{"GET", "/b?object-lock", "", "GetObjectLockConfiguration"},
		{"PUT", "/b?object-lock", "", "PutObjectLockConfiguration"},
		{"GET", "/b/k?retention&versionId=null", "", "GetObjectRetention"},
		{"PUT", "/b/k?retention", "", "PutObjectRetention"},
		{"GET", "/b/k?legal-hold", "", "GetObjectLegalHold"},
		{"PUT", "/b/k?legal-hold", "", "PutObjectLegalHold"},
		{"GET", "/b?retention", "", "Unsupported"},
		{"PUT", "/b/k?object-lock", "", "Unsupported"},
		{"GET", "/b?website", "", "Unsupported"},
		{"PUT", "/b?lifecycle", "", "PutBucketLifecycleConfiguration"},
		{"GET", "/b?lifecycle", "", "GetBucketLifecycleConfiguration"},
		{"DELETE", "/b?lifecycle", "", "DeleteBucketLifecycle"},
		{"GET", "/b/k?lifecycle", "", "Unsupported"},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			if tc.copy != "" {
				r.Header.Set("X-Amz-Copy-Source", tc.copy)
			}
			if got := Operation(r); got != tc.want {
				t.Errorf("Operation = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestOperationPostObject: a form upload (POST on a bucket with a
// multipart/form-data body) is PostObject; without the form it is not.
func TestOperationPostObject(t *testing.T) {
	r := httptest.NewRequest("POST", "/b", nil)
	r.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	if got := Operation(r); got != "PostObject" {
		t.Errorf("Operation = %q, want PostObject", got)
	}
	r = httptest.NewRequest("POST", "/b/k", nil)
	r.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	if got := Operation(r); got == "PostObject" {
		t.Errorf("a POST on a key is %q", got)
	}
}

// Every operation name is one of a few fixed strings: a request's bucket
// or key never becomes one (they are metric label values).
func TestOperationNamesNoData(t *testing.T) {
	for _, target := range []string{"/secret-bucket/secret-key", "/secret-bucket", "/secret-bucket/secret-key?uploadId=secret-upload"} {
		for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodHead, "PATCH"} {
			op := Operation(httptest.NewRequest(m, target, nil))
			if op == "" || len(op) > 30 || strings.Contains(op, "secret") {
				t.Errorf("%s %s: operation %q", m, target, op)
			}
		}
	}
}
