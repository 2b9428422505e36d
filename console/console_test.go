package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cairn"
	"cairn/client"
	"cairn/client/clienttest"
	"cairn/meta/mem"
	"cairn/s3"
)

const (
	rootKey    = "AKCONSOLEROOT"
	rootSecret = "console-root-secret-0123"
	aliceKey   = "AKALICE"
	aliceSec   = "alice-secret-0123"
	bobKey     = "AKBOB"
	bobSec     = "bob-secret-0123"
)

// fakeCluster counts its calls and answers a fixed status.
type fakeCluster struct{ calls atomic.Int64 }

func (f *fakeCluster) Status(context.Context) (any, error) {
	f.calls.Add(1)
	return map[string]any{"repair_queued": 3, "nodes": []any{}}, nil
}

// env is a console over a gateway over meta/mem and in-memory shards,
// served on a real socket.
type env struct {
	srv      *httptest.Server
	s3srv    *httptest.Server // the gateway itself, for comparisons
	console  *Console
	cluster  *fakeCluster
	counters *Counters
	now      atomic.Int64 // offset added to the console's clock, ns
}

func newEnv(t *testing.T, tweak func(*Config)) *env {
	t.Helper()
	ctx := context.Background()
	store := mem.New()
	for n := 1; n <= 6; n++ {
		id := cairn.NodeID(fmt.Sprintf("node%d", n))
		if err := store.PutNode(ctx, cairn.Node{ID: id, Addr: "x"}); err != nil {
			t.Fatal(err)
		}
		d := cairn.Disk{ID: cairn.DiskID(string(id) + "/disk1"), Node: id, Capacity: 1 << 40, State: cairn.DiskUp}
		if err := store.PutDisk(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	creds := s3.RootCredentials(rootKey, rootSecret)
	creds[aliceKey] = s3.Identity{Name: "alice", AccessKey: aliceKey, SecretKey: aliceSec}
	creds[bobKey] = s3.Identity{Name: "bob", AccessKey: bobKey, SecretKey: bobSec}
	data := client.New(store, clienttest.NewMemShards(), client.Config{BlockSize: 4096})
	h, err := s3.New(s3.Config{Objects: data, Meta: store, Credentials: creds, AllowedPolicies: []string{"rs-4-2", "rs-3-2"}})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{cluster: &fakeCluster{}, counters: &Counters{}}
	wrapped := e.counters.Wrap(h)
	cfg := Config{S3: wrapped, Credentials: creds, Objects: data, Meta: store, Cluster: e.cluster, Counters: e.counters,
		Now: func() time.Time { return time.Now().Add(time.Duration(e.now.Load())) }}
	if tweak != nil {
		tweak(&cfg)
	}
	if e.console, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(e.console)
	t.Cleanup(e.srv.Close)
	e.s3srv = httptest.NewServer(wrapped)
	t.Cleanup(e.s3srv.Close)
	return e
}

// browser is an HTTP client with a cookie jar, as a browser on the
// console's page.
type browser struct {
	t    *testing.T
	e    *env
	c    *http.Client
	csrf bool // send the console's header on state-changing calls
}

func (e *env) browser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, e: e, c: &http.Client{Jar: jar}, csrf: true}
}

