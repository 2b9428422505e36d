package etcdmeta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"google.golang.org/grpc"

	"cairn"
)

// EmbedConfig configures an embedded etcd member (`cairn server` runs one;
// `cairn meta` runs one of a 1-, 3- or 5-member cluster). Validate fills
// the defaults.
type EmbedConfig struct {
	// Name is the member's name, unique in the cluster; "cairn" if empty.
	Name string
	// Dir is the member's data directory (WAL and snapshots). Required.
	Dir string
	// ClientURL is where clients connect, e.g. "http://127.0.0.1:2379".
	// Required. Port 0 binds a port the kernel picks (Endpoints reports
	// it; the member list advertises port 0).
	ClientURL string
	// PeerURL is where the other members connect, e.g.
	// "http://127.0.0.1:2380", or unix://NAME:PORT for a unix socket named
	// NAME:PORT in the working directory, which the other members dial from
	// theirs. Required. Port 0 suits only a single member: the others
	// must know it before it starts.
	PeerURL string
	// InitialCluster lists every member as name=peerURL, comma-separated;
	// Name=PeerURL (a single-member cluster) if empty. Ignored once Dir
	// holds data.
	InitialCluster string
	// InitialClusterState is "new" (default) when all members start
	// together, or "existing" for a member added to a running cluster (after
	// `etcdctl member add`).
	InitialClusterState string
	// ClusterToken keeps members of different clusters from talking to each
	// other; "cairn" if empty.
	ClusterToken string
	// TickMs and ElectionMs are the raft heartbeat and election timeouts;
	// 100 and 1000 if zero (etcd's defaults).
	TickMs, ElectionMs uint
	// QuotaBackendBytes caps the database size (etcd's default, 2 GiB, if
	// zero); past it etcd refuses writes until compacted and defragmented.
	QuotaBackendBytes int64
	// UnsafeNoFsync skips fsync: for tests only, as etcd's flag of the same
	// name; a crash loses acknowledged writes.
	UnsafeNoFsync bool
	// StartTimeout bounds how long StartEmbedded waits for the member to
	// join its cluster and be ready; 1 minute if zero.
	StartTimeout time.Duration
	// Logger receives etcd's error-level records; nil discards them.
	Logger *slog.Logger
	// TLS, if not nil, serves clients and peers over TLS only: ClientURL
	// and PeerURL must be https. Clients and peers must present a
	// certificate signed by TLS.CA (etcd's --client-cert-auth and
	// --peer-client-cert-auth); TLS.Cert serves both listeners and is the
	// member's client certificate towards its peers, so it must be valid
	// for server and client use and name the hosts of both URLs
	// (docs/design/meta.md, "Transport security and authentication").
	TLS *TLSFiles
}

// TLSFiles are the PEM files of a TLS endpoint: the CA whose certificates
// it trusts, and its own certificate and key.
type TLSFiles struct {
	CA, Cert, Key string
}

// Validate checks the configuration and fills defaults.
func (c *EmbedConfig) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("embedded etcd: %w: %s", cairn.ErrInvalid, fmt.Sprintf(format, args...))
	}
	if c.Name == "" {
		c.Name = "cairn"
	}
	if c.Dir == "" {
		return bad("no data directory")
	}
	for what, u := range map[string]string{"client": c.ClientURL, "peer": c.PeerURL} {
		if u == "" {
			return bad("no %s URL", what)
		}
		p, err := url.Parse(u)
		if err != nil {
			return bad("%s URL %q: %v", what, u, err)
		}
		if c.TLS != nil && p.Scheme != "https" {
			return bad("%s URL %q: with TLS, want https://HOST:PORT", what, u)
		}
		if c.TLS == nil && p.Scheme == "https" {
			return bad("%s URL %q: https needs TLS certificates", what, u)
		}
	}
	if t := c.TLS; t != nil && (t.CA == "" || t.Cert == "" || t.Key == "") {
		return bad("TLS needs a CA, a certificate and a key")
	}
	if c.InitialCluster == "" {
		c.InitialCluster = c.Name + "=" + c.PeerURL
	}
	switch c.InitialClusterState {
	case "":
		c.InitialClusterState = embed.ClusterStateFlagNew
	case embed.ClusterStateFlagNew, embed.ClusterStateFlagExisting:
	default:
		return bad("initial cluster state %q: want %q or %q", c.InitialClusterState,
			embed.ClusterStateFlagNew, embed.ClusterStateFlagExisting)
	}
	if c.ClusterToken == "" {
		c.ClusterToken = "cairn"
	}
	if c.TickMs == 0 {
		c.TickMs = 100
	}
	if c.ElectionMs == 0 {
		c.ElectionMs = 1000
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = time.Minute
	}
	return nil
}

// MaxRequestBytes is the largest request an embedded member accepts and the
// largest message the store's client sends or receives (external clusters
// need --max-request-bytes at least this for objects with thousands of
// multipart parts).
const MaxRequestBytes = 16 << 20

// MaxTxnOps is the most operations (compares, or operations of a branch)
// a Txn of an embedded member may hold: a write moves one usage counter
// per disk it touches (usage.go), a multipart object's parts may cover
// hundreds of disks, and its commit puts one record per part (up to
// cairn.MaxParts; mparts.go). External clusters need --max-txn-ops at
// least this for objects of many parts; etcd's default is 128.
const MaxTxnOps = 16384

// Server is a running embedded etcd member.
type Server struct {
	e         *embed.Etcd
	endpoints []string
	peers     []string
	once      sync.Once
	stopping  *atomic.Bool // set by Close: etcd's errors about closed listeners are expected from then on
	// stopStreams ends every client stream (endWith), so that Close does
	// not wait for them.
	stopStreams context.CancelFunc
}

