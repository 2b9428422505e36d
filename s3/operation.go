package s3

import (
	"net/http"
	"net/url"
	"strings"
)

// Operation names the S3 API operation a request asks for, as AWS names
// them (GetObject, PutObject, ListObjectsV2, ...), from its method, path
// and query alone: it reads no body and checks no signature, so it names
// refused requests too. It follows ServeHTTP's routing; a request the
// gateway does not implement is "Unsupported", one it would refuse before
// routing (no bucket, bad method) "Other". The names are few and never
// carry a bucket or key, so they make a low-cardinality label for metrics
// (docs/metrics.md).
func Operation(r *http.Request) string {
	if r.Method == http.MethodOptions {
		return "Preflight" // a CORS preflight, served before any routing
	}
	query := r.URL.Query()
	for _, s := range unsupportedSubresources {
		if query.Has(s) {
			return "Unsupported"
		}
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if isPostObject(r, bucket, key) {
		return "PostObject"
	}
	switch {
	case bucket != "" && key == "" && query.Has("tagging"):
		return byMethod(r.Method, "BucketTagging")
	case bucket != "" && key == "" && query.Has("cors"):
		return byMethod(r.Method, "BucketCors")
	case bucket != "" && key == "" && query.Has("lifecycle"):
		if r.Method == http.MethodDelete {
			return "DeleteBucketLifecycle" // AWS's name
		}
		return byMethod(r.Method, "BucketLifecycleConfiguration")
	case bucket != "" && query.Has("lifecycle"):
		return "Unsupported"
	case bucket != "" && key == "" && query.Has("policy"):
		return byMethod(r.Method, "BucketPolicy")
	case bucket != "" && key == "" && query.Has("policyStatus"):
		return byMethod(r.Method, "BucketPolicyStatus")
	case bucket != "" && key == "" && query.Has("publicAccessBlock"):
		return byMethod(r.Method, "PublicAccessBlock")
	case bucket != "" && key == "" && query.Has("acl"):
		return byMethod(r.Method, "BucketAcl")
	case bucket != "" && key == "" && query.Has("ownershipControls"):
		return byMethod(r.Method, "BucketOwnershipControls")
	case bucket != "" && key != "" && query.Has("acl"):
		return byMethod(r.Method, "ObjectAcl")
	case bucket != "" && key != "" && query.Has("tagging"):
		return byMethod(r.Method, "ObjectTagging")
	case bucket != "" && key != "" && query.Has("attributes"):
		return byMethod(r.Method, "ObjectAttributes")
	case bucket != "" && key == "" && query.Has("object-lock"):
		return byMethod(r.Method, "ObjectLockConfiguration")
	case bucket != "" && key == "" && (query.Has("retention") || query.Has("legal-hold")),
		bucket != "" && key != "" && query.Has("object-lock"):
		return "Unsupported" // misplaced
	case bucket != "" && key != "" && query.Has("retention"):
		return byMethod(r.Method, "ObjectRetention")
	case bucket != "" && key != "" && query.Has("legal-hold"):
		return byMethod(r.Method, "ObjectLegalHold")
	case bucket == "" && query.Has(AdminQuery):
		return "Admin"
	case bucket == "" && r.Method == http.MethodGet:
		return "ListBuckets"
	case bucket == "":
		return "Other"
	case key == "" && query.Has("encryption"):
		return byMethod(r.Method, "BucketEncryption")
	case key == "" && query.Has("versioning"):
		return byMethod(r.Method, "BucketVersioning")
	case key == "":
		return bucketOperation(r.Method, query)
	case query.Has("uploadId") || query.Has("uploads"):
		return uploadOperation(r)
	}
	switch r.Method {
	case http.MethodPut:
		if r.Header.Get("X-Amz-Copy-Source") != "" {
			return "CopyObject"
		}
		return "PutObject"
	case http.MethodGet:
		return "GetObject"
	case http.MethodHead:
		return "HeadObject"
	case http.MethodDelete:
		return "DeleteObject"
	}
	return "Other"
}

// byMethod names a request on a subresource: GET, PUT and DELETE are
// Get, Put and Delete of it.
func byMethod(method, subresource string) string {
	switch method {
	case http.MethodGet:
		return "Get" + subresource
	case http.MethodPut:
		return "Put" + subresource
	case http.MethodDelete:
		return "Delete" + subresource
	}
	return "Other"
}

// bucketOperation names a request on a bucket (no key).
func bucketOperation(method string, query url.Values) string {
	switch method {
	case http.MethodGet:
		switch {
		case query.Has("location"):
			return "GetBucketLocation"
		case query.Has("uploads"):
			return "ListMultipartUploads"
		case query.Has("versions"):
			return "ListObjectVersions"
		case query.Get("list-type") == "2":
			return "ListObjectsV2"
		}
		return "ListObjects"
	case http.MethodPut:
		return "CreateBucket"
	case http.MethodHead:
		return "HeadBucket"
	case http.MethodDelete:
		return "DeleteBucket"
	case http.MethodPost:
		if query.Has("delete") {
			return "DeleteObjects"
		}
	}
	return "Other"
}

// uploadOperation names a multipart upload request.
func uploadOperation(r *http.Request) string {
	method, query := r.Method, r.URL.Query()
	switch {
	case method == http.MethodPost && query.Has("uploads"):
		return "CreateMultipartUpload"
	case method == http.MethodPut && query.Has("partNumber") && r.Header.Get("X-Amz-Copy-Source") != "":
		return "UploadPartCopy"
	case method == http.MethodPut && query.Has("partNumber"):
		return "UploadPart"
	case method == http.MethodPost:
		return "CompleteMultipartUpload"
	case method == http.MethodDelete:
		return "AbortMultipartUpload"
	case method == http.MethodGet:
		return "ListParts"
	}
	return "Other"
}
