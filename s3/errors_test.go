package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"cairn"
	"cairn/client"
)

// internalDetail is what an error from below the gateway may say: a
// disk, a host, a path, a version. No response may carry any of it.
const internalDetail = "node3/disk2 at 10.0.0.7:9380: open /srv/cairn/disk2/tmp/9f8e7d6c5b4a3f2e"

// leaks finds internal detail in a response body.
var leaks = regexp.MustCompile(`node\d|disk\d|\d+\.\d+\.\d+\.\d+|/srv/|9f8e7d6c5b4a`)

// logBuffer collects the gateway's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// logTo makes the gateway log to a buffer, at every level.
func (e *env) logTo() *logBuffer {
	lb := &logBuffer{}
	e.h.cfg.Logger = slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return lb
}

// failObjects is the data path with every call failing with err.
type failObjects struct {
	Objects
	err error
}

func (f failObjects) Put(context.Context, string, string, io.Reader, client.PutOptions) (*cairn.Manifest, error) {
	return nil, f.err
}
func (f failObjects) GetWith(context.Context, string, string, int64, int64, client.GetOptions) (*cairn.Manifest, io.ReadCloser, error) {
	return nil, nil, f.err
}
func (f failObjects) Stat(context.Context, string, string) (*cairn.Manifest, error) {
	return nil, f.err
}
func (f failObjects) CreateUpload(context.Context, string, string, client.PutOptions) (cairn.Upload, error) {
	return cairn.Upload{}, f.err
}
func (f failObjects) CompleteUploadIf(context.Context, string, string, string, []client.CompletePart, client.Condition) (*cairn.Manifest, error) {
	return nil, f.err
}

var _ Objects = failObjects{}

// failMeta is the metadata store with listings failing with err.
type failMeta struct {
	Meta
	err error
}

func (f failMeta) ListObjects(context.Context, string, string, string, int) ([]cairn.ObjectInfo, bool, error) {
	return nil, false, f.err
}

var _ Meta = failMeta{}

// checkError checks an error response: status, code, the message (exact,
// or containing want.message after "~"), nothing internal in the body,
// the request ID in the header and the body, Retry-After on a 503, and
// the full error in the log under the request ID.
func checkError(t *testing.T, got s3Response, status int, code, message string, log *logBuffer, logged string) {
	t.Helper()
	if got.status != status || got.code != code {
		t.Fatalf("got %d %s (%s), want %d %s", got.status, got.code, got.body, status, code)
	}
	if m, ok := strings.CutPrefix(message, "~"); ok && !strings.Contains(got.message, m) || !ok && got.message != message {
		t.Errorf("message %q, want %q", got.message, message)
	}
	if l := leaks.FindString(got.body); l != "" {
		t.Errorf("the body shows %q: %s", l, got.body)
	}
	id := got.header.Get("X-Amz-Request-Id")
	if id == "" || id != got.requestID || got.header.Get("X-Amz-Id-2") == "" || got.header.Get("X-Amz-Id-2") != got.hID {
		t.Errorf("request ID %q / %q, host ID %q / %q", id, got.requestID, got.header.Get("X-Amz-Id-2"), got.hID)
	}
	if ra := got.header.Get("Retry-After"); (status == http.StatusServiceUnavailable) != (ra != "") {
		t.Errorf("status %d with Retry-After %q", status, ra)
	}
	if log != nil {
		line := ""
		for l := range strings.Lines(log.String()) {
			if strings.Contains(l, "request_id="+id) {
				line = l
			}
		}
		if line == "" || !strings.Contains(line, logged) {
			t.Errorf("no log line for request %s holding %q:\n%s", id, logged, log.String())
		}
	}
}

