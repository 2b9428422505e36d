package console

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// CookieName is the session cookie's name.
const CookieName = "cairn_console"

// CSRFHeader is the header every state-changing call must carry, with
// the value "1" (doc.go, "state-changing call").
const CSRFHeader = "X-Cairn-Console"

// sessionIDBytes is a session ID's length: 256 random bits.
const sessionIDBytes = 32

// session is one login.
type session struct {
	name      string // the identity's name
	accessKey string
	secretKey string // signs the session's S3 requests; memory only
	root      bool
	expires   time.Time
}

// sessions is the bounded session table, keyed by the SHA-256 of each
// session ID.
type sessions struct {
	max int

	mu     sync.Mutex
	byHash map[[32]byte]*session // guarded by mu
}

func newSessions(max int) *sessions {
	return &sessions{max: max, byHash: map[[32]byte]*session{}}
}

// add records s under a new ID read from rand and returns the ID. A full
// table first loses its expired sessions, then the one that expires
// soonest.
func (t *sessions) add(rand io.Reader, s *session, now time.Time) (string, error) {
	var id [sessionIDBytes]byte
	if _, err := io.ReadFull(rand, id[:]); err != nil {
		return "", fmt.Errorf("session id: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.byHash) >= t.max {
		t.evictLocked(now)
	}
	t.byHash[sha256.Sum256(id[:])] = s
	return hex.EncodeToString(id[:]), nil
}

// evictLocked drops the expired sessions and, if the table is still
// full, the one that expires soonest. t.mu must be held.
func (t *sessions) evictLocked(now time.Time) {
	var soonest [32]byte
	var first *session
	for h, s := range t.byHash {
		if !now.Before(s.expires) {
			delete(t.byHash, h)
			continue
		}
		if first == nil || s.expires.Before(first.expires) {
			soonest, first = h, s
		}
	}
	if len(t.byHash) >= t.max && first != nil {
		delete(t.byHash, soonest)
	}
}

// get returns the live session of id (nil if none or expired).
func (t *sessions) get(id string, now time.Time) *session {
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != sessionIDBytes {
		return nil
	}
	h := sha256.Sum256(raw)
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byHash[h]
	if s != nil && !now.Before(s.expires) {
		delete(t.byHash, h)
		return nil
	}
	return s
}

// drop forgets the session of id.
func (t *sessions) drop(id string) {
	raw, err := hex.DecodeString(id)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byHash, sha256.Sum256(raw))
}

// len returns the number of sessions held (expired ones included).
func (t *sessions) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byHash)
}

// checkStateChanging refuses a state-changing request that lacks the
// console's header or comes from another origin.
func checkStateChanging(r *http.Request) error {
	if r.Header.Get(CSRFHeader) != "1" {
		return fmt.Errorf("a state-changing request needs the header %s: 1", CSRFHeader)
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return fmt.Errorf("origin %q is not the console's", o)
		}
	}
	return nil
}

// authed runs h with the request's session, or answers 401.
func (c *Console) authed(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		ck, err := r.Cookie(CookieName)
		var s *session
		if err == nil {
			s = c.sessions.get(ck.Value, c.cfg.Now())
		}
		if s == nil {
			writeError(w, http.StatusUnauthorized, "Unauthorized", "log in first")
			return
		}
		h(w, r, s)
	}
}

// rootOnly answers 403 unless the session is root's.
func (c *Console) rootOnly(h func(http.ResponseWriter, *http.Request, *session)) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		if !s.root {
			writeError(w, http.StatusForbidden, "AccessDenied", "only a root identity sees the cluster")
			return
		}
		h(w, r, s)
	}
}

// loginRequest is the body of POST /api/login.
type loginRequest struct {
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
}

// whoamiResponse is GET /api/session's answer (and a login's).
type whoamiResponse struct {
	Name      string    `json:"name"`
	AccessKey string    `json:"access_key"`
	Root      bool      `json:"root"`
	Expires   time.Time `json:"expires"`
}

