package s3

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"cairn"
	"cairn/client"
	"cairn/placement"
)

// nopObjects and nopMeta satisfy the interfaces for tests that never
// reach the data path.
type nopObjects struct{}

func (nopObjects) Put(context.Context, string, string, io.Reader, client.PutOptions) (*cairn.Manifest, error) {
	return nil, cairn.ErrUnavailable
}
func (nopObjects) GetWith(context.Context, string, string, int64, int64, client.GetOptions) (*cairn.Manifest, io.ReadCloser, error) {
	return nil, nil, cairn.ErrNotFound
}
func (nopObjects) Stat(context.Context, string, string) (*cairn.Manifest, error) {
	return nil, cairn.ErrNotFound
}
func (nopObjects) Delete(context.Context, string, string) error { return cairn.ErrNotFound }
func (nopObjects) OpenWith(context.Context, *cairn.Manifest, int64, int64, client.GetOptions) (*cairn.Manifest, io.ReadCloser, error) {
	return nil, nil, cairn.ErrNotFound
}
func (nopObjects) CreateUpload(context.Context, string, string, client.PutOptions) (cairn.Upload, error) {
	return cairn.Upload{}, cairn.ErrNotFound
}
func (nopObjects) UploadPart(context.Context, string, string, string, int, io.Reader, client.PutOptions) (cairn.Part, error) {
	return cairn.Part{}, client.ErrNoSuchUpload
}
func (nopObjects) CompleteUploadIf(context.Context, string, string, string, []client.CompletePart, client.Condition) (*cairn.Manifest, error) {
	return nil, client.ErrNoSuchUpload
}
func (nopObjects) Upload(context.Context, string, string, string) (cairn.Upload, error) {
	return cairn.Upload{}, client.ErrNoSuchUpload
}
func (nopObjects) AbortUpload(context.Context, string, string, string) error {
	return client.ErrNoSuchUpload
}
func (nopObjects) ListPartsPage(context.Context, string, string, string, int, int) (cairn.Upload, []cairn.Part, bool, error) {
	return cairn.Upload{}, nil, false, client.ErrNoSuchUpload
}

type nopMeta struct{}

func (nopMeta) SetBucketVersioning(context.Context, string, string) error { return cairn.ErrNotFound }
func (nopMeta) ObjectVersion(context.Context, string, string, string) (cairn.ObjectVersion, error) {
	return cairn.ObjectVersion{}, cairn.ErrNotFound
}
func (nopMeta) PutDeleteMarker(context.Context, string, string, cairn.DeleteMarker) (cairn.ObjectVersion, error) {
	return cairn.ObjectVersion{}, cairn.ErrNotFound
}
func (nopMeta) DeleteVersion(context.Context, string, string, string) (cairn.ObjectVersion, error) {
	return cairn.ObjectVersion{}, cairn.ErrNotFound
}
func (nopMeta) ListVersions(context.Context, string, string, string, string, int) ([]cairn.ObjectVersion, bool, error) {
	return nil, false, cairn.ErrNotFound
}

func (nopMeta) CreateBucket(context.Context, cairn.Bucket) error { return cairn.ErrUnavailable }
func (nopMeta) Bucket(context.Context, string) (cairn.Bucket, error) {
	return cairn.Bucket{}, cairn.ErrNotFound
}
func (nopMeta) BucketPage(context.Context, string, int) ([]cairn.Bucket, bool, error) {
	return nil, false, nil
}
func (nopMeta) DeleteBucket(context.Context, string) error { return cairn.ErrNotFound }
func (nopMeta) SetBucketEncryption(context.Context, string, string) error {
	return cairn.ErrNotFound
}
func (nopMeta) UploadKeyPage(context.Context, string, string, string, string, int) ([]cairn.Upload, bool, error) {
	return nil, false, cairn.ErrNotFound
}
func (nopMeta) ListObjects(context.Context, string, string, string, int) ([]cairn.ObjectInfo, bool, error) {
	return nil, false, cairn.ErrNotFound
}