// Every class of internal error, injected below the handler (into the
// in-memory shard store, or as the data path's or the metadata store's
// answer), reaches the client as the S3 error AWS would send, with a
// message that shows nothing internal and the request ID, while the log
// holds the whole error under that ID.
func TestErrorMapping(t *testing.T) {
	e := newEnv(t)
	log := e.logTo()
	e.mkBucket(t, "bkt")
	data := randBytes(5, 3*stripe)
	if st, body := do(t, e.signed(t, "PUT", "/bkt/obj", data, "", nil)); st != http.StatusOK {
		t.Fatalf("put: %d %s", st, body)
	}
	everyDisk := func(m map[cairn.DiskID]error, err error) {
		for n := 1; n <= 8; n++ {
			m[cairn.DiskID(fmt.Sprintf("node%d/disk1", n))] = err
		}
	}
	shardErr := func(sentinel error) error { return fmt.Errorf("%s: %w", internalDetail, sentinel) }
	objects, meta := e.h.cfg.Objects, e.h.cfg.Meta
	tests := []struct {
		name         string
		inject       func() // the failure; undone after the case
		method, path string
		status       int
		code         string
		message      string // exact, or "~" and a part
	}{
		// Failures of the shard store, through the real data path.
		{"put/shard disks gone", func() { e.shards.Set(func() { everyDisk(e.shards.FailPut, shardErr(cairn.ErrNotFound)) }) },
			"PUT", "/bkt/k", 503, "ServiceUnavailable", ErrServiceUnavailable.Message},
		{"put/disks full", func() { e.shards.Set(func() { everyDisk(e.shards.FailPut, shardErr(cairn.ErrNoSpace)) }) },
			"PUT", "/bkt/k", 507, "InsufficientStorage", ErrInsufficientSpace.Message},
		{"put/node refuses the cluster secret", func() { e.shards.Set(func() { everyDisk(e.shards.FailPut, shardErr(cairn.ErrAuth)) }) },
			"PUT", "/bkt/k", 503, "ServiceUnavailable", ErrServiceUnavailable.Message},
		{"put/node says invalid", func() { e.shards.Set(func() { everyDisk(e.shards.FailPut, shardErr(cairn.ErrInvalid)) }) },
			"PUT", "/bkt/k", 503, "ServiceUnavailable", ErrServiceUnavailable.Message},
		{"get/shards gone", func() { e.shards.Set(func() { everyDisk(e.shards.FailGet, shardErr(cairn.ErrNotFound)) }) },
			"GET", "/bkt/obj", 503, "ServiceUnavailable", ErrServiceUnavailable.Message},
		{"get/shards corrupt", func() { e.shards.Set(func() { everyDisk(e.shards.FailGet, shardErr(cairn.ErrCorrupt)) }) },
			"GET", "/bkt/obj", 503, "ServiceUnavailable", ErrServiceUnavailable.Message},
		// What the client named is missing.
		{"get/no such key", func() {}, "GET", "/bkt/nope", 404, "NoSuchKey", ErrNoSuchKey.Message},
		{"get/no such bucket", func() {}, "GET", "/nobkt/k", 404, "NoSuchBucket", ErrNoSuchBucket.Message},
		{"put/no such bucket", func() {}, "PUT", "/nobkt/k", 404, "NoSuchBucket", ErrNoSuchBucket.Message},
		{"delete bucket/no such bucket", func() {}, "DELETE", "/nobkt", 404, "NoSuchBucket", ErrNoSuchBucket.Message},
		{"list/no such bucket", func() {}, "GET", "/nobkt?list-type=2", 404, "NoSuchBucket", ErrNoSuchBucket.Message},
		{"upload part/no such upload", func() {}, "PUT", "/bkt/k?partNumber=1&uploadId=nope", 404, "NoSuchUpload", ErrNoSuchUpload.Message},
		// The data path's and the metadata store's own errors.
		{"put/commit keeps losing", func() {
			e.h.cfg.Objects = failObjects{objects, fmt.Errorf("committing bkt/k version 9f8e7d6c5b4a3f2e: %w (too many concurrent writers)", cairn.ErrConflict)}
		}, "PUT", "/bkt/k", 503, "SlowDown", ErrSlowDown.Message},
		{"complete/conflict", func() { e.h.cfg.Objects = failObjects{objects, shardErr(cairn.ErrConflict)} },
			"POST", "/bkt/k?uploadId=u1", 409, "OperationAborted", ErrOperationAborted.Message},
		{"get/corrupt", func() { e.h.cfg.Objects = failObjects{objects, shardErr(cairn.ErrCorrupt)} },
			"GET", "/bkt/k", 500, "InternalError", ErrInternal.Message},
		{"get/store refuses the cluster's credentials", func() { e.h.cfg.Objects = failObjects{objects, shardErr(cairn.ErrAuth)} },
			"GET", "/bkt/k", 500, "InternalError", ErrInternal.Message},
		{"get/store deadline", func() {
			e.h.cfg.Objects = failObjects{objects, fmt.Errorf("%s: %w", internalDetail, context.DeadlineExceeded)}
		},
			"GET", "/bkt/k", 503, "ServiceUnavailable", ErrServiceUnavailable.Message},
		{"get/anything else", func() { e.h.cfg.Objects = failObjects{objects, errors.New(internalDetail)} },
			"GET", "/bkt/k", 500, "InternalError", ErrInternal.Message},
		{"put/invalid from below", func() { e.h.cfg.Objects = failObjects{objects, shardErr(cairn.ErrInvalid)} },
			"PUT", "/bkt/k", 400, "InvalidArgument", ErrInvalidArgument.Message},
		{"create upload/version taken", func() { e.h.cfg.Objects = failObjects{objects, shardErr(cairn.ErrExists)} },
			"POST", "/bkt/k?uploads", 500, "InternalError", ErrInternal.Message},
		{"list/metadata store unavailable", func() { e.h.cfg.Meta = failMeta{meta, shardErr(cairn.ErrUnavailable)} },
			"GET", "/bkt?list-type=2", 503, "ServiceUnavailable", ErrServiceUnavailable.Message},
		{"list/metadata store not found", func() { e.h.cfg.Meta = failMeta{meta, shardErr(cairn.ErrNotFound)} },
			"GET", "/bkt?list-type=2", 404, "NoSuchBucket", ErrNoSuchBucket.Message},
		// The gateway's own errors keep their safe detail.
		{"list/bad max-keys", func() {}, "GET", "/bkt?list-type=2&max-keys=x", 400, "InvalidArgument", ErrInvalidArgument.Message + ` (max-keys "x")`},
		{"get/bad signature", func() {}, "GET", "/bkt/obj?tampered", 403, "SignatureDoesNotMatch", ErrSignatureDoesNotMatch.Message},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.inject()
			defer func() {
				e.h.cfg.Objects, e.h.cfg.Meta = objects, meta
				e.shards.Set(func() { clear(e.shards.FailPut); clear(e.shards.FailGet) })
			}()
			var body []byte
			switch tc.method {
			case "PUT":
				body = data
			case "POST":
				if strings.Contains(tc.path, "uploadId") {
					body = []byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"x"</ETag></Part></CompleteMultipartUpload>`)
				}
			}
			path, tampered := strings.CutSuffix(tc.path, "?tampered")
			r := e.signed(t, tc.method, path, body, "", nil)
			if tampered {
				r.URL.RawQuery = "tampered"
			}
			logged := ""
			if tc.status >= 500 && tc.status != 501 {
				logged = "9f8e7d6c5b4a" // the whole error
			}
			checkError(t, send(t, r), tc.status, tc.code, tc.message, log, logged)
		})
	}
	// Successes carry the IDs too.
	ok := send(t, e.signed(t, "GET", "/bkt/obj", nil, "", nil))
	if ok.status != http.StatusOK || ok.body != string(data) || ok.header.Get("X-Amz-Request-Id") == "" || ok.header.Get("X-Amz-Id-2") == "" {
		t.Fatalf("GET: %d, %d bytes, headers %v", ok.status, len(ok.body), ok.header)
	}
}

// The README's disk-loss demo on one server with six disks: after two
// disks are lost, a PUT to an rs-4-2 bucket (6 wide) cannot keep its
// redundancy. It answers 503 ServiceUnavailable saying why, as the CLI
// does, and never NoSuchKey or a path; reads still work.
func TestPutWithTooFewWritableDisks(t *testing.T) {
	e := newEnvLayout(t, RootCredentials(testAccess, testSecret), 1, 6)
	log := e.logTo()
	ctx := context.Background()
	e.mkBucket(t, "photos") // the default, rs-4-2
	if st, body := do(t, e.signed(t, "PUT", "/archive", nil, "", http.Header{"X-Cairn-Policy": {"rs-3-2"}})); st != http.StatusOK {
		t.Fatalf("create archive: %d %s", st, body)
	}
	data := randBytes(9, 5*stripe)
	if _, err := e.root().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String("before"), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}

	// The disk directories vanish: their nodes fail every shard request,
	// before the cluster map knows.
	lost := []cairn.DiskID{"node1/disk2", "node1/disk5"}
	e.shards.Set(func() {
		for _, d := range lost {
			e.shards.FailPut[d] = fmt.Errorf("put shard on %s: open /srv/cairn/%s/tmp/9f8e7d6c5b4a: %w", d, d, cairn.ErrNotFound)
			e.shards.FailGet[d] = fmt.Errorf("get shard on %s: %w", d, cairn.ErrNotFound)
		}
	})
	got := send(t, e.signed(t, "PUT", "/photos/during", data, "", nil))
	checkError(t, got, 503, "ServiceUnavailable", ErrServiceUnavailable.Message, log, "open /srv/cairn/node1/disk")

	// Then the director marks them down. A gateway that reads the map
	// now (a fresh data path: the first caches disk states for a moment) says
	// how many disks the stripe needs, and puts nothing anywhere.
	for _, d := range lost {
		if err := e.meta.SetDiskState(ctx, d, cairn.DiskDown, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	e.h.cfg.Objects = client.New(e.meta, e.shards, client.Config{BlockSize: blockSize})
	stored := e.files(t)
	_, err := e.root().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String("after"), Body: bytes.NewReader(data)})
	wantCode(t, err, "ServiceUnavailable")
	wantStatus(t, err, 503)
	for _, tc := range []struct{ path, message string }{
		{"/photos/after", ErrServiceUnavailable.Message + " (placement needs 6 writable disks, the cluster has 4)"},
		// rs-3-2 is 5 wide and has no placement table yet: computing it
		// fails the same way, in the CLI's words.
		{"/archive/after", ErrServiceUnavailable.Message + " (placement needs 5 writable disks, the cluster has 4)"},
	} {
		got := send(t, e.signed(t, "PUT", tc.path, data, "", nil))
		checkError(t, got, 503, "ServiceUnavailable", tc.message, log, "placement needs")
	}
	if n := e.files(t); n != stored {
		t.Fatalf("%d shard files after the refused PUTs, %d before", n, stored)
	}
	out, err := e.root().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String("before")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || !bytes.Equal(b, data) {
		t.Fatalf("GET after losing two disks: %d bytes, %v", len(b), err)
	}
}
