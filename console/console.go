package console

import (
	"context"
	"crypto/rand"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"cairn"
	"cairn/s3"
)

// Stater reads an object's manifest for the manifest view; *client.Client
// implements it. The console calls it only after the gateway has
// authorized a HEAD of the object as the session's user.
type Stater interface {
	// Stat returns the committed manifest (cairn.ErrNotFound if none).
	Stat(ctx context.Context, bucket, key string) (*cairn.Manifest, error)
}

// BucketMeta gives the buckets' policies and usage for the buckets view;
// meta.Store implements it. The console asks only about buckets the
// gateway listed for the session's user.
type BucketMeta interface {
	Bucket(ctx context.Context, name string) (cairn.Bucket, error)
	BucketUsage(ctx context.Context, bucket string) (cairn.Tally, error)
}

// Cluster gives the cluster view. Implementations may be slow (many
// metadata reads); the console asks at most once per StatusEvery and
// shares the answer between sessions.
type Cluster interface {
	// Status returns the cluster's state as `cairn admin status --json`
	// prints it (nodes, disks, capacity, repair and scrub lines, ...);
	// the console sends its JSON as is.
	Status(ctx context.Context) (any, error)
}

// Config configures a Console. Validate fills the defaults.
type Config struct {
	// S3 is the gateway's handler (an *s3.Handler, maybe wrapped by
	// Counters): every bucket and object call, and the login check, is
	// an S3 request signed as the session's user and served by it.
	S3 http.Handler
	// Credentials are the gateway's identities: after a login passed the
	// gateway's check, they tell whether the user is root.
	Credentials s3.Credentials
	Objects     Stater     // required: manifests for the manifest view
	Meta        BucketMeta // optional: bucket policies and usage (nil: not shown)
	Cluster     Cluster    // optional: the cluster view (nil: none)
	Counters    *Counters  // optional: the throughput the page graphs (nil: none)
	// Engine, if set, reports the data path's speculative engine: what
	// it did so far and the disks it holds slow (the cluster view's
	// "Speculative engine" panel).
	Engine func() EngineStatus
	// Region is the region the console signs its S3 requests for
	// (default "us-east-1"; the gateway accepts any).
	Region string
	// SessionTTL is how long a session lasts after its login (default 8 h).
	SessionTTL time.Duration
	// MaxSessions bounds the session table (default 1024).
	MaxSessions int
	// StatusEvery is how long a cluster status is reused (default 1 s).
	StatusEvery time.Duration
	// LoginFailures bounds failed logins per second from one client
	// address (default 5, with a burst of 20); more get 429 until the
	// budget refills, which slows down guessing secrets. The addresses
	// tracked are bounded (loginClients).
	LoginFailures rate.Limit
	// Now is the clock (default time.Now); Rand makes session IDs
	// (default crypto/rand.Reader).
	Now    func() time.Time
	Rand   io.Reader
	Logger *slog.Logger // default: discard
}

// Validate checks the required fields and fills the defaults.
func (c *Config) Validate() error {
	if c.S3 == nil || c.Credentials == nil || c.Objects == nil {
		return fmt.Errorf("%w: console.Config needs S3, Credentials and Objects", cairn.ErrInvalid)
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.SessionTTL <= 0 {
		c.SessionTTL = 8 * time.Hour
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = 1024
	}
	if c.StatusEvery <= 0 {
		c.StatusEvery = time.Second
	}
	if c.LoginFailures <= 0 {
		c.LoginFailures = 5
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

//go:embed assets
var assets embed.FS

// Console is the web console's http.Handler. It is safe for concurrent
// use.
type Console struct {
	cfg      Config
	mux      *http.ServeMux
	sessions *sessions
	failures *loginLimiter // failed logins by client address

	statusMu sync.Mutex // serializes cluster status reads; guards the three fields below
	status   []byte     // the last status's JSON; guarded by statusMu
	statusAt time.Time  // when status was read; guarded by statusMu
	statusE  error      // the last read's error; guarded by statusMu
}

var _ http.Handler = (*Console)(nil)

// New returns a Console.
func New(cfg Config) (*Console, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, mux: http.NewServeMux(),
		sessions: newSessions(cfg.MaxSessions),
		failures: newLoginLimiter(cfg.LoginFailures, loginBurst, loginClients)}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	files := http.FileServerFS(static)
	c.mux.Handle("GET /{$}", files)
	c.mux.Handle("GET /assets/", http.StripPrefix("/assets", files))
	c.mux.HandleFunc("POST /api/login", c.login)
	c.mux.HandleFunc("POST /api/logout", c.logout)
	c.mux.HandleFunc("GET /api/session", c.authed(c.whoami))
	c.mux.HandleFunc("GET /api/cluster", c.authed(c.rootOnly(c.cluster)))
	c.mux.HandleFunc("GET /api/throughput", c.authed(c.rootOnly(c.throughput)))
	c.mux.HandleFunc("GET /api/buckets", c.authed(c.buckets))
	c.mux.HandleFunc("POST /api/buckets", c.authed(c.createBucket))
	c.mux.HandleFunc("GET /api/objects", c.authed(c.objects))
	c.mux.HandleFunc("GET /api/object", c.authed(c.download))
	c.mux.HandleFunc("PUT /api/object", c.authed(c.upload))
	c.mux.HandleFunc("DELETE /api/object", c.authed(c.deleteObject))
	c.mux.HandleFunc("GET /api/manifest", c.authed(c.manifest))
	return c, nil
}

// ServeHTTP serves the page, its assets and the JSON API.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if err := checkStateChanging(r); err != nil {
			writeError(w, http.StatusForbidden, "Forbidden", err.Error())
			return
		}
	}
	c.mux.ServeHTTP(w, r)
}