// endWith is a gRPC stream interceptor that ends a stream's handler when
// ctx ends, as if its client had gone: the client's etcd library
// reconnects its watches and keep-alives to another member.
func endWith(ctx context.Context) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		sctx, cancel := context.WithCancel(ss.Context())
		defer cancel()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		return handler(srv, endingStream{ServerStream: ss, ctx: sctx})
	}
}

// endingStream is a server stream with a context that also ends when the
// member stops.
type endingStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s endingStream) Context() context.Context { return s.ctx }

// StartEmbedded starts an etcd member and waits until it is ready to serve
// clients (for a new multi-member cluster: until a quorum of members has
// started, so start them concurrently). Auto-compaction keeps one hour of
// history.
func StartEmbedded(ctx context.Context, c EmbedConfig) (*Server, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	curl, err := url.Parse(c.ClientURL)
	if err != nil {
		return nil, err
	}
	purl, err := url.Parse(c.PeerURL)
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = c.Name
	cfg.Dir = c.Dir
	cfg.ListenClientUrls = []url.URL{*curl}
	cfg.AdvertiseClientUrls = []url.URL{*curl}
	cfg.ListenPeerUrls = []url.URL{*purl}
	cfg.AdvertisePeerUrls = []url.URL{*purl}
	cfg.InitialCluster = c.InitialCluster
	cfg.ClusterState = c.InitialClusterState
	cfg.InitialClusterToken = c.ClusterToken
	cfg.TickMs = c.TickMs
	cfg.ElectionMs = c.ElectionMs
	cfg.QuotaBackendBytes = c.QuotaBackendBytes
	// A multipart manifest lists every part with its shard locations: about
	// 0.5 KiB a part, 5 MiB for S3's 10,000. etcd's default request limit is
	// 1.5 MiB.
	cfg.MaxRequestBytes = MaxRequestBytes
	cfg.MaxTxnOps = MaxTxnOps
	cfg.UnsafeNoFsync = c.UnsafeNoFsync
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "1h"
	cfg.LogLevel = "error"
	if t := c.TLS; t != nil {
		info := transport.TLSInfo{CertFile: t.Cert, KeyFile: t.Key, TrustedCAFile: t.CA, ClientCertAuth: true}
		cfg.ClientTLSInfo, cfg.PeerTLSInfo = info, info
	}
	// etcd keeps passwords bcrypt-hashed and checks one per
	// authentication. bcrypt's cost slows the guessing of a weak
	// password; cairn's is 256 bits of HMAC output (docs/design/meta.md,
	// "Transport security and authentication"), beyond guessing at any
	// cost, so the minimum cost spares each connection ~50 ms of CPU.
	cfg.BcryptCost = 4 // bcrypt.MinCost
	stopping := new(atomic.Bool)
	// Client streams (watches, lease keep-alives) never end by themselves,
	// and etcd's Close waits for them for its request timeout (7 s) per
	// server; Close ends them first (stopStreams).
	streamsCtx, stopStreams := context.WithCancel(context.Background())
	cfg.GRPCAdditionalServerOptions = append(cfg.GRPCAdditionalServerOptions,
		grpc.ChainStreamInterceptor(endWith(streamsCtx)))
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zapLogger(c.Logger, stopping))

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		stopStreams()
		return nil, fmt.Errorf("embedded etcd %s: %w", c.Name, err)
	}
	s := &Server{e: e, stopping: stopping, stopStreams: stopStreams}
	for _, l := range e.Clients {
		s.endpoints = append(s.endpoints, curl.Scheme+"://"+l.Addr().String())
	}
	for _, l := range e.Peers {
		s.peers = append(s.peers, purl.Scheme+"://"+l.Addr().String())
	}
	t := time.NewTimer(c.StartTimeout)
	defer t.Stop()
	select {
	case <-e.Server.ReadyNotify():
		return s, nil
	case err = <-e.Err():
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = errors.New("not ready after " + c.StartTimeout.String() + " (are a quorum of members running?)")
	}
	s.Close()
	return nil, fmt.Errorf("embedded etcd %s: %w", c.Name, err)
}

// Endpoints returns the client URLs the member listens on (with the real
// port if ClientURL asked for port 0).
func (s *Server) Endpoints() []string { return append([]string(nil), s.endpoints...) }

// PeerURLs returns the peer URLs the member listens on (with the real port
// if PeerURL asked for port 0).
func (s *Server) PeerURLs() []string { return append([]string(nil), s.peers...) }

// Err reports a fatal server error (the member stopped on its own).
func (s *Server) Err() <-chan error { return s.e.Err() }

// Stopped is closed when the member has stopped on its own: it was
// removed from the cluster (Removed), or its server failed (Err). Close
// closes it too.
func (s *Server) Stopped() <-chan struct{} { return s.e.Server.StopNotify() }

// Removed reports whether the member has been removed from its cluster
// (it then stops by itself).
func (s *Server) Removed() bool { return s.e.Server.Cluster().Member(s.e.Server.MemberID()) == nil }

// IsLeader reports whether this member is the raft leader now.
func (s *Server) IsLeader() bool { return s.e.Server.Leader() == s.e.Server.MemberID() }

// Close stops the member: it ends the client streams (watches and lease
// keep-alives, whose clients reconnect to other members), waits for
// in-flight unary requests for up to etcd's request timeout, and, if it
// leads, hands leadership to another member. Idempotent. The errors etcd
// logs about its listeners and servers being closed are logged at debug
// level.
func (s *Server) Close() error {
	s.stopping.Store(true)
	s.stopStreams()
	s.once.Do(s.e.Close)
	return nil
}
