package testcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn/internal/proc"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds the cairn command once per test binary and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cairn-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "cairn")
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/cairn")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Proc is one running cairn process.
type Proc = proc.Proc

// StartProc starts `cairn args...`, waits for its ready line (failing the
// test after a minute) and kills it when the test ends.
func StartProc(t testing.TB, name string, args ...string) *Proc {
	t.Helper()
	p, err := proc.Start(t.Context(), proc.Config{Name: name, Bin: Binary(t), Args: args})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// Config shapes a cluster.
type Config struct {
	Metas        int // metadata members (1, 3 or 5; default 1)
	Nodes        int // storage nodes (default 1)
	DisksPerNode int // default 1
	// Grace is the director's suspect → down delay (default 30s).
	Grace time.Duration
	// NodeArgs are more flags for every `cairn node` (e.g. repair settings).
	NodeArgs []string
	// MetaArgs are more flags for every `cairn meta` (e.g. --metrics-addr).
	MetaArgs []string
	// Lstor serves every disk with an Lstor, at LstorDir (RAIDP).
	Lstor bool
}

// Cluster is a running multi-process cluster.
type Cluster struct {
	Dir    string
	Metas  []*Proc
	Nodes  []*Proc
	Conf   string // client.conf path
	secret string
	metaEP []string
}

// Start starts a cluster: the metadata members first, then the nodes.
// Every process binds port 0 and reports its addresses in its ready line;
// the members talk to each other over unix sockets in the cluster's
// directory (see internal/proc).
func Start(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	cfg.Metas = max(cfg.Metas, 1)
	cfg.Nodes = max(cfg.Nodes, 1)
	cfg.DisksPerNode = max(cfg.DisksPerNode, 1)
	if cfg.Grace == 0 {
		cfg.Grace = 30 * time.Second
	}
	c := &Cluster{Dir: t.TempDir(), secret: "test-secret-" + fmt.Sprint(time.Now().UnixNano())}
	var names, initial []string
	for i := 1; i <= cfg.Metas; i++ {
		name := fmt.Sprintf("meta%d", i)
		names = append(names, name)
		initial = append(initial, name+"="+metaPeerURL(name))
	}
	// Members of a new cluster wait for each other: start them together.
	bin := Binary(t)
	var wg sync.WaitGroup
	procs := make([]*Proc, len(names))
	errs := make([]error, len(names))
	for i, name := range names {
		args := []string{"meta", "--name", name, "--data", filepath.Join(c.Dir, name),
			"--client-addr", "127.0.0.1:0", "--peer-addr", metaPeerURL(name), "--initial-cluster", strings.Join(initial, ",")}
		args = append(args, cfg.MetaArgs...)
		wg.Go(func() {
			procs[i], errs[i] = proc.Start(t.Context(), proc.Config{Name: name, Bin: bin, Args: args, Dir: c.Dir})
		})
	}
	wg.Wait()
	for _, p := range procs {
		if p != nil {
			t.Cleanup(p.Kill)
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	c.Metas = procs
	for _, p := range procs {
		c.metaEP = append(c.metaEP, strings.Split(p.Addr(proc.Meta), ",")...)
	}
	secretFile := filepath.Join(c.Dir, "secret")
	if err := os.WriteFile(secretFile, []byte(c.secret), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= cfg.Nodes; i++ {
		id := fmt.Sprintf("node%d", i)
		var disks []string
		for d := 1; d <= cfg.DisksPerNode; d++ {
			spec := c.NodeDir(i, d)
			if cfg.Lstor {
				spec += ",lstor=" + c.LstorDir(i, d)
			}
			disks = append(disks, spec)
		}
		args := append(proc.NodeArgs(id, c.metaEP, secretFile, disks), "--grace", cfg.Grace.String())
		c.Nodes = append(c.Nodes, StartProc(t, id, append(args, cfg.NodeArgs...)...))
	}
	c.Conf = filepath.Join(c.Dir, "client.conf")
	conf, _ := json.Marshal(map[string]any{"meta": c.metaEP, "secret": c.secret})
	if err := os.WriteFile(c.Conf, conf, 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// metaPeerURL is a member's peer URL: a unix socket named NAME:2380 in the
// cluster's directory, where every member runs.
func metaPeerURL(name string) string { return "unix://" + name + ":2380" }

// MetaEndpoints returns the metadata client URLs.
func (c *Cluster) MetaEndpoints() []string { return c.metaEP }

// Secret returns the cluster secret.
func (c *Cluster) Secret() string { return c.secret }

// NodeDir returns the data directory of node i (1-based) disk d.
func (c *Cluster) NodeDir(i, d int) string {
	return filepath.Join(c.Dir, fmt.Sprintf("node%d", i), fmt.Sprintf("disk%d", d))
}

// LstorDir returns the Lstor directory of node i (1-based) disk d
// (Config.Lstor).
func (c *Cluster) LstorDir(i, d int) string {
	return filepath.Join(c.Dir, fmt.Sprintf("node%d", i), fmt.Sprintf("lstor%d", d))
}

// CLI runs `cairn --config CONF args...` and returns its stdout; it fails
// the test on a non-zero exit.
func (c *Cluster) CLI(t testing.TB, args ...string) string {
	t.Helper()
	out, err := c.TryCLI(context.Background(), args...)
	if err != nil {
		t.Fatalf("cairn %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TryCLI runs a CLI command and returns its combined output and error.
func (c *Cluster) TryCLI(ctx context.Context, args ...string) (string, error) {
	return RunCLI(ctx, c.Conf, args...)
}

// RunCLI runs `cairn CMD --config conf ARGS...` (the config flag goes
// right after the subcommand name).
func RunCLI(ctx context.Context, conf string, args ...string) (string, error) {
	// The flag goes after the command words: "admin repair status",
	// "admin disk out", "admin node drain", "admin scrub start", "admin user add"
	// "admin gc status" and "admin meta add" have three.
	words := 1
	if args[0] == "admin" || args[0] == "bench" {
		words = 2
	}
	if len(args) > 2 && args[0] == "admin" && (args[1] == "repair" || args[1] == "disk" || args[1] == "node" || args[1] == "keys" ||
		args[1] == "scrub" || args[1] == "user" || args[1] == "gc" || args[1] == "meta" || args[1] == "lifecycle" || args[1] == "raidp") {
		words = 3
	}
	words = min(words, len(args))
	full := append(append(slices.Clone(args[:words]), "--config", conf), args[words:]...)
	cmd := exec.CommandContext(ctx, binPath, full...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// Server is an all-in-one `cairn server` process.
type Server struct {
	*Proc
	Data      string // --data directory
	Conf      string // DIR/client.conf
	S3        string // http://host:port of the S3 API
	AccessKey string // the root S3 credentials
	SecretKey string
}

// Test S3 credentials of servers started by StartServer.
const (
	TestAccessKey = "CAIRNTESTACCESSKEY"
	TestSecretKey = "cairn-test-secret-key-0123456789"
)

// StartServer starts `cairn server --data dir` on ports the kernel picks
// (dir is made if empty) with extra flags appended.
func StartServer(t testing.TB, dir string, extra ...string) *Server {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	args := []string{"server", "--data", dir, "--port-base", "0", "--access-key", TestAccessKey, "--secret-key", TestSecretKey}
	p := StartProc(t, "server", append(args, extra...)...)
	return &Server{Proc: p, Data: dir, Conf: filepath.Join(dir, "client.conf"), S3: p.Addr(proc.S3),
		AccessKey: TestAccessKey, SecretKey: TestSecretKey}
}

// Restart kills the server and starts it again with the same flags, on new
// ports (S3 and DIR/client.conf follow them).
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.Proc.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.S3 = s.Addr(proc.S3)
}

// CLI runs a CLI command against the server; it fails the test on error.
func (s *Server) CLI(t testing.TB, args ...string) string {
	t.Helper()
	out, err := RunCLI(context.Background(), s.Conf, args...)
	if err != nil {
		t.Fatalf("cairn %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TryCLI runs a CLI command against the server and returns its output and error.
func (s *Server) TryCLI(ctx context.Context, args ...string) (string, error) {
	return RunCLI(ctx, s.Conf, args...)
}