// do sends a request and returns the status and body.
func (b *browser) do(method, path string, body io.Reader, hdr ...string) (int, []byte, http.Header) {
	b.t.Helper()
	r, err := http.NewRequest(method, b.e.srv.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if b.csrf && method != http.MethodGet {
		r.Header.Set(CSRFHeader, "1")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := b.c.Do(r)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp.StatusCode, out, resp.Header
}

// rootWithBucket returns a browser logged in as root that made bucket.
func (e *env) rootWithBucket(t *testing.T, bucket string) *browser {
	t.Helper()
	b := e.browser(t)
	b.mustLogin(rootKey, rootSecret)
	b.json(http.MethodPost, "/api/buckets", createBucketRequest{Name: bucket}, http.StatusCreated, nil)
	return b
}

func (b *browser) login(ak, sk string) (int, http.Header) {
	b.t.Helper()
	body, _ := json.Marshal(loginRequest{AccessKey: ak, SecretKey: sk})
	st, _, h := b.do(http.MethodPost, "/api/login", bytes.NewReader(body))
	return st, h
}

func (b *browser) mustLogin(ak, sk string) {
	b.t.Helper()
	if st, _ := b.login(ak, sk); st != http.StatusOK {
		b.t.Fatalf("login %s: %d", ak, st)
	}
}

func (b *browser) json(method, path string, body any, want int, into any) {
	b.t.Helper()
	var r io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		r = bytes.NewReader(j)
	}
	st, out, _ := b.do(method, path, r)
	if st != want {
		b.t.Fatalf("%s %s: %d %s, want %d", method, path, st, out, want)
	}
	if into != nil {
		if err := json.Unmarshal(out, into); err != nil {
			b.t.Fatalf("%s %s: %v in %s", method, path, err, out)
		}
	}
}

func objPath(p, bucket, key string) string {
	return p + "?bucket=" + url.QueryEscape(bucket) + "&key=" + url.QueryEscape(key)
}

// The login is S3's check: a wrong secret or an unknown key gets no
// session and no cookie; the right ones get an HttpOnly, SameSite=Strict
// cookie holding a 256-bit ID.
func TestLoginChecksLikeS3(t *testing.T) {
	e := newEnv(t, nil)
	b := e.browser(t)
	for _, tc := range []struct{ what, ak, sk string }{
		{"wrong secret", aliceKey, "alice-secret-0124"},
		{"root's key, alice's secret", rootKey, aliceSec},
		{"unknown key", "AKNOBODY", aliceSec},
	} {
		st, h := b.login(tc.ak, tc.sk)
		if st != http.StatusUnauthorized || h.Get("Set-Cookie") != "" {
			t.Errorf("%s: %d, Set-Cookie %q; want 401 and no cookie", tc.what, st, h.Get("Set-Cookie"))
		}
		if st, body, _ := b.do(http.MethodGet, "/api/session", nil); st != http.StatusUnauthorized {
			t.Errorf("%s: a session after all: %d %s", tc.what, st, body)
		}
	}
	if e.console.sessions.len() != 0 {
		t.Fatalf("%d sessions after failed logins", e.console.sessions.len())
	}
	st, h := b.login(aliceKey, aliceSec)
	if st != http.StatusOK {
		t.Fatalf("alice's login: %d", st)
	}
	ck, err := http.ParseSetCookie(h.Get("Set-Cookie"))
	if err != nil {
		t.Fatal(err)
	}
	if ck.Name != CookieName || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || len(ck.Value) != 2*sessionIDBytes {
		t.Fatalf("session cookie %+v", ck)
	}
	var who whoamiResponse
	b.json(http.MethodGet, "/api/session", nil, http.StatusOK, &who)
	if who.Name != "alice" || who.Root {
		t.Fatalf("session %+v", who)
	}
	b.json(http.MethodPost, "/api/logout", nil, http.StatusNoContent, nil)
	if st, _, _ := b.do(http.MethodGet, "/api/session", nil); st != http.StatusUnauthorized {
		t.Fatalf("after logout: %d", st)
	}
}

// Failed logins are rate limited: past the burst they get 429 without
// being checked, until the budget refills.
func TestLoginFailuresLimited(t *testing.T) {
	e := newEnv(t, nil)
	b := e.browser(t)
	limited := 0
	for range 25 {
		if st, _ := b.login(aliceKey, "wrong-secret-123"); st == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("25 failed logins in a row, none limited")
	}
	if st, _ := b.login(aliceKey, aliceSec); st != http.StatusTooManyRequests {
		t.Fatalf("a good login while limited: %d, want 429", st)
	}
	e.now.Add(int64(time.Minute)) // the budget refills
	b.mustLogin(aliceKey, aliceSec)
}

// No endpoint showing data answers without a live session: no cookie, a
// forged one, an expired one.
func TestUnauthenticatedRefused(t *testing.T) {
	e := newEnv(t, nil)
	root := e.browser(t)
	root.mustLogin(rootKey, rootSecret)
	root.json(http.MethodPost, "/api/buckets", createBucketRequest{Name: "photos"}, http.StatusCreated, nil)
	if st, body, _ := root.do(http.MethodPut, objPath("/api/object", "photos", "a/cat.jpg"), strings.NewReader("meow")); st != http.StatusOK {
		t.Fatalf("upload: %d %s", st, body)
	}
	calls := []struct{ method, path string }{
		{"GET", "/api/session"}, {"GET", "/api/cluster"}, {"GET", "/api/throughput"}, {"GET", "/api/buckets"},
		{"POST", "/api/buckets"}, {"GET", "/api/objects?bucket=photos"}, {"GET", objPath("/api/object", "photos", "a/cat.jpg")},
		{"PUT", objPath("/api/object", "photos", "a/dog.jpg")}, {"DELETE", objPath("/api/object", "photos", "a/cat.jpg")},
		{"GET", objPath("/api/manifest", "photos", "a/cat.jpg")},
	}
	anon := e.browser(t)
	forged := e.browser(t)
	u, _ := url.Parse(e.srv.URL)
	forged.c.Jar.SetCookies(u, []*http.Cookie{{Name: CookieName, Value: strings.Repeat("ab", sessionIDBytes)}})
	for _, who := range []struct {
		name string
		b    *browser
	}{{"no cookie", anon}, {"forged cookie", forged}} {
		for _, c := range calls {
			st, body, _ := who.b.do(c.method, c.path, strings.NewReader("{}"))
			if st != http.StatusUnauthorized || bytes.Contains(body, []byte("cat")) {
				t.Errorf("%s: %s %s: %d %s, want 401", who.name, c.method, c.path, st, body)
			}
		}
	}
	e.now.Add(int64(9 * time.Hour)) // past the default SessionTTL
	for _, c := range calls {
		if st, body, _ := root.do(c.method, c.path, strings.NewReader("{}")); st != http.StatusUnauthorized {
			t.Errorf("expired session: %s %s: %d %s, want 401", c.method, c.path, st, body)
		}
	}
	// The object is still there: none of the refused calls reached S3.
	e.now.Store(0) // the console signs with its clock, which must agree with the gateway's
	b := e.browser(t)
	b.mustLogin(rootKey, rootSecret)
	if st, body, _ := b.do(http.MethodGet, objPath("/api/object", "photos", "a/cat.jpg"), nil); st != http.StatusOK || string(body) != "meow" {
		t.Fatalf("download after the refused calls: %d %q", st, body)
	}
	if st, _, _ := b.do(http.MethodGet, objPath("/api/object", "photos", "a/dog.jpg"), nil); st != http.StatusNotFound {
		t.Fatalf("the refused upload exists: %d", st)
	}
}

// A state-changing call needs the console's header and, if the browser
// names an origin, the console's own.
func TestStateChangingCallsNeedTheHeader(t *testing.T) {
	e := newEnv(t, nil)
	b := e.browser(t)
	b.mustLogin(rootKey, rootSecret)
	b.csrf = false
	body := `{"name":"evil"}`
	if st, out, _ := b.do(http.MethodPost, "/api/buckets", strings.NewReader(body)); st != http.StatusForbidden {
		t.Fatalf("POST without the header: %d %s", st, out)
	}
	b.csrf = true
	if st, out, _ := b.do(http.MethodPost, "/api/buckets", strings.NewReader(body), "Origin", "http://evil.example"); st != http.StatusForbidden {
		t.Fatalf("POST from another origin: %d %s", st, out)
	}
	var l bucketsResponse
	b.json(http.MethodGet, "/api/buckets", nil, http.StatusOK, &l)
	if len(l.Buckets) != 0 {
		t.Fatalf("a refused call made a bucket: %+v", l)
	}
	if st, out, _ := b.do(http.MethodPost, "/api/buckets", strings.NewReader(body), "Origin", e.srv.URL); st != http.StatusCreated {
		t.Fatalf("POST from the console's origin: %d %s", st, out)
	}
	// A login is state-changing too.
	anon := e.browser(t)
	anon.csrf = false
	if st, _ := anon.login(rootKey, rootSecret); st != http.StatusForbidden {
		t.Fatalf("login without the header: %d", st)
	}
}

// The console acts as its user: alice sees and touches her buckets only,
// and not the cluster; root sees everything.
func TestActsAsTheUser(t *testing.T) {
	e := newEnv(t, nil)
	alice, bob, root := e.browser(t), e.browser(t), e.browser(t)
	alice.mustLogin(aliceKey, aliceSec)
	bob.mustLogin(bobKey, bobSec)
	root.mustLogin(rootKey, rootSecret)
	alice.json(http.MethodPost, "/api/buckets", createBucketRequest{Name: "alices", Policy: "rs-3-2"}, http.StatusCreated, nil)
	if st, out, _ := alice.do(http.MethodPost, "/api/buckets", strings.NewReader(`{"name":"wide","policy":"rs-10-4"}`)); st != http.StatusForbidden && st != http.StatusBadRequest {
		t.Fatalf("alice chose a policy off her allow-list: %d %s", st, out)
	}
	if st, out, _ := alice.do(http.MethodPut, objPath("/api/object", "alices", "diary"), strings.NewReader("dear diary")); st != http.StatusOK {
		t.Fatalf("alice's upload: %d %s", st, out)
	}
	var l bucketsResponse
	bob.json(http.MethodGet, "/api/buckets", nil, http.StatusOK, &l)
	if len(l.Buckets) != 0 {
		t.Fatalf("bob sees %+v", l)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/objects?bucket=alices"}, {"GET", objPath("/api/object", "alices", "diary")},
		{"GET", objPath("/api/manifest", "alices", "diary")}, {"DELETE", objPath("/api/object", "alices", "diary")},
		{"PUT", objPath("/api/object", "alices", "graffiti")}, {"GET", "/api/cluster"}, {"GET", "/api/throughput"},
	} {
		st, body, _ := bob.do(c.method, c.path, strings.NewReader("x"))
		if st != http.StatusForbidden || bytes.Contains(body, []byte("dear")) {
			t.Errorf("bob: %s %s: %d %s, want 403", c.method, c.path, st, body)
		}
	}
	if st, _, _ := alice.do(http.MethodGet, "/api/cluster", nil); st != http.StatusForbidden {
		t.Errorf("alice sees the cluster: %d", st)
	}
	root.json(http.MethodGet, "/api/buckets", nil, http.StatusOK, &l)
	if len(l.Buckets) != 1 || l.Buckets[0].Owner != "alice" || l.Buckets[0].Policy != "rs-3-2" || l.Buckets[0].Usage == nil || l.Buckets[0].Usage.Objects != 1 {
		t.Fatalf("root's bucket list: %+v", l)
	}
	var st map[string]any
	root.json(http.MethodGet, "/api/cluster", nil, http.StatusOK, &st)
	if st["repair_queued"] != float64(3) {
		t.Fatalf("cluster status %v", st)
	}
}

// Upload, browse by prefix, download, manifest and delete through the
// console give what S3 gives.
func TestObjectBrowser(t *testing.T) {
	e := newEnv(t, nil)
	b := e.rootWithBucket(t, "photos")
	big := bytes.Repeat([]byte("0123456789abcdef"), 20000) // several stripes
	files := map[string][]byte{"2026/holiday.mp4": big, "2026/notes.txt": []byte("notes"), "top.txt": []byte("top"), "2026/may/a b+c.txt": []byte("odd name")}
	for k, v := range files {
		if st, out, _ := b.do(http.MethodPut, objPath("/api/object", "photos", k), bytes.NewReader(v), "Content-Type", "text/plain"); st != http.StatusOK {
			t.Fatalf("upload %s: %d %s", k, st, out)
		}
	}
	var root, sub objectsResponse
	b.json(http.MethodGet, "/api/objects?bucket=photos", nil, http.StatusOK, &root)
	if len(root.Prefixes) != 1 || root.Prefixes[0] != "2026/" || len(root.Objects) != 1 || root.Objects[0].Key != "top.txt" {
		t.Fatalf("root listing %+v", root)
	}
	b.json(http.MethodGet, "/api/objects?bucket=photos&prefix=2026%2F", nil, http.StatusOK, &sub)
	if len(sub.Prefixes) != 1 || sub.Prefixes[0] != "2026/may/" || len(sub.Objects) != 2 || sub.Objects[0].Key != "2026/holiday.mp4" || sub.Objects[0].Size != int64(len(big)) {
		t.Fatalf("2026/ listing %+v", sub)
	}
	for k, v := range files {
		st, got, h := b.do(http.MethodGet, objPath("/api/object", "photos", k), nil)
		if st != http.StatusOK || !bytes.Equal(got, v) {
			t.Fatalf("download %s: %d, %d bytes, want %d", k, st, len(got), len(v))
		}
		if cd := h.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") || !strings.HasPrefix(h.Get("Content-Security-Policy"), "sandbox") {
			t.Fatalf("download %s: Content-Disposition %q, Content-Security-Policy %q", k, cd, h.Get("Content-Security-Policy"))
		}
	}
	var m cairn.Manifest
	b.json(http.MethodGet, objPath("/api/manifest", "photos", "2026/holiday.mp4"), nil, http.StatusOK, &m)
	if m.Size != int64(len(big)) || m.Policy != "rs-4-2" || len(m.Shards) != 6 || m.Shards[0].CRC == 0 || m.Shards[0].Disk == "" {
		t.Fatalf("manifest %+v", m)
	}
	if st, _, _ := b.do(http.MethodGet, objPath("/api/manifest", "photos", "nope"), nil); st != http.StatusNotFound {
		t.Fatalf("manifest of a missing object: %d", st)
	}
	if st, _, _ := b.do(http.MethodGet, objPath("/api/object", "photos", "nope"), nil); st != http.StatusNotFound {
		t.Fatalf("download of a missing object: %d", st)
	}
	b.json(http.MethodDelete, objPath("/api/object", "photos", "top.txt"), nil, http.StatusNoContent, nil)
	b.json(http.MethodGet, "/api/objects?bucket=photos", nil, http.StatusOK, &root)
	if len(root.Objects) != 0 {
		t.Fatalf("listing after delete %+v", root)
	}
	var tp throughputResponse
	b.json(http.MethodGet, "/api/throughput", nil, http.StatusOK, &tp)
	if tp.BytesIn < int64(len(big)) || tp.BytesOut < int64(len(big)) || tp.Requests < 10 {
		t.Fatalf("throughput counters %+v", tp)
	}
}

