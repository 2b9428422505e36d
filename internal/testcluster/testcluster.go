package testcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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

// FreePort returns a loopback port nothing listens on right now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Proc is one running cairn process.
type Proc struct {
	Name string
	Args []string
	Dir  string // its data directory
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// StartProc starts `cairn args...` and waits until its output contains
// ready (or fails the test after a minute).
func StartProc(t testing.TB, name, ready string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Name: name, Args: args}
	p.start(t, ready)
	t.Cleanup(func() { p.Kill() })
	return p
}

func (p *Proc) start(t testing.TB, ready string) {
	t.Helper()
	if err := p.tryStart(t, ready); err != nil {
		t.Fatal(err)
	}
}

// errPortTaken: the process exited because a port it was given was taken
// meanwhile (FreePort's port is free only when it is asked).
var errPortTaken = errors.New("address already in use")

// tryStart is start returning the failure instead of failing the test.
func (p *Proc) tryStart(t testing.TB, ready string) error {
	t.Helper()
	p.out = &syncBuffer{}
	p.cmd = exec.Command(Binary(t), p.Args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", p.Name, err)
	}
	p.done = make(chan struct{})
	go func() { p.cmd.Wait(); close(p.done) }()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(p.out.String(), ready) {
		select {
		case <-p.done:
			if strings.Contains(p.out.String(), "address already in use") {
				return fmt.Errorf("%s exited before it was ready: %w:\n%s", p.Name, errPortTaken, p.out.String())
			}
			return fmt.Errorf("%s exited before it was ready:\n%s", p.Name, p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after a minute:\n%s", p.Name, p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// Kill sends SIGKILL and waits for the process to exit.
func (p *Proc) Kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Kill()
	<-p.done
}

// Alive reports whether the process is running.
func (p *Proc) Alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Restart starts the process again with the same arguments.
func (p *Proc) Restart(t testing.TB, ready string) {
	t.Helper()
	p.Kill()
	p.start(t, ready)
}

// Output returns what the process printed so far.
func (p *Proc) Output() string { return p.out.String() }

// Config shapes a cluster.
type Config struct {
	Metas        int // metadata members (1, 3 or 5; default 1)
	Nodes        int // storage nodes (default 1)
	DisksPerNode int // default 1
	// Grace is the director's suspect → down delay (default 30s).
	Grace time.Duration
	// NodeArgs are more flags for every `cairn node` (e.g. repair settings).
	NodeArgs []string
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
func Start(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	cfg.Metas = max(cfg.Metas, 1)
	cfg.Nodes = max(cfg.Nodes, 1)
	cfg.DisksPerNode = max(cfg.DisksPerNode, 1)
	if cfg.Grace == 0 {
		cfg.Grace = 30 * time.Second
	}
	c := &Cluster{Dir: t.TempDir(), secret: "test-secret-" + fmt.Sprint(time.Now().UnixNano())}
	type member struct{ name, client, peer string }
	var ms []member
	var initial []string
	for i := 1; i <= cfg.Metas; i++ {
		m := member{fmt.Sprintf("meta%d", i), fmt.Sprintf("127.0.0.1:%d", FreePort(t)), fmt.Sprintf("127.0.0.1:%d", FreePort(t))}
		ms = append(ms, m)
		initial = append(initial, m.name+"=http://"+m.peer)
		c.metaEP = append(c.metaEP, "http://"+m.client)
	}
	// Members of a new cluster wait for each other: start them together.
	var wg sync.WaitGroup
	procs := make([]*Proc, len(ms))
	for i, m := range ms {
		p := &Proc{Name: m.name, Args: []string{"meta", "--name", m.name, "--data", filepath.Join(c.Dir, m.name),
			"--client-addr", m.client, "--peer-addr", m.peer, "--initial-cluster", strings.Join(initial, ",")}}
		procs[i] = p
		t.Cleanup(func() { p.Kill() })
		wg.Go(func() { p.start(t, "serving clients") })
	}
	wg.Wait()
	c.Metas = procs
	secretFile := filepath.Join(c.Dir, "secret")
	if err := os.WriteFile(secretFile, []byte(c.secret), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= cfg.Nodes; i++ {
		id := fmt.Sprintf("node%d", i)
		args := []string{"node", "--id", id, "--meta", strings.Join(c.metaEP, ","), "--secret-file", secretFile,
			"--addr", fmt.Sprintf("127.0.0.1:%d", FreePort(t)), "--grace", cfg.Grace.String()}
		for d := 1; d <= cfg.DisksPerNode; d++ {
			args = append(args, "--disk", filepath.Join(c.Dir, id, fmt.Sprintf("disk%d", d)))
		}
		args = append(args, cfg.NodeArgs...)
		c.Nodes = append(c.Nodes, StartProc(t, id, "serving", args...))
	}
	c.Conf = filepath.Join(c.Dir, "client.conf")
	conf, _ := json.Marshal(map[string]any{"meta": c.metaEP, "secret": c.secret})
	if err := os.WriteFile(c.Conf, conf, 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// MetaEndpoints returns the metadata client URLs.
func (c *Cluster) MetaEndpoints() []string { return c.metaEP }

// Secret returns the cluster secret.
func (c *Cluster) Secret() string { return c.secret }

// NodeDir returns the data directory of node i (1-based) disk d.
func (c *Cluster) NodeDir(i, d int) string {
	return filepath.Join(c.Dir, fmt.Sprintf("node%d", i), fmt.Sprintf("disk%d", d))
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
	// The flag goes after the command words: "admin repair status" has three.
	words := 1
	if args[0] == "admin" || args[0] == "bench" {
		words = 2
	}
	if len(args) > 2 && args[0] == "admin" && args[1] == "repair" {
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

// StartServer starts `cairn server --data dir` on free ports (dir is made
// if empty) with extra flags appended.
func StartServer(t testing.TB, dir string, extra ...string) *Server {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	// A port FreePort found may be taken before the server binds it (other
	// tests run in parallel): start again on new ports then.
	for attempt := 1; ; attempt++ {
		s3 := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		args := []string{"server", "--data", dir,
			"--meta-addr", fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
			"--meta-peer-addr", fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
			"--node-addr", fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
			"--s3-addr", s3, "--access-key", TestAccessKey, "--secret-key", TestSecretKey}
		p := &Proc{Name: "server", Args: append(args, extra...)}
		err := p.tryStart(t, "cairn server running")
		if errors.Is(err, errPortTaken) && attempt < 4 {
			t.Logf("retrying on other ports: %v", err)
			continue
		}
		if err != nil {
			p.Kill()
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Kill() })
		return &Server{Proc: p, Data: dir, Conf: filepath.Join(dir, "client.conf"), S3: "http://" + s3,
			AccessKey: TestAccessKey, SecretKey: TestSecretKey}
	}
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

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }
