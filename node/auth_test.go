package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cairn"
	"cairn/internal/vfs"
	"cairn/node/wire"
)

// recorder is a transport that keeps a copy of every request it sends
// (method, URL and headers: what an eavesdropper sees of a bodiless
// request).
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Clone(context.Background()))
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// replay sends a recorded bodiless request again, verbatim.
func replay(t *testing.T, rec *http.Request) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(rec.Method, rec.URL.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = rec.Header.Clone()
	return do(t, req)
}

// A DELETE recorded off the wire and replayed after it succeeded (and the
// shard was written again) is refused, and the shard stays.
func TestReplayedRequestRefused(t *testing.T) {
	d := openDisk(t, "node1/disk1", vfs.NewMem(), "/d1")
	n := newTestNode(t, d)
	rec := &recorder{}
	c := NewClient(testSecret, n.resolve, &http.Client{Transport: rec})
	ctx := context.Background()
	name := shardName(1, 0)
	if _, err := c.PutShard(ctx, d.id, name, bytes.NewReader([]byte("hello"))); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteShard(ctx, d.id, name); err != nil {
		t.Fatal(err)
	}
	del := rec.reqs[len(rec.reqs)-1]
	if del.Method != http.MethodDelete || del.Header.Get("Authorization") == "" {
		t.Fatalf("recorded %s %s %v, want a signed DELETE", del.Method, del.URL, del.Header)
	}
	if strings.Contains(strings.Join(del.Header.Values("Authorization"), ""), testSecret) {
		t.Fatal("the cluster secret crossed the wire")
	}
	if _, err := c.PutShard(ctx, d.id, name, bytes.NewReader([]byte("again"))); err != nil {
		t.Fatal(err)
	}
	resp, body := replay(t, del)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "replayed") {
		t.Fatalf("replayed DELETE: %d %s, want 401 replayed", resp.StatusCode, body)
	}
	if _, err := d.v.Stat(ctx, name); err != nil {
		t.Fatalf("the replayed DELETE removed the shard: %v", err)
	}
	// A fresh request of the same call is served: each carries its nonce.
	if err := c.DeleteShard(ctx, d.id, name); err != nil {
		t.Fatal(err)
	}
}

// A request signed outside the skew window is refused; one inside it is
// served.
func TestRequestOutsideWindowRefused(t *testing.T) {
	d := openDisk(t, "node1/disk1", vfs.NewMem(), "/d1")
	n := newTestNode(t, d)
	key := testKey(testSecret)
	for _, c := range []struct {
		off  time.Duration
		want int
	}{
		{-DefaultSkew - time.Minute, http.StatusUnauthorized},
		{DefaultSkew + time.Minute, http.StatusUnauthorized},
		{-DefaultSkew + time.Minute, http.StatusOK},
		{DefaultSkew - time.Minute, http.StatusOK},
	} {
		req, _ := http.NewRequest(http.MethodGet, n.srv.URL+wire.DiskPath(d.id), nil)
		sign(req, &key, time.Now().Add(c.off), newNonce(), emptySHA256)
		resp, b := do(t, req)
		if resp.StatusCode != c.want {
			t.Errorf("signed %v off: %d %s, want %d", c.off, resp.StatusCode, b, c.want)
		}
		if c.want == http.StatusUnauthorized && !strings.Contains(b, "window") {
			t.Errorf("signed %v off: %s, want the window named", c.off, b)
		}
	}
}

func sha(b string) string {
	s := sha256.Sum256([]byte(b))
	return hex.EncodeToString(s[:])
}

