package cli

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"cairn/cleanup"
	"cairn/client"
	"cairn/director"
	"cairn/internal/units"
	etcdmeta "cairn/meta/etcd"
	"cairn/node"
	"cairn/s3"
)

// serveFlags are the deadlines and limits of a process that serves S3
// (cairn gateway, cairn server): docs/design/s3.md, "Limits".
type serveFlags struct {
	metaTimeout  *time.Duration
	nodeTimeout  *time.Duration
	nodeIdle     *time.Duration
	readTimeout  *time.Duration
	writeTimeout *time.Duration
	maxRequests  *int
	maxMemory    *string
	queueWait    *time.Duration
	kmsKeyFile   *string
	insecureSSEC *bool
	allowPolicy  *string
	keepSlow     *bool
	usersRefresh *time.Duration
	raidpDeletes *string
}

// Defaults of the serve flags.
const (
	defaultMaxMemory = "1GiB"
	defaultQueueWait = 10 * time.Second
)

func addServeFlags(fs *flag.FlagSet) *serveFlags {
	return &serveFlags{
		metaTimeout: fs.Duration("meta-timeout", etcdmeta.DefaultCallTimeout,
			"bound on every metadata (etcd) call: a request whose metadata does not answer in time gets 503 ServiceUnavailable"),
		nodeTimeout: fs.Duration("node-timeout", node.DefaultTimeouts.Call,
			"bound on a small storage-node call (delete, list, stat), and on connecting to a node (at most 5s)"),
		nodeIdle: fs.Duration("node-idle-timeout", node.DefaultTimeouts.Idle,
			"a shard transfer whose node moves no byte, or does not answer, for this long fails (streams have no overall limit)"),
		readTimeout: fs.Duration("read-timeout", time.Minute,
			"an S3 client that sends no byte of a request body for this long is cut off"),
		writeTimeout: fs.Duration("write-timeout", time.Minute,
			"an S3 client that takes no byte of a response for this long is cut off"),
		maxRequests: fs.Int("max-requests", s3.DefaultMaxRequests,
			"most S3 requests served at once; more wait up to --queue-wait, then get 503 SlowDown"),
		maxMemory: fs.String("max-memory", defaultMaxMemory,
			"most buffer memory of the S3 requests together (PUT stripes, GET windows); a request waits up to --queue-wait for its share, then gets 503 SlowDown"),
		queueWait: fs.Duration("queue-wait", defaultQueueWait,
			"how long a request waits for a slot (--max-requests) or for memory (--max-memory)"),
		kmsKeyFile: fs.String("kms-key-file", "", kmsKeyFileHelp),
		insecureSSEC: fs.Bool("allow-insecure-ssec", false,
			"accept SSE-C keys over plain HTTP (S3 refuses them; for loopback tests only)"),
		allowPolicy: fs.String("allow-policies", "",
			"comma-separated policies an S3 user without an allow-list of its own may choose with a signed x-cairn-policy (default: the default policy alone; root may choose any; docs/design/s3.md, \"Choosing a policy\")"),
		keepSlow: fs.Bool("keep-slow-disks", false,
			"do not steer new stripes and reads away from disks this gateway finds slow (docs/design/speculative.md, \"Slow disks across PUTs\"); for comparison"),
		raidpDeletes: fs.String("raidp-deletes", client.RAIDPLazy, raidpDeletesHelp),
		usersRefresh: fs.Duration("users-refresh", defaultUsersRefresh,
			"how often the S3 users of the metadata store are re-read: a user added, removed or rotated on any gateway or with 'cairn admin user' is served (or refused) here within this long"),
	}
}

// serveLimits are the checked serve flags.
type serveLimits struct {
	cluster clusterOptions
	s3      s3.Config // only the limit fields are set
	keys    *liveKeys // --kms-key-file's keys (also cluster.keys); nil: none given
	// usersRefresh is how often the store's users are re-read (--users-refresh).
	usersRefresh time.Duration
	// tls, if not nil, makes the S3 listener serve HTTPS only (tlsFlags).
	tls *tls.Config
	// metrics, if not nil, counts the S3 requests (and with --s3-metrics
	// serves the metrics on the S3 port).
	metrics *procMetrics
}

