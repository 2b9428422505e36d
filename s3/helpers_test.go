package s3

import (
	"bytes"
	"cairn/client/clienttest"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/minio/minio-go/v7"
	mcreds "github.com/minio/minio-go/v7/pkg/credentials"

	"cairn"
	"cairn/cleanup"
	"cairn/client"
	"cairn/crypt"
	"cairn/meta/mem"
)

const (
	testAccess = "AKIACAIRNTEST"
	testSecret = "cairn-test-secret-key/0123456789"
	testRegion = "us-east-1"
	blockSize  = 4096
	// stripe is the data bytes of one stripe of the default rs-4-2
	// objects larger than a stripe.
	stripe = 4 * blockSize
)

// env is a gateway over meta/mem and in-memory shards, served on a real
// socket.
type env struct {
	meta   *mem.Store
	shards *clienttest.MemShards
	h      *Handler
	srv    *httptest.Server
	skew   atomic.Int64  // added to the gateway's clock, in ns
	served atomic.Int64  // requests the gateway has finished
	finish chan struct{} // a token after each finished request (buffered 1): waitServed waits on it

	mu    sync.Mutex
	modes map[string]int // x-amz-content-sha256 modes seen (hex hashes as "sha256"); guarded by mu
}

// files runs the cleanup queue with no grace period (as if it had
// passed) and returns the shard files left.
func (e *env) files(t testing.TB) int {
	t.Helper()
	if _, err := cleanup.New(e.meta, e.shards, cleanup.Config{Grace: -1, Rate: 1e6}).Run(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	return e.shards.Count()
}

// payloadModes returns how many requests used each payload mode.
func (e *env) payloadModes() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.modes)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, RootCredentials(testAccess, testSecret))
}

// newEnvWith is newEnv with other credentials.
func newEnvWith(t *testing.T, creds Credentials) *env {
	t.Helper()
	return newEnvLayout(t, creds, 8, 1)
}

// newEnvLayout is newEnvWith on nodes×disks disks ("node1/disk1", ...).
func newEnvLayout(t *testing.T, creds Credentials, nodes, disks int) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{meta: mem.New(), shards: clienttest.NewMemShards(), modes: map[string]int{},
		finish: make(chan struct{}, 1)}
	for n := 1; n <= nodes; n++ {
		id := cairn.NodeID(fmt.Sprintf("node%d", n))
		if err := e.meta.PutNode(ctx, cairn.Node{ID: id, Addr: "x"}); err != nil {
			t.Fatal(err)
		}
		for k := 1; k <= disks; k++ {
			d := cairn.Disk{ID: cairn.DiskID(fmt.Sprintf("%s/disk%d", id, k)), Node: id, Capacity: 1 << 40, State: cairn.DiskUp}
			if err := e.meta.PutDisk(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	keys, err := crypt.NewKeyring(strings.NewReader(strings.Repeat("test master key!", 4)))
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(e.meta, e.shards, client.Config{BlockSize: blockSize, WindowBytes: 3 * stripe, Keys: keys})
	h, err := New(Config{
		Objects: c, Meta: e.meta, Credentials: creds,
		DefaultPolicy:     "rs-4-2",
		AllowInsecureSSEC: true, // httptest serves plain HTTP on loopback
		Now:               func() time.Time { return time.Now().Add(time.Duration(e.skew.Load())) },
	})
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mode := r.Header.Get("X-Amz-Content-Sha256")
		if isHexSHA256(mode) {
			mode = "sha256"
		}
		if r.URL.Query().Has("X-Amz-Signature") {
			mode = "presigned"
		}
		e.mu.Lock()
		e.modes[mode]++
		e.mu.Unlock()
		defer func() {
			e.served.Add(1)
			select {
			case e.finish <- struct{}{}:
			default: // a token is already there; the waiter reads served anyway
			}
		}()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

// aws returns an aws-sdk-go-v2 client (path style, no retries).
func (e *env) aws(access, secret string, opts ...func(*s3.Options)) *s3.Client {
	return s3.New(s3.Options{
		Region:       testRegion,
		BaseEndpoint: aws.String(e.srv.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(access, secret, ""),
		Retryer:      aws.NopRetryer{},
	}, opts...)
}

func (e *env) root() *s3.Client { return e.aws(testAccess, testSecret) }

// minio returns a minio-go client (path style).
func (e *env) minio(t *testing.T) *minio.Client {
	t.Helper()
	mc, err := minio.New(strings.TrimPrefix(e.srv.URL, "http://"), &minio.Options{
		Creds: mcreds.NewStaticV4(testAccess, testSecret, ""), Region: testRegion,
		BucketLookup: minio.BucketLookupPath, MaxRetries: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	return mc
}

// mkBucket creates a bucket through the SDK.
func (e *env) mkBucket(t *testing.T, name string) {
	t.Helper()
	if _, err := e.root().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
}

// signed builds a request signed with aws-sdk-go-v2's SigV4 signer. The
// body's SHA-256 is signed unless payloadHash is given.
func (e *env) signed(t *testing.T, method, path string, body []byte, payloadHash string, hdr http.Header) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		r.Header[k] = v
	}
	if payloadHash == "" {
		sum := sha256.Sum256(body)
		payloadHash = hex.EncodeToString(sum[:])
	}
	r.Header.Set("X-Amz-Content-Sha256", payloadHash)
	creds := aws.Credentials{AccessKeyID: testAccess, SecretAccessKey: testSecret}
	err = v4.NewSigner().SignHTTP(context.Background(), creds, r, payloadHash, "s3", testRegion, time.Now(),
		func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// do sends r and returns the status and body.
func do(t *testing.T, r *http.Request) (int, string) {
	t.Helper()
	got := send(t, r)
	return got.status, got.body
}

// s3Response is an answer as a client sees it.
type s3Response struct {
	status         int
	header         http.Header
	body           string
	code, message  string
	requestID, hID string // from the XML body
}

// send sends r and returns the answer, with the fields of an S3 error
// body.
func send(t *testing.T, r *http.Request) s3Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	return readResponse(t, resp)
}

// readResponse reads and closes resp, with the fields of an S3 error
// body.
func readResponse(t *testing.T, resp *http.Response) s3Response {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := s3Response{status: resp.StatusCode, header: resp.Header, body: string(b)}
	var eb errorBody
	if resp.StatusCode >= 300 && resp.Header.Get("Content-Type") == "application/xml" {
		if err := xml.Unmarshal(b, &eb); err != nil {
			t.Fatalf("error body %q: %v", b, err)
		}
		out.code, out.message, out.requestID, out.hID = eb.Code, eb.Message, eb.RequestID, eb.HostID
	}
	return out
}

// wantCode checks that err is an S3 API error with code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("got error %v, want S3 error %s", err, code)
	}
	if ae.ErrorCode() != code {
		t.Fatalf("got S3 error %s (%v), want %s", ae.ErrorCode(), err, code)
	}
}

// wantStatus checks the HTTP status of an SDK error (HEAD responses have
// no body to carry a code).
func wantStatus(t *testing.T, err error, status int) {
	t.Helper()
	var re interface{ HTTPStatusCode() int }
	if !errors.As(err, &re) || re.HTTPStatusCode() != status {
		t.Fatalf("got error %v, want HTTP %d", err, status)
	}
}

func randBytes(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// asStatus finds an error carrying an HTTP status.
func asStatus(err error, re *interface{ HTTPStatusCode() int }) bool {
	return err != nil && errors.As(err, re)
}