// A body that does not match its signed digest, or a digest changed after
// signing, is refused before anything is stored; a body under its right
// digest is served.
func TestTamperedBodyDigestRefused(t *testing.T) {
	d := openDisk(t, "node1/disk1", vfs.NewMem(), "/d1")
	n := newTestNode(t, d)
	key := testKey(testSecret)
	name := shardName(2, 0)
	put := func(body, signedDigest, sentDigest string) (int, string) {
		req, _ := http.NewRequest(http.MethodPut, n.srv.URL+wire.ShardPath(d.id, name), strings.NewReader(body))
		sign(req, &key, time.Now(), newNonce(), signedDigest)
		req.Header.Set(wire.HeaderContentSHA256, sentDigest)
		resp, b := do(t, req)
		return resp.StatusCode, b
	}
	for _, c := range []struct {
		what, body, signed, sent, want string
	}{
		{"body altered", "hellp", sha("hello"), sha("hello"), "does not match"},
		{"digest altered", "hellp", sha("hello"), sha("hellp"), "wrong signature"},
		{"digest dropped for the unsigned marker", "hellp", sha("hello"), wire.UnsignedPayload, "wrong signature"},
		{"digest malformed", "hello", sha("hello"), "xyz", "malformed"},
	} {
		st, b := put(c.body, c.signed, c.sent)
		if st != http.StatusUnauthorized || !strings.Contains(b, c.want) {
			t.Errorf("%s: %d %s, want 401 %q", c.what, st, b, c.want)
		}
		if _, err := d.v.Stat(context.Background(), name); !errors.Is(err, cairn.ErrNotFound) {
			t.Fatalf("%s: the shard was stored (%v)", c.what, err)
		}
	}
	if st, b := put("hello", sha("hello"), sha("hello")); st != http.StatusCreated {
		t.Fatalf("put under its digest: %d %s", st, b)
	}
	rc, err := n.client.GetShard(context.Background(), d.id, name, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(got) != "hello" {
		t.Fatalf("read back %q %v", got, err)
	}
}

// Requests that are not signed by the cluster's key, or altered after
// signing, are refused.
func TestSignatureRefusals(t *testing.T) {
	d := openDisk(t, "node1/disk1", vfs.NewMem(), "/d1")
	n := newTestNode(t, d)
	for _, c := range []struct {
		what string
		prep func(*http.Request)
		want string
	}{
		{"the old bearer secret", func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+testSecret)
		}, "no " + wire.AuthScheme},
		{"another secret", func(r *http.Request) { signTest(t, r, "not-"+testSecret) }, "wrong signature"},
		{"path altered", func(r *http.Request) {
			signTest(t, r, testSecret)
			r.URL.Path += "x"
		}, "wrong signature"},
		{"query altered", func(r *http.Request) {
			signTest(t, r, testSecret)
			r.URL.RawQuery = "limit=1"
		}, "wrong signature"},
		{"unparsable query part added", func(r *http.Request) {
			signTest(t, r, testSecret)
			r.URL.RawQuery = "x=%zz"
		}, "malformed query"},
		{"method altered", func(r *http.Request) {
			signTest(t, r, testSecret)
			r.Method = http.MethodDelete
		}, "wrong signature"},
		{"nonce altered", func(r *http.Request) {
			signTest(t, r, testSecret)
			r.Header.Set(wire.HeaderNonce, newNonce())
		}, "wrong signature"},
		{"nonce malformed", func(r *http.Request) {
			signTest(t, r, testSecret)
			r.Header.Set(wire.HeaderNonce, "abc")
		}, "malformed"},
		{"date malformed", func(r *http.Request) {
			signTest(t, r, testSecret)
			r.Header.Set(wire.HeaderDate, "yesterday")
		}, "malformed"},
		{"identity given twice", func(r *http.Request) {
			r.Header.Set(wire.HeaderIdentity, "aWQ=")
			signTest(t, r, testSecret)
			r.Header.Add(wire.HeaderIdentity, "b3RoZXI=")
		}, "more than once"},
		{"repair spec added", func(r *http.Request) {
			signTest(t, r, testSecret)
			r.Header.Set(wire.HeaderRepair, "{}")
		}, "wrong signature"},
	} {
		req, _ := http.NewRequest(http.MethodGet, n.srv.URL+wire.DiskPath(d.id)+"/shards", nil)
		c.prep(req)
		resp, b := do(t, req)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(b, c.want) ||
			!strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), wire.AuthScheme) {
			t.Errorf("%s: %d %s, want 401 %q", c.what, resp.StatusCode, b, c.want)
		}
	}
}

// The replay cache forgets a nonce only when its request has left the
// skew window, and refuses requests rather than forget when full
// (virtual time).
func TestReplayCacheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const skew = time.Minute
		v := verifier{secret: testSecret, skew: skew, replay: newReplayCache(2)}
		key := testKey(testSecret)
		signed := func(at time.Time) *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/v1/health", nil)
			sign(r, &key, at, newNonce(), emptySHA256)
			return r
		}
		again := func(r *http.Request) *http.Request {
			c := httptest.NewRequest(r.Method, r.URL.String(), nil)
			c.Header = r.Header.Clone()
			return c
		}
		t0 := time.Now()
		a, b := signed(t0), signed(t0.Add(skew)) // b is signed at the edge of the future window
		if _, err := v.verify(a); err != nil {
			t.Fatal(err)
		}
		if _, err := v.verify(again(a)); !errors.Is(err, cairn.ErrAuth) || !strings.Contains(err.Error(), "replayed") {
			t.Fatalf("replay: %v", err)
		}
		if _, err := v.verify(b); err != nil {
			t.Fatal(err)
		}
		if _, err := v.verify(signed(t0)); !errors.Is(err, cairn.ErrUnavailable) {
			t.Fatalf("a third nonce in a cache of 2: %v, want ErrUnavailable", err)
		}
		time.Sleep(skew + time.Second) // a's time has left the window: its nonce may go
		if _, err := v.verify(again(a)); !errors.Is(err, cairn.ErrAuth) || !strings.Contains(err.Error(), "window") {
			t.Fatalf("replay of a after the window: %v, want refused for its time", err)
		}
		if _, err := v.verify(signed(time.Now())); err != nil {
			t.Fatalf("after a expired: %v", err)
		}
		if got := v.replay.len(); got != 2 {
			t.Fatalf("cache holds %d nonces, want 2 (b and the new one)", got)
		}
		if _, err := v.verify(again(b)); !errors.Is(err, cairn.ErrAuth) || !strings.Contains(err.Error(), "replayed") {
			t.Fatalf("replay of b within its window: %v", err)
		}
		time.Sleep(skew)
		if _, err := v.verify(again(b)); !errors.Is(err, cairn.ErrAuth) || !strings.Contains(err.Error(), "window") {
			t.Fatalf("replay of b after its window: %v", err)
		}
	})
}

// BenchmarkSignVerify is the cost a bodiless request pays for its
// signature: signing on the client, checking and recording the nonce on
// the node.
func BenchmarkSignVerify(b *testing.B) {
	key := testKey(testSecret)
	v := verifier{secret: testSecret, skew: DefaultSkew, replay: newReplayCache(math.MaxInt)} // unbounded: the bench sends more requests than any window
	path := wire.ShardPath("node1/disk1", shardName(1, 0))
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodGet, path+"?offset=0&length=4096", nil)
		sign(r, &key, time.Now(), newNonce(), emptySHA256)
		if _, err := v.verify(r); err != nil {
			b.Fatal(err)
		}
	}
}