func TestAttrEncode(t *testing.T) {
	for in, want := range map[string]string{
		"cat.jpg":        "cat.jpg",
		"a b;c,d\"e":     "a%20b%3Bc%2Cd%22e",
		"ümlaut=1:@x":    "%C3%BCmlaut%3D1%3A%40x",
		"ok!#$&+-.^_`|~": "ok!#$&+-.^_`|~",
	} {
		if got := attrEncode(in); got != want {
			t.Errorf("attrEncode(%q) = %q, want %q", in, got, want)
		}
	}
}

// The failed-login budget is per client address, and its table bounded.
func TestLoginLimiterPerClient(t *testing.T) {
	now := time.Unix(1e9, 0)
	l := newLoginLimiter(1, 3, 2)
	for range 3 {
		l.failed("a", now)
	}
	if l.allowed("a", now) || !l.allowed("b", now) {
		t.Fatal("a's failures limit b, or not a")
	}
	if !l.allowed("a", now.Add(time.Second)) {
		t.Fatal("a's budget does not refill")
	}
	l.failed("b", now)
	l.failed("c", now) // a full table: one of a and b goes
	if len(l.by) != 2 || l.by["c"] == nil {
		t.Fatalf("table %v after a failure from a third client", l.by)
	}
	later := now.Add(time.Minute) // every budget full again: those entries go first
	l.failed("d", later)
	if len(l.by) > 2 || l.by["d"] == nil {
		t.Fatalf("table %v", l.by)
	}
}