func (s *session) whoami() whoamiResponse {
	return whoamiResponse{Name: s.name, AccessKey: s.accessKey, Root: s.root, Expires: s.expires}
}

// errWrongCredentials is a login the gateway refused.
var errWrongCredentials = errors.New("wrong access key or secret key")

// login checks the credentials as the gateway checks any request's (a
// ListBuckets signed with them) and, if they pass, starts a session.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	now := c.cfg.Now()
	client, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		client = r.RemoteAddr
	}
	if !c.failures.allowed(client, now) {
		writeError(w, http.StatusTooManyRequests, "SlowDown", "too many failed logins; try again in a few seconds")
		return
	}
	var req loginRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<10)).Decode(&req); err != nil || req.AccessKey == "" || req.SecretKey == "" {
		writeError(w, http.StatusBadRequest, "BadRequest", "want a JSON body {\"access_key\":..., \"secret_key\":...}")
		return
	}
	s := &session{accessKey: req.AccessKey, secretKey: req.SecretKey, expires: now.Add(c.cfg.SessionTTL)}
	res := c.call(r, s, http.MethodGet, "", "", nil, nil)
	if res.status != http.StatusOK {
		if res.status == http.StatusForbidden {
			c.failures.failed(client, now)
			writeError(w, http.StatusUnauthorized, "Unauthorized", errWrongCredentials.Error())
			return
		}
		res.writeError(w)
		return
	}
	id, ok := c.cfg.Credentials.Lookup(req.AccessKey)
	if !ok { // removed since the gateway looked
		writeError(w, http.StatusUnauthorized, "Unauthorized", errWrongCredentials.Error())
		return
	}
	s.name, s.root = id.Name, id.Root
	sid, err := c.sessions.add(c.cfg.Rand, s, now)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalError", "could not make a session")
		c.cfg.Logger.Error("console login", "err", err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: sid, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, Expires: s.expires})
	c.cfg.Logger.Info("console login", "user", s.name, "access_key", s.accessKey)
	writeJSON(w, http.StatusOK, s.whoami())
}

// logout ends the request's session, if any, and clears the cookie.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(CookieName); err == nil {
		c.sessions.drop(ck.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
}

func (c *Console) whoami(w http.ResponseWriter, _ *http.Request, s *session) {
	writeJSON(w, http.StatusOK, s.whoami())
}

// The failed-login budget: Config.LoginFailures per second and
// loginBurst at once per client address, for at most loginClients
// addresses at a time.
const (
	loginBurst   = 20
	loginClients = 4096
)

// loginLimiter bounds the failed logins of each client address. Its
// table is bounded: a failure from a new address into a full table first
// forgets the addresses whose budget is full again, then an arbitrary one.
type loginLimiter struct {
	rate  rate.Limit
	burst int
	max   int

	mu sync.Mutex
	by map[string]*rate.Limiter // guarded by mu
}

func newLoginLimiter(r rate.Limit, burst, max int) *loginLimiter {
	return &loginLimiter{rate: r, burst: burst, max: max, by: map[string]*rate.Limiter{}}
}

// allowed reports whether client may try a login at now.
func (l *loginLimiter) allowed(client string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.by[client]
	return lim == nil || lim.TokensAt(now) >= 1
}

// failed takes one failed login from client's budget.
func (l *loginLimiter) failed(client string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.by[client]
	if lim == nil {
		if len(l.by) >= l.max {
			for a, x := range l.by {
				if x.TokensAt(now) >= float64(l.burst) {
					delete(l.by, a)
				}
			}
			for a := range l.by {
				if len(l.by) < l.max {
					break
				}
				delete(l.by, a)
			}
		}
		lim = rate.NewLimiter(l.rate, l.burst)
		l.by[client] = lim
	}
	lim.AllowN(now, 1)
}
