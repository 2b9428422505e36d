package node

import (
	"bytes"
	"container/heap"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"cairn"
	"cairn/node/wire"
)

// Request signing (docs/design/node-protocol.md, "Authentication").
const (
	// DefaultSkew is how far a request's signing time may be from the
	// node's clock, either way.
	DefaultSkew = 5 * time.Minute
	// DefaultReplayEntries bounds the nonces a node remembers; a node
	// whose cache is full refuses new requests (503) rather than forget.
	DefaultReplayEntries = 1 << 20
	// maxDigestBody is the largest body a signed digest may cover: the
	// node reads such a body whole before serving the request.
	maxDigestBody = 1 << 20
)

// emptySHA256 is the digest of an empty body.
var emptySHA256 = hex.EncodeToString(sha256.New().Sum(nil))

// stringToSign is what the signature covers: one field a line. Header
// values cannot hold a newline, and the path and query are escaped, so
// the fields cannot run into each other. The key's principal is in it
// (and in the key), and so is the host the request was sent to: a request
// signed for one node is refused by another.
func stringToSign(id KeyID, method, host, escPath, rawQuery, date, nonce, digest string, h http.Header) string {
	q, _ := url.ParseQuery(rawQuery) // a query that does not parse is refused (verifier.verify)
	return strings.Join([]string{wire.AuthScheme, id.String(), method, host, escPath, q.Encode(), date, nonce, digest,
		h.Get(wire.HeaderIdentity), h.Get(wire.HeaderRepair)}, "\n")
}

func signature(key *[32]byte, s string) []byte {
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(s))
	return m.Sum(nil)
}

// sign sets req's signature headers for signing time at, nonce and body
// digest (a hex SHA-256 or wire.UnsignedPayload).
func sign(req *http.Request, key *Key, at time.Time, nonce, digest string) {
	signPath(req, req.URL.EscapedPath(), key, at, nonce, digest)
}

// signPath is sign for a request whose path as sent is escPath. The Host
// header is set to the URL's host, which the signature covers.
func signPath(req *http.Request, escPath string, key *Key, at time.Time, nonce, digest string) {
	if req.Host == "" {
		req.Host = req.URL.Host
	}
	date := strconv.FormatInt(at.Unix(), 10)
	req.Header.Set(wire.HeaderDate, date)
	req.Header.Set(wire.HeaderNonce, nonce)
	req.Header.Set(wire.HeaderContentSHA256, digest)
	sig := signature(&key.key, stringToSign(key.ID, req.Method, req.Host, escPath, req.URL.RawQuery, date, nonce, digest, req.Header))
	req.Header.Set("Authorization", formatAuthorization(key.ID, sig))
}

// formatAuthorization is the Authorization header of a request signed by
// id with sig.
func formatAuthorization(id KeyID, sig []byte) string {
	return wire.AuthScheme + " Credential=" + id.String() + ", Signature=" + hex.EncodeToString(sig)
}

// parseAuthorization parses an Authorization header: the signing key's
// principal and the signature (32 bytes). Errors wrap cairn.ErrAuth.
func parseAuthorization(s string) (KeyID, []byte, error) {
	rest, ok := strings.CutPrefix(s, wire.AuthScheme+" ")
	if !ok {
		return KeyID{}, nil, fmt.Errorf("%w: no %s signature", cairn.ErrAuth, wire.AuthScheme)
	}
	cred, sig, ok := strings.Cut(rest, ", Signature=")
	cred, okc := strings.CutPrefix(cred, "Credential=")
	if !ok || !okc {
		if strings.HasPrefix(rest, "Signature=") {
			return KeyID{}, nil, fmt.Errorf("%w: the signature names no key (Credential=ROLE/NAME): a client older than the node's keys", cairn.ErrAuth)
		}
		return KeyID{}, nil, fmt.Errorf("%w: malformed Authorization: want %s Credential=ROLE/NAME, Signature=<64 hex>", cairn.ErrAuth, wire.AuthScheme)
	}
	id, err := ParseKeyID(cred)
	if err != nil {
		return KeyID{}, nil, fmt.Errorf("%w: credential: %v", cairn.ErrAuth, err)
	}
	got, err := hex.DecodeString(sig)
	if err != nil || len(got) != sha256.Size || sig != strings.ToLower(sig) {
		return KeyID{}, nil, fmt.Errorf("%w: malformed signature", cairn.ErrAuth)
	}
	return id, got, nil
}

// newNonce is 16 random bytes in hex.
func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// verifier checks request signatures and remembers the nonces seen.
type verifier struct {
	secret string // the cluster secret, from which every key is derived
	skew   time.Duration
	replay *replayCache
}

// verify checks r's signature, time, body digest and nonce, and returns
// the principal whose key signed it. A body under a digest is read
// (bounded) and put back. Errors wrap cairn.ErrAuth (cairn.ErrUnavailable
// when the replay cache is full).
func (v *verifier) verify(r *http.Request) (KeyID, error) {
	if len(r.Header.Values("Authorization")) > 1 {
		return KeyID{}, fmt.Errorf("%w: malformed request: Authorization given more than once", cairn.ErrAuth)
	}
	id, got, err := parseAuthorization(r.Header.Get("Authorization"))
	if err != nil {
		return KeyID{}, err
	}
	if err := v.check(r, id, got); err != nil {
		return KeyID{}, err
	}
	return id, nil
}