// A listing is paged: pageSize keys at a time, with a token for the next.
func TestListingPaged(t *testing.T) {
	e := newEnv(t, nil)
	b := e.rootWithBucket(t, "many")
	n := pageSize + 5
	for i := range n {
		if st, out, _ := b.do(http.MethodPut, objPath("/api/object", "many", fmt.Sprintf("k%04d", i)), strings.NewReader("x")); st != http.StatusOK {
			t.Fatalf("upload: %d %s", st, out)
		}
	}
	var p1, p2 objectsResponse
	b.json(http.MethodGet, "/api/objects?bucket=many", nil, http.StatusOK, &p1)
	if len(p1.Objects) != pageSize || p1.Next == "" {
		t.Fatalf("first page: %d objects, next %q", len(p1.Objects), p1.Next)
	}
	b.json(http.MethodGet, "/api/objects?bucket=many&token="+url.QueryEscape(p1.Next), nil, http.StatusOK, &p2)
	if len(p2.Objects) != 5 || p2.Next != "" || p2.Objects[0].Key != fmt.Sprintf("k%04d", pageSize) {
		t.Fatalf("second page: %+v", p2)
	}
}

// The session table is bounded, and a full table drops the session that
// expires soonest.
func TestSessionsBounded(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxSessions = 2 })
	first := e.browser(t)
	first.mustLogin(rootKey, rootSecret)
	e.now.Add(int64(time.Second))
	second := e.browser(t)
	second.mustLogin(aliceKey, aliceSec)
	e.now.Add(int64(time.Second))
	third := e.browser(t)
	third.mustLogin(bobKey, bobSec)
	if n := e.console.sessions.len(); n != 2 {
		t.Fatalf("%d sessions, want 2", n)
	}
	if st, _, _ := first.do(http.MethodGet, "/api/session", nil); st != http.StatusUnauthorized {
		t.Fatalf("the oldest session survived a full table: %d", st)
	}
	for _, b := range []*browser{second, third} {
		if st, _, _ := b.do(http.MethodGet, "/api/session", nil); st != http.StatusOK {
			t.Fatalf("a newer session was dropped: %d", st)
		}
	}
}

