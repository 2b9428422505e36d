package cli

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"cairn/console"
	"cairn/crypt"
	"cairn/internal/cmdline"
	"cairn/internal/proc"
	"cairn/s3"
)

const usersHelp = `more S3 users, a JSON file {"users":[{"name":..,"access_key":..,"secret_key":..,"policies":[..]}]}; reloaded on SIGHUP. A user sees and touches only the buckets it made; root sees all. Prefer 'cairn admin user import FILE': users in the metadata store are shared by every gateway`

// s3Creds is the root S3 identity.
type s3Creds struct {
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
}

// credFlags adds --access-key and --secret-key (default $CAIRN_ACCESS_KEY,
// $CAIRN_SECRET_KEY).
func credFlags(fs *flag.FlagSet) func() (s3Creds, bool, error) {
	ak := fs.String("access-key", "", "S3 root access key (default $CAIRN_ACCESS_KEY)")
	sk := fs.String("secret-key", "", "S3 root secret key (default $CAIRN_SECRET_KEY)")
	return func() (s3Creds, bool, error) {
		c := s3Creds{AccessKey: *ak, SecretKey: *sk}
		if c.AccessKey == "" {
			c.AccessKey = os.Getenv("CAIRN_ACCESS_KEY")
		}
		if c.SecretKey == "" {
			c.SecretKey = os.Getenv("CAIRN_SECRET_KEY")
		}
		switch {
		case c.AccessKey == "" && c.SecretKey == "":
			return c, false, nil
		case c.AccessKey == "" || c.SecretKey == "":
			return c, false, fmt.Errorf("%w: give both the S3 access key and the secret key, or neither", ErrUsage)
		case len(c.SecretKey) < 8:
			return c, false, fmt.Errorf("%w: the S3 secret key must be at least 8 characters", ErrUsage)
		}
		return c, true, nil
	}
}

// loadOrMakeCreds reads the root S3 credentials kept in path, or makes and
// stores new ones (mode 0600). fresh reports that they were just made.
func loadOrMakeCreds(path string) (c s3Creds, fresh bool, err error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if err := json.Unmarshal(b, &c); err != nil || c.AccessKey == "" || c.SecretKey == "" {
			return c, false, fmt.Errorf("%s is damaged: delete it to make new S3 credentials", path)
		}
		return c, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return c, false, err
	}
	if c, err = newKeyPair(rand.Reader); err != nil {
		return c, false, err
	}
	b, _ = json.MarshalIndent(c, "", "  ")
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return c, false, err
	}
	return c, true, nil
}

