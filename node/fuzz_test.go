package node

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn"
	"cairn/internal/vfs"
	"cairn/node/volume"
	"cairn/node/wire"
)

// Fuzz targets of the node's request decoding (run 10 s each in CI,
// .ci/run). The seeds in testdata/fuzz, if any, are findings kept as
// regression tests.

// An Authorization header is accepted only in its one canonical form.
func FuzzParseAuthorization(f *testing.F) {
	sig := strings.Repeat("ab", 32)
	f.Add(wire.AuthScheme + " Credential=reader/alice, Signature=" + sig)
	f.Add(wire.AuthScheme + " Signature=" + sig)
	f.Add(wire.AuthScheme + " Credential=/, Signature=")
	f.Add(wire.AuthScheme + " Credential=node/a, Signature=" + strings.ToUpper(sig))
	f.Add("Bearer x")
	f.Fuzz(func(t *testing.T, s string) {
		id, got, err := parseAuthorization(s)
		if err != nil {
			if !errors.Is(err, cairn.ErrAuth) {
				t.Fatalf("%q: error %v is not ErrAuth", s, err)
			}
			return
		}
		if id.Validate() != nil || len(got) != sha256.Size {
			t.Fatalf("%q accepted as %v, %x", s, id, got)
		}
		if back := formatAuthorization(id, got); back != s {
			t.Fatalf("%q accepted, but its canonical form is %q", s, back)
		}
	})
}

// A node key is accepted only as Key.String writes it.
func FuzzParseKey(f *testing.F) {
	k, _ := DeriveKey("s", KeyID{Role: RoleReader, Name: "alice"})
	f.Add(k.String())
	f.Add("admin/cli:" + strings.Repeat("0", 64))
	f.Add("reader/a:b:" + strings.Repeat("0", 64))
	f.Add("reader/" + strings.Repeat("x", 64) + ":")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			if !errors.Is(err, cairn.ErrInvalid) {
				t.Fatalf("%q: error %v is not ErrInvalid", s, err)
			}
			return
		}
		if k.String() != s {
			t.Fatalf("%q accepted as %q", s, k.String())
		}
	})
}

// fuzzSigned is a signed PUT with every signed field set: host, path,
// query, identity and repair headers, and a body under its digest.
func fuzzSigned(key *Key) *http.Request {
	body := "hello"
	r := httptest.NewRequest(http.MethodPut, "http://node1:9100"+wire.ShardPath("node1/disk1", shardName(1, 0))+"?b=2&a=1", strings.NewReader(body))
	r.Header.Set(wire.HeaderIdentity, "aWQ=")
	r.Header.Set(wire.HeaderRepair, "e30")
	sum := sha256.Sum256([]byte(body))
	sign(r, key, time.Now(), newNonce(), hex.EncodeToString(sum[:]))
	return r
}

// fuzzFields are the parts of a request a tamperer may change, by index.
var fuzzFields = []string{"method", "host", "path", "query", wire.HeaderDate, wire.HeaderNonce,
	wire.HeaderContentSHA256, wire.HeaderIdentity, wire.HeaderRepair, "Authorization", "body",
	"second " + wire.HeaderIdentity, "second Authorization"}