// The cluster status is read at most once per StatusEvery, however many
// pages poll it.
func TestClusterStatusShared(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.StatusEvery = time.Hour })
	b := e.browser(t)
	b.mustLogin(rootKey, rootSecret)
	for range 5 {
		b.json(http.MethodGet, "/api/cluster", nil, http.StatusOK, nil)
	}
	if n := e.cluster.calls.Load(); n != 1 {
		t.Fatalf("%d status reads for 5 polls, want 1", n)
	}
	e.now.Add(int64(time.Hour))
	b.json(http.MethodGet, "/api/cluster", nil, http.StatusOK, nil)
	if n := e.cluster.calls.Load(); n != 2 {
		t.Fatalf("%d status reads after StatusEvery, want 2", n)
	}
}

// The page and its assets are served from the binary with a strict
// content security policy.
func TestAssets(t *testing.T) {
	e := newEnv(t, nil)
	b := e.browser(t)
	for _, p := range []string{"/", "/assets/app.js", "/assets/style.css"} {
		st, body, h := b.do(http.MethodGet, p, nil)
		if st != http.StatusOK || len(body) == 0 || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Fatalf("%s: %d, %d bytes, CSP %q", p, st, len(body), h.Get("Content-Security-Policy"))
		}
	}
	if st, _, _ := b.do(http.MethodGet, "/nothing", nil); st != http.StatusNotFound {
		t.Fatalf("/nothing: %d", st)
	}
}