// startS3 serves the S3 API of cl on addr until ctx ends, and the web
// console on consoleAddr unless consoleOff(consoleAddr); it returns the
// S3 listener's address, the console's URL ("" if none) and a stop
// function. The identities are root (creds;
// none if its access key is ""), the users file users (if not ""; reloaded
// on SIGHUP) and the users of the metadata store (re-read every
// lim.usersRefresh). lim holds the handler's limits and timeouts
// (serveFlags); with lim.tls it serves HTTPS only.
func startS3(ctx context.Context, cl *cluster, addr, consoleAddr string, creds s3Creds, users string, lim serveLimits, log *slog.Logger) (s3At, consoleAt string, stop func(), err error) {
	ids, err := loadUsers(users, creds)
	if err != nil {
		return "", "", nil, err
	}
	live := &liveCreds{}
	live.set(ids)
	secret, err := cl.clusterSecret("the S3 gateway")
	if err != nil {
		return "", "", nil, err
	}
	seal, err := crypt.UserSealKey(secret)
	if err != nil {
		return "", "", nil, err
	}
	table := &userTable{static: live}
	stored := &storeUsers{table: table, st: cl.meta, seal: seal, every: lim.usersRefresh, log: log}
	if stored.every <= 0 {
		stored.every = defaultUsersRefresh
	}
	if err := stored.start(ctx); err != nil {
		return "", "", nil, err
	}
	h, err := s3.New(s3.Config{
		Objects:         cl.data,
		Meta:            cl.meta,
		Credentials:     table,
		DefaultPolicy:   DefaultPolicy,
		AllowedPolicies: lim.s3.AllowedPolicies,
		StorageClasses:  storageClasses(),
		CheckPolicy:     checkPolicy,
		Admin: userAdminHandler{admin: userAdmin{st: cl.meta, seal: seal, now: time.Now, rand: rand.Reader},
			changed: stored.load},
		Logger:          log,
		BodyIdleTimeout: lim.s3.BodyIdleTimeout,
		WriteTimeout:    lim.s3.WriteTimeout,
		MaxRequests:     lim.s3.MaxRequests,
		QueueWait:       lim.s3.QueueWait,

		AllowInsecureSSEC: lim.s3.AllowInsecureSSEC,
	})
	if err != nil {
		stored.stop()
		return "", "", nil, err
	}
	var s3h http.Handler = h
	stopConsole := func() {}
	if !consoleOff(consoleAddr) {
		counters := &console.Counters{}
		s3h = counters.Wrap(h)
		if consoleAt, stopConsole, err = startConsole(ctx, cl, consoleAddr, s3h, table, counters, lim.tls, log); err != nil {
			stored.stop()
			return "", "", nil, err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		stopConsole()
		stored.stop()
		return "", "", nil, fmt.Errorf("S3 listener: %w", err)
	}
	if lim.tls != nil {
		ln = tls.NewListener(ln, lim.tls)
	}
	lim.metrics.client(cl.data)
	stopServer := serveHTTP(ctx, ln, lim.metrics.s3Handler(s3h), "S3", log)
	unwatch := make(chan struct{})
	if users != "" {
		watchUsers(live, users, creds, log, unwatch)
	}
	stop = func() {
		stopServer()
		stopConsole()
		close(unwatch)
		stored.stop()
	}
	return ln.Addr().String(), consoleAt, stop, nil
}

func runGateway(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn gateway", flag.ContinueOnError)
	addr := fs.String("s3-addr", "127.0.0.1:9000", "S3 listen address (port 0: one the kernel picks)")
	consoleAddr := fs.String("console-addr", "", gatewayConsoleHelp)
	users := fs.String("users", "", usersHelp)
	logf := addLogFlags(fs)
	creds := credFlags(fs)
	serve := addServeFlags(fs)
	tlsf := addTLSFlags(fs, false)
	mf := addMetricsFlags(fs, true)
	cmdline.Usage(fs, "cairn gateway --config GATEWAY.CONF | --config CLIENT.CONF [--s3-addr ADDR] [--access-key K --secret-key S]",
		"Serves the S3 API for a cluster. Gateways are stateless: run as many as you like.\nThe users are those of the metadata store ('cairn admin user add'), shared by every gateway and\nre-read every --users-refresh; root credentials may also come from the flags, the config or\n$CAIRN_ACCESS_KEY / $CAIRN_SECRET_KEY, and more users from --users FILE.\n"+
			"--config is a client.conf, or a gateway config written by `cairn init`: a client.conf plus\nthis command's flags by name (s3-addr, access-key, secret-key, ...); flags given here win.\n"+
			"Every metadata and node call has a deadline, and requests and their memory are bounded: a request that\n"+
			"cannot be served in time gets 503 (ServiceUnavailable or SlowDown) with Retry-After.")
	var lim serveLimits
	var log *slog.Logger
	var metricsAt string
	stopMetrics := func() {}
	defer func() { stopMetrics() }()
	opts := func() (clusterOptions, error) {
		// A gateway's config (cairn init's DIR/HOST/gatewayN.conf) is a
		// client config plus the gateway's flags.
		if p := cmp.Or(fs.Lookup("config").Value.String(), os.Getenv(configEnv)); p != "" {
			if _, err := applyRoleConfig(fs, p, clientConfigKeys...); err != nil {
				return clusterOptions{}, err
			}
		}
		var err error
		if log, err = logf.logger(stderr); err != nil {
			return lim.cluster, err
		}
		if lim, err = serve.limits(log); err != nil {
			return lim.cluster, err
		}
		lim.cluster.recordSecret = true
		lim.cluster.key = gatewayKey()
		if lim.tls, err = tlsf.config("", ""); err != nil {
			return lim.cluster, err
		}
		// The metrics start before the cluster opens: they count its
		// metadata calls.
		lim.metrics, metricsAt, stopMetrics, err = mf.start(ctx, log)
		lim.cluster.metrics = lim.metrics
		return lim.cluster, err
	}
	return withClusterOpts(ctx, fs, args, stdout, stderr, 0, 0, opts, func(ctx context.Context, cl *cluster, _ []string) error {
		c, ok, err := creds()
		if err != nil {
			return err
		}
		if !ok {
			log.Info("no root S3 credentials given: serving the users of the metadata store ('cairn admin user')")
		}
		consoleSet := false
		fs.Visit(func(f *flag.Flag) { consoleSet = consoleSet || f.Name == "console-addr" })
		if !consoleSet {
			if *consoleAddr, err = consoleDefault(*addr); err != nil {
				return err
			}
		}
		where, consoleAt, stop, err := startS3(ctx, cl, *addr, *consoleAddr, c, *users, lim, log)
		if err != nil {
			return listenError(err, []listenAddr{{"S3", *addr, "s3-addr"}, {"web console", *consoleAddr, "console-addr"}}, "")
		}
		defer stop()
		if lim.keys != nil {
			lim.keys.watch(ctx, log)
		}
		fmt.Fprintf(stdout, "cairn gateway serving S3 on %s\n", s3URL(where, lim.tls))
		ready := map[string]string{proc.S3: s3URL(where, lim.tls)}
		if consoleAt != "" {
			fmt.Fprintf(stdout, "cairn gateway serving the web console on %s\n", consoleAt)
			ready[proc.Console] = consoleAt
		}
		if lim.tls == nil {
			fmt.Fprint(stdout, plainWarning(where))
		}
		fmt.Fprintln(stdout, proc.Ready{Role: "gateway", Addrs: readyAddrs(ready, metricsAt)})
		<-ctx.Done()
		return nil
	})
}