// check is verify of a request signed by id with signature got.
func (v *verifier) check(r *http.Request, id KeyID, got []byte) error {
	for _, h := range []string{wire.HeaderDate, wire.HeaderNonce, wire.HeaderContentSHA256, wire.HeaderIdentity, wire.HeaderRepair} {
		if len(r.Header.Values(h)) > 1 {
			return fmt.Errorf("%w: malformed request: %s given more than once", cairn.ErrAuth, h)
		}
	}
	date, nonce, digest := r.Header.Get(wire.HeaderDate), r.Header.Get(wire.HeaderNonce), r.Header.Get(wire.HeaderContentSHA256)
	secs, err := strconv.ParseInt(date, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: malformed %s %q", cairn.ErrAuth, wire.HeaderDate, date)
	}
	var n nonceKey
	if len(nonce) != 2*len(n) || nonce != strings.ToLower(nonce) {
		return fmt.Errorf("%w: malformed %s %q", cairn.ErrAuth, wire.HeaderNonce, nonce)
	}
	if _, err := hex.Decode(n[:], []byte(nonce)); err != nil {
		return fmt.Errorf("%w: malformed %s %q", cairn.ErrAuth, wire.HeaderNonce, nonce)
	}
	if digest != wire.UnsignedPayload {
		if b, err := hex.DecodeString(digest); err != nil || len(b) != sha256.Size || digest != strings.ToLower(digest) {
			return fmt.Errorf("%w: malformed %s %q", cairn.ErrAuth, wire.HeaderContentSHA256, digest)
		}
	}
	if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
		// Its canonical form would drop the bad part, which could then be added unsigned.
		return fmt.Errorf("%w: malformed query: %v", cairn.ErrAuth, err)
	}
	key := deriveKey(v.secret, id)
	want := signature(&key, stringToSign(id, r.Method, r.Host, r.URL.EscapedPath(), r.URL.RawQuery, date, nonce, digest, r.Header))
	if !hmac.Equal(got, want) {
		return fmt.Errorf("%w: wrong signature by %s (a key of another cluster secret, a key for another name or role, a request for another node, or the request was altered)", cairn.ErrAuth, id)
	}
	now := time.Now()
	at := time.Unix(secs, 0)
	if d := now.Sub(at); d > v.skew || d < -v.skew {
		return fmt.Errorf("%w: signed at %s, %v from the node's clock (window ±%v)", cairn.ErrAuth, at.UTC().Format(time.RFC3339), d.Round(time.Second), v.skew)
	}
	if digest != wire.UnsignedPayload {
		if err := checkBody(r, digest); err != nil {
			return err
		}
	}
	return v.replay.add(n, at.Add(v.skew), now)
}

// checkBody reads r's body (at most maxDigestBody bytes), compares its
// SHA-256 with digest and puts it back.
func checkBody(r *http.Request, digest string) error {
	if r.ContentLength > maxDigestBody {
		return fmt.Errorf("%w: a %d-byte body under a signed digest (max %d: stream it unsigned)", cairn.ErrInvalid, r.ContentLength, maxDigestBody)
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxDigestBody+1))
	if err != nil {
		return fmt.Errorf("%w: reading the signed body: %v", cairn.ErrInvalid, err)
	}
	if len(b) > maxDigestBody {
		return fmt.Errorf("%w: a body of more than %d bytes under a signed digest", cairn.ErrInvalid, maxDigestBody)
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != digest {
		return fmt.Errorf("%w: the body does not match its signed %s", cairn.ErrAuth, wire.HeaderContentSHA256)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return nil
}

type nonceKey [16]byte

// replayCache remembers the nonces of accepted requests until their
// signing time leaves the skew window (after which the request is refused
// for its time anyway). It holds at most max nonces: when full, a new
// request is refused, never an old nonce forgotten early. Safe for
// concurrent use.
type replayCache struct {
	mu   sync.Mutex
	max  int
	seen map[nonceKey]struct{}
	exp  expiryHeap
}

func newReplayCache(max int) *replayCache {
	return &replayCache{max: max, seen: map[nonceKey]struct{}{}}
}

// add records n until expires; ErrAuth if it was seen, ErrUnavailable if
// the cache is full of nonces that have not expired by now.
func (c *replayCache) add(n nonceKey, expires, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.exp) > 0 && !c.exp[0].at.After(now) {
		delete(c.seen, heap.Pop(&c.exp).(expiry).n)
	}
	if _, dup := c.seen[n]; dup {
		return fmt.Errorf("%w: nonce already used (a replayed request)", cairn.ErrAuth)
	}
	if len(c.seen) >= c.max {
		return fmt.Errorf("%w: replay cache full (%d nonces within the skew window)", cairn.ErrUnavailable, c.max)
	}
	c.seen[n] = struct{}{}
	heap.Push(&c.exp, expiry{at: expires, n: n})
	return nil
}

// len is the number of nonces remembered.
func (c *replayCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

type expiry struct {
	at time.Time
	n  nonceKey
}

// expiryHeap is a min-heap of expiries (container/heap).
type expiryHeap []expiry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