// A signed request changed in any one part after signing never verifies,
// unless the change leaves its meaning whole (the query's order, say):
// every field the node acts on must then equal the signed request's.
func FuzzSignedRequestTampered(f *testing.F) {
	for i := range fuzzFields {
		f.Add(uint8(i), "x")
		f.Add(uint8(i), "")
	}
	f.Add(uint8(3), "a=1&b=2") // same query, another order: allowed
	f.Add(uint8(0), "DELETE")
	f.Add(uint8(1), "node2:9100")
	f.Add(uint8(2), "/v1/disks/node1%2Fdisk1")
	f.Add(uint8(9), wire.AuthScheme+" Credential=admin/cluster, Signature="+strings.Repeat("0", 64))
	key := testKey(testSecret)
	f.Fuzz(func(t *testing.T, field uint8, val string) {
		orig := fuzzSigned(&key)
		r := fuzzSigned(&key)
		r.Header = orig.Header.Clone()
		body := "hello"
		switch fuzzFields[int(field)%len(fuzzFields)] {
		case "method":
			r.Method = val
		case "host":
			r.Host = val
		case "path":
			r.URL.Path, r.URL.RawPath = val, ""
		case "query":
			r.URL.RawQuery = val
		case "body":
			body = val
		case "second " + wire.HeaderIdentity:
			r.Header.Add(wire.HeaderIdentity, val)
		case "second Authorization":
			r.Header.Add("Authorization", val)
		case "Authorization":
			r.Header.Set("Authorization", val)
		default:
			r.Header.Set(fuzzFields[int(field)%len(fuzzFields)], val)
		}
		r.Body = io.NopCloser(strings.NewReader(body))
		r.ContentLength = int64(len(body))
		v := verifier{secret: testSecret, skew: DefaultSkew, replay: newReplayCache(4)}
		id, err := v.verify(r)
		if err != nil {
			if !errors.Is(err, cairn.ErrAuth) && !errors.Is(err, cairn.ErrInvalid) {
				t.Fatalf("refused with %v, neither ErrAuth nor ErrInvalid", err)
			}
			return
		}
		oq, _ := url.ParseQuery(orig.URL.RawQuery)
		q, _ := url.ParseQuery(r.URL.RawQuery)
		got, _ := io.ReadAll(r.Body)
		same := id == key.ID && r.Method == orig.Method && r.Host == orig.Host && r.URL.EscapedPath() == orig.URL.EscapedPath() &&
			reflect.DeepEqual(q, oq) && string(got) == "hello"
		for _, h := range []string{wire.HeaderDate, wire.HeaderNonce, wire.HeaderContentSHA256, wire.HeaderIdentity, wire.HeaderRepair, "Authorization"} {
			same = same && slices.Equal(r.Header.Values(h), orig.Header.Values(h))
		}
		if !same {
			t.Fatalf("%s changed to %q and the request still verifies", fuzzFields[int(field)%len(fuzzFields)], val)
		}
	})
}

// refuseTransport fails every request: a fuzzed repair spec must not
// make the node under test dial out.
type refuseTransport struct{}

func (refuseTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("fuzz: no network")
}

// knownCodes are the error codes a node may answer with.
var knownCodes = []string{"unauthorized", "forbidden", "invalid", "too_large", "range", "no_route", "not_found",
	"no_disk", "no_space", "corrupt", "exists", "conflict", "unavailable"}

// fuzzMethods are the methods the fuzzed requests use, by index.
var fuzzMethods = []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodPost, http.MethodHead, "PATCH"}