func TestAPIError(t *testing.T) {
	tests := []struct {
		err    error
		code   string
		status int
	}{
		{fmt.Errorf("x: %w", cairn.ErrNotFound), "NoSuchKey", 404},
		{fmt.Errorf("%w: %w", ErrNoSuchBucket, cairn.ErrNotFound), "NoSuchBucket", 404},
		{fmt.Errorf("%w: %w", ErrBucketAlreadyOwnedByYou, cairn.ErrExists), "BucketAlreadyOwnedByYou", 409},
		{cairn.ErrExists, "InternalError", 500}, // from below: a version ID taken
		{fmt.Errorf("delete: %w", cairn.ErrBucketNotEmpty), "BucketNotEmpty", 409},
		{cairn.ErrInvalid, "InvalidArgument", 400},
		{fmt.Errorf("%w: disk 3: %w", cairn.ErrUnavailable, cairn.ErrNoSpace), "InsufficientStorage", 507},
		{fmt.Errorf("%w: 2 shards", cairn.ErrUnavailable), "ServiceUnavailable", 503},
		{cairn.ErrCorrupt, "InternalError", 500},
		{cairn.ErrAuth, "InternalError", 500}, // from below: a node refused the cluster secret
		{fmt.Errorf("%w: storing shard 0: %w", cairn.ErrUnavailable, cairn.ErrNotFound), "ServiceUnavailable", 503},
		{&placement.TooFewDisksError{Need: 6, Have: 4}, "ServiceUnavailable", 503},
		{fmt.Errorf("etcd: %w", context.DeadlineExceeded), "ServiceUnavailable", 503},
		// What meta/etcd returns when etcd does not answer within its deadline.
		{fmt.Errorf("object b/k: %w: metadata store: %w", cairn.ErrUnavailable, context.DeadlineExceeded), "ServiceUnavailable", 503},
		// A node call whose node stalled: not found is not what it means.
		{fmt.Errorf("%w: node n1 did not answer within 30s: %w", cairn.ErrUnavailable, cairn.ErrNotFound), "ServiceUnavailable", 503},
		{fmt.Errorf("put: %w: waited 10s for 1048576 bytes", client.ErrBusy), "SlowDown", 503},
		{withCause(ErrSlowDown, cairn.ErrConflict), "SlowDown", 503},
		{cairn.ErrConflict, "OperationAborted", 409},
		{context.Canceled, "RequestTimeout", 400},
		{errors.New("disk on fire"), "InternalError", 500},
		{fmt.Errorf("reading the body: %w", ErrBadDigest), "BadDigest", 400},
		{fmt.Errorf("%w: %w", ErrKeyTooLong, cairn.ErrInvalid), "KeyTooLongError", 400},
		{ErrInvalidRange, "InvalidRange", http.StatusRequestedRangeNotSatisfiable},
		{ErrNotImplemented, "NotImplemented", 501},
	}
	for _, tc := range tests {
		e := apiError(tc.err)
		if e.Code != tc.code || e.Status != tc.status {
			t.Errorf("apiError(%v) = %s %d, want %s %d", tc.err, e.Code, e.Status, tc.code, tc.status)
		}
	}
}

func TestParseRange(t *testing.T) {
	tests := []struct {
		v          string
		size       int64
		off, n     int64
		ok, errRng bool
	}{
		{"bytes=0-0", 10, 0, 1, true, false},
		{"bytes=2-5", 10, 2, 4, true, false},
		{"bytes=5-", 10, 5, 5, true, false},
		{"bytes=-3", 10, 7, 3, true, false},
		{"bytes=-30", 10, 0, 10, true, false},
		{"bytes=8-100", 10, 8, 2, true, false},
		{"bytes=10-", 10, 0, 0, false, true},
		{"bytes=-0", 10, 0, 0, false, true},
		{"bytes=0-", 0, 0, 0, false, true},
		{"bytes=-3", 0, 0, 0, false, true},
		{"bytes=5-2", 10, 0, 0, false, false},
		{"bytes=0-1,3-4", 10, 0, 0, false, false},
		{"items=0-1", 10, 0, 0, false, false},
		{"bytes=x-1", 10, 0, 0, false, false},
		{"", 10, 0, 0, false, false},
	}
	for _, tc := range tests {
		off, n, ok, err := parseRange(tc.v, tc.size)
		if off != tc.off || n != tc.n || ok != tc.ok || (err != nil) != tc.errRng {
			t.Errorf("parseRange(%q, %d) = %d, %d, %v, %v", tc.v, tc.size, off, n, ok, err)
		}
	}
}

func TestURIEncode(t *testing.T) {
	for in, want := range map[string]string{
		"a/b c": "a/b%20c", "ü+*!~._-": "%C3%BC%2B%2A%21~._-", "%": "%25",
	} {
		if got := uriEncode(in, false); got != want {
			t.Errorf("uriEncode(%q) = %q, want %q", in, got, want)
		}
	}
	if got := uriEncode("a/b", true); got != "a%2Fb" {
		t.Errorf("uriEncode slash = %q", got)
	}
}

func TestConfigValidate(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, cairn.ErrInvalid) {
		t.Fatalf("empty config: %v", err)
	}
	if _, err := New(Config{Objects: nopObjects{}, Meta: nopMeta{}, Credentials: StaticCredentials{}, DefaultPolicy: "bogus"}); err == nil {
		t.Fatal("a bogus default policy was accepted")
	}
}

func TestObjectURL(t *testing.T) {
	tests := []struct {
		target string
		tls    bool
		proto  string
		key    string
		want   string
	}{
		{"http://gw:9000/b/k", false, "", "k", "http://gw:9000/b/k"},
		{"http://gw/b/k", true, "", "k", "https://gw/b/k"},
		{"http://gw/b/k", false, "https", "k", "https://gw/b/k"},
		{"http://gw/b/k", false, "gopher", "k", "http://gw/b/k"},
		{"http://gw/b/x", false, "", "dir/a b+ü", "http://gw/b/dir/a%20b%2B%C3%BC"},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("POST", tc.target, nil)
		if !tc.tls {
			r.TLS = nil
		} else if r.TLS == nil {
			r.TLS = &tls.ConnectionState{}
		}
		if tc.proto != "" {
			r.Header.Set("X-Forwarded-Proto", tc.proto)
		}
		if got := objectURL(r, "b", tc.key); got != tc.want {
			t.Errorf("objectURL(%s, tls %v, proto %q, %q) = %q, want %q", tc.target, tc.tls, tc.proto, tc.key, got, tc.want)
		}
	}
}