// GET /api/throughput carries the speculative engine's counters and slow
// disks when the console is given them, for root only.
func TestEngineStatus(t *testing.T) {
	want := EngineStatus{ReadsHedged: 3, SpareRows: 2, SlowMarks: 1,
		SlowDisks: []SlowDisk{{Disk: "node1/disk1", State: "slow", Score: 8.5, Since: 1000, Until: 6000}}}
	e := newEnv(t, func(c *Config) { c.Engine = func() EngineStatus { return want } })
	b := e.browser(t)
	b.mustLogin(rootKey, rootSecret)
	var tp throughputResponse
	b.json(http.MethodGet, "/api/throughput", nil, http.StatusOK, &tp)
	if tp.Engine == nil || tp.Engine.ReadsHedged != 3 || tp.Engine.SpareRows != 2 || len(tp.Engine.SlowDisks) != 1 || tp.Engine.SlowDisks[0] != want.SlowDisks[0] {
		t.Fatalf("engine status %+v, want %+v", tp.Engine, want)
	}
	alice := e.browser(t)
	alice.mustLogin(aliceKey, aliceSec)
	if st, _, _ := alice.do(http.MethodGet, "/api/throughput", nil); st != http.StatusForbidden {
		t.Fatalf("alice read the engine status: %d", st)
	}
	// Without an engine the answer has none.
	e = newEnv(t, nil)
	b = e.browser(t)
	b.mustLogin(rootKey, rootSecret)
	tp = throughputResponse{}
	b.json(http.MethodGet, "/api/throughput", nil, http.StatusOK, &tp)
	if tp.Engine != nil {
		t.Fatalf("an engine status without an engine: %+v", tp.Engine)
	}
}