func (f *serveFlags) limits(log *slog.Logger) (serveLimits, error) {
	mem, err := units.ParseSize(*f.maxMemory)
	switch {
	case err != nil || mem < 1<<20:
		return serveLimits{}, fmt.Errorf("%w: --max-memory: want a size of at least 1MiB", ErrUsage)
	case *f.metaTimeout <= 0 || *f.nodeTimeout <= 0 || *f.nodeIdle <= 0:
		return serveLimits{}, fmt.Errorf("%w: --meta-timeout, --node-timeout and --node-idle-timeout must be positive", ErrUsage)
	case *f.readTimeout <= 0 || *f.writeTimeout <= 0 || *f.queueWait <= 0:
		return serveLimits{}, fmt.Errorf("%w: --read-timeout, --write-timeout and --queue-wait must be positive", ErrUsage)
	case *f.maxRequests < 1:
		return serveLimits{}, fmt.Errorf("%w: --max-requests must be at least 1", ErrUsage)
	case *f.usersRefresh <= 0:
		return serveLimits{}, fmt.Errorf("%w: --users-refresh must be positive", ErrUsage)
	case *f.raidpDeletes != client.RAIDPLazy && *f.raidpDeletes != client.RAIDPOnline:
		return serveLimits{}, fmt.Errorf("%w: --raidp-deletes %q: want %s or %s", ErrUsage, *f.raidpDeletes, client.RAIDPLazy, client.RAIDPOnline)
	}
	allowed, err := parsePolicies(*f.allowPolicy)
	if err != nil {
		return serveLimits{}, fmt.Errorf("%w: --allow-policies: %w", ErrUsage, err)
	}
	nt := node.Timeouts{Dial: min(*f.nodeTimeout, 5*time.Second), Call: *f.nodeTimeout, Header: *f.nodeIdle, Idle: *f.nodeIdle}
	l := serveLimits{
		cluster: clusterOptions{metaTimeout: *f.metaTimeout, node: nt, memory: client.NewBudget(mem, *f.queueWait), log: log, keepSlow: *f.keepSlow,
			bucketCache: gatewayBucketCache, raidpDeletes: *f.raidpDeletes},
		s3: s3.Config{BodyIdleTimeout: *f.readTimeout, WriteTimeout: *f.writeTimeout,
			MaxRequests: *f.maxRequests, QueueWait: *f.queueWait, AllowInsecureSSEC: *f.insecureSSEC,
			AllowedPolicies: allowed},
		usersRefresh: *f.usersRefresh,
	}
	if *f.kmsKeyFile != "" {
		k, err := loadKeyring(*f.kmsKeyFile)
		if err != nil {
			return serveLimits{}, fmt.Errorf("%w: --kms-key-file: %w", ErrUsage, err)
		}
		l.keys = newLiveKeys(*f.kmsKeyFile, k)
		l.cluster.keys = l.keys
	}
	return l, nil
}

// cleanupFlags configure the director's cleanup duty (cairn node, cairn
// server): docs/design/cleanup.md.
type cleanupFlags struct {
	grace *time.Duration
	rate  *float64
	every *time.Duration
	raidp raidpZeroFlags // the raidp zeroer's (raidpspace.go)
}

func addCleanupFlags(fs *flag.FlagSet) *cleanupFlags {
	return &cleanupFlags{
		grace: fs.Duration("cleanup-grace", cleanup.DefaultGrace,
			"director: how long the shard files of an overwritten or deleted object stay before they are deleted, so reads under way finish (0: delete at once)"),
		rate: fs.Float64("cleanup-rate", cleanup.DefaultRate, "director: most shard files deleted per second"),
		every: fs.Duration("cleanup-every", 10*time.Second,
			"director: how often the queue of shard files to delete is worked"),
		raidp: addRaidpZeroFlags(fs),
	}
}

func (f *cleanupFlags) validate() error {
	switch {
	case *f.grace < 0:
		return fmt.Errorf("%w: --cleanup-grace must not be negative", ErrUsage)
	case *f.rate <= 0 || *f.every <= 0:
		return fmt.Errorf("%w: --cleanup-rate and --cleanup-every must be positive", ErrUsage)
	}
	return f.raidp.validate()
}

// duty returns the director's cleanup duty over the cluster's nodes (the
// flags passed validate).
func (f *cleanupFlags) duty(cl *cluster, log *slog.Logger, pm *procMetrics) director.Duty {
	grace := *f.grace
	if grace == 0 {
		grace = -1 // cleanup.Config: none
	}
	w := cleanup.New(cl.meta, cl.nodes, cleanup.Config{Grace: grace, Rate: *f.rate, Logger: log})
	count := pm.cleanup()
	return director.Duty{Name: "delete dropped shard files", Every: *f.every, Background: true,
		Run: func(ctx context.Context, now time.Time) error {
			st, err := w.Run(ctx, now)
			if count != nil {
				count(st)
			}
			if st != (cleanup.Stats{}) {
				log.Info("cleanup: shard files deleted", "files", st.Deleted, "records", st.Done,
					"requeued", st.Requeued, "dropped", st.Dropped)
			}
			return err
		}}
}

// The node protocol's client deletes the cleanup worker's files.
var _ cleanup.Deleter = (*node.Client)(nil)