// A signed request of any kind, with any path, query, identity header,
// repair spec and body, gets an answer of the protocol — a success or an
// error body with a known code, never an internal error — and never
// crashes the node. Covers the decoding of each request kind: disk and
// shard names, GET ranges, LIST paging, the identity header, the repair
// spec and the push's partial stream.
func FuzzHandlerRequest(f *testing.F) {
	d := openDisk(f, "node1/disk1", vfs.NewMem(), "/d1")
	h, err := NewHandler(HandlerConfig{Node: "node1", Secret: testSecret, Volumes: []*volume.Volume{d.v},
		MaxShardSize: 1 << 20, HTTPClient: &http.Client{Transport: refuseTransport{}}})
	if err != nil {
		f.Fatal(err)
	}
	name := shardName(1, 0)
	if _, err := d.v.Put(f.Context(), name, bytes.NewReader([]byte("a stored shard"))); err != nil {
		f.Fatal(err)
	}
	shard := wire.ShardPath(d.id, name)
	ident, _ := cairn.ShardIdentity{Bucket: "b", Key: "k", Version: strings.Repeat("0", 32), Row: 1}.Encode()
	spec, _ := wire.EncodeRepairRequest(wire.RepairRequest{Spec: wire.RepairSpec{Size: 4, Unit: 2,
		Hops:  []wire.Hop{{Addr: "node1:9100", Disk: d.id, Shard: name, Coeffs: []byte{1}}},
		Store: []wire.Target{{Addr: "node1:9100", Disk: d.id, Shard: shardName(2, 1)}}}})
	// Hop 1 of a chain takes the previous hop's partials as its body:
	// f·Size = 4 bytes.
	hop1, _ := wire.EncodeRepairRequest(wire.RepairRequest{Hop: 1, Spec: wire.RepairSpec{Size: 4, Unit: 2,
		Hops: []wire.Hop{{Addr: "node0:9100", Disk: "node0/disk1", Shard: shardName(5, 0), Coeffs: []byte{1}},
			{Addr: "node1:9100", Disk: d.id, Shard: name, Coeffs: []byte{2}}},
		Store: []wire.Target{{Addr: "node1:9100", Disk: d.id, Shard: shardName(5, 2)}}}})
	f.Add(uint8(3), wire.PushPath, "", "", hop1, []byte("abcd"))
	f.Add(uint8(3), wire.PushPath, "", "", hop1, []byte("abcdef"))
	f.Add(uint8(0), shard, "offset=2&length=3", "", "", []byte(nil))
	f.Add(uint8(1), wire.ShardPath(d.id, shardName(3, 0)), "", base64.StdEncoding.EncodeToString(ident), "", []byte("new shard"))
	f.Add(uint8(1), shard, "", "!!", "", []byte("x"))
	f.Add(uint8(2), shard, "", "", "", []byte(nil))
	f.Add(uint8(0), wire.DiskPath(d.id)+"/shards", "after=&limit=2&identity=1", "", "", []byte(nil))
	f.Add(uint8(0), wire.DiskPath(d.id), "", "", "", []byte(nil))
	f.Add(uint8(0), wire.HealthPath, "", "", "", []byte(nil))
	f.Add(uint8(3), wire.PushPath, "", "", spec, []byte(nil))
	f.Add(uint8(3), wire.PullPath, "", "", spec, []byte(nil))
	f.Add(uint8(3), wire.PushPath, "", "", spec, []byte("12345678"))
	f.Add(uint8(0), "/v1/disks/%2e%2e/shards/x", "offset=-1", "", "", []byte(nil))
	key := testKey(testSecret)
	f.Fuzz(func(t *testing.T, m uint8, path, query, identity, repair string, body []byte) {
		if len(body) > 64<<10 {
			return
		}
		r, err := http.NewRequest(fuzzMethods[int(m)%len(fuzzMethods)], "http://node1:9100/", bytes.NewReader(body))
		if err != nil {
			return
		}
		u, err := url.ParseRequestURI(path)
		if err != nil || !strings.HasPrefix(path, "/") {
			return
		}
		r.URL.Path, r.URL.RawPath, r.URL.RawQuery = u.Path, u.RawPath, query
		r.RequestURI = r.URL.RequestURI()
		for hk, hv := range map[string]string{wire.HeaderIdentity: identity, wire.HeaderRepair: repair} {
			if hv != "" {
				r.Header.Set(hk, hv)
			}
		}
		digest := wire.UnsignedPayload
		if len(body) == 0 {
			digest = emptySHA256
		}
		sign(r, &key, time.Now(), newNonce(), digest)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		res := w.Result()
		if res.StatusCode == http.StatusInternalServerError {
			t.Fatalf("%s %s?%s: internal error: %s", r.Method, path, query, w.Body)
		}
		if res.StatusCode < 300 {
			return
		}
		var code string
		if i := strings.Index(w.Body.String(), `"code":"`); i >= 0 {
			code, _, _ = strings.Cut(w.Body.String()[i+len(`"code":"`):], `"`)
		}
		if !slices.Contains(knownCodes, code) {
			t.Fatalf("%s %s?%s: %d with code %q: %s", r.Method, path, query, res.StatusCode, code, w.Body)
		}
	})
}
