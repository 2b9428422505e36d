package testcluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
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

// Documented is a cluster started only by the commands of
// docs/running-a-cluster.md (StartDocumented).
type Documented struct {
	Dir       string   // the working directory of cairn init and the CLI commands
	Conf      string   // the client.conf cairn init wrote
	Gateways  []string // the gateways' S3 URLs, http://HOST:PORT, in the doc's order
	AccessKey string   // the root S3 credentials cairn init made
	SecretKey string
	Procs     []*Proc // every process, members first
	Init      string  // what cairn init printed
	// CA is the cluster CA's certificate file cairn init made (its
	// DIR/tls/ca.pem), which S3 clients trust; "" for a cluster without
	// TLS.
	CA string

	blocks   docBlocks
	loopback *strings.Replacer // the doc's hosts and data directory → the test's
	initDir  string            // the directory cairn init wrote
}

// docHostPrefix is the hosts' common prefix in the doc: 10.0.0.1 … 10.0.0.3.
const docHostPrefix = "10.0.0."

// docData is the data directory the doc gives cairn init.
const docData = "/var/lib/cairn"

// docBlocks are the marked shell blocks of docs/running-a-cluster.md.
type docBlocks struct {
	init      []string            // the cairn init command
	hosts     []string            // the hosts, in the doc's order
	host      map[string][]string // each host's commands
	cli       []string            // the CLI commands run afterwards
	add       []string            // the commands that prepare the hosts added later (cairn init --add-host)
	joinHosts []string            // hosts added later, in the doc's order
	join      map[string][]string // their commands, run with a copy of client.conf
}

// readDocBlocks reads the blocks marked <!-- cluster:init -->,
// <!-- cluster:host HOST -->, <!-- cluster:cli -->, <!-- cluster:add -->
// and <!-- cluster:join HOST -->: one command a line, a trailing
// backslash continuing it on the next.
func readDocBlocks(path string) (docBlocks, error) {
	f, err := os.Open(path)
	if err != nil {
		return docBlocks{}, err
	}
	defer f.Close()
	d := docBlocks{host: map[string][]string{}, join: map[string][]string{}}
	var mark string
	var into *[]string
	var cont string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "<!-- cluster:") && strings.HasSuffix(line, " -->"):
			mark = strings.TrimSuffix(strings.TrimPrefix(line, "<!-- cluster:"), " -->")
		case mark != "" && line == "```sh":
			switch kind, arg, _ := strings.Cut(mark, " "); kind {
			case "init":
				into = &d.init
			case "cli":
				into = &d.cli
			case "add":
				into = &d.add
			case "host":
				d.hosts = append(d.hosts, arg)
				into = new([]string)
			case "join":
				d.joinHosts = append(d.joinHosts, arg)
				into = new([]string)
			default:
				return d, fmt.Errorf("%s:%d: unknown mark %q", path, n, mark)
			}
		case mark != "" && into == nil && line != "":
			return d, fmt.Errorf("%s:%d: mark %q not followed by a sh block", path, n, mark)
		case into != nil && line == "```":
			switch kind, arg, _ := strings.Cut(mark, " "); kind {
			case "host":
				d.host[arg] = *into
			case "join":
				d.join[arg] = *into
			}
			mark, into = "", nil
		case into != nil:
			line = strings.TrimSpace(line)
			if c, ok := strings.CutSuffix(line, "\\"); ok {
				cont += c
				continue
			}
			*into = append(*into, cont+line)
			cont = ""
		}
	}
	if err := sc.Err(); err != nil {
		return d, err
	}
	if len(d.init) != 1 || len(d.hosts) == 0 || into != nil {
		return d, fmt.Errorf("%s: want one cluster:init command, cluster:host blocks, all closed", path)
	}
	return d, nil
}

// docHostBlocks reads cairn init's printed commands by host: the lines
// "  cairn ..." after "On HOST (...):".
func docHostBlocks(out string) map[string][]string {
	m := map[string][]string{}
	host := ""
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "On "):
			host, _, _ = strings.Cut(strings.TrimPrefix(line, "On "), " ")
		case host != "" && strings.HasPrefix(line, "  cairn "):
			m[host] = append(m[host], strings.TrimSpace(line))
		default:
			host = ""
		}
	}
	return m
}

// freeLoopbackNet returns a prefix 127.24.R. under which every port the
// doc's processes use is free on 127.24.R.1 … 127.24.R.n.
func freeLoopbackNet(n int) (string, error) {
	ports := []string{"9379", "9380", "9100", "9101", "9000"}
	for range 20 {
		prefix := fmt.Sprintf("127.24.%d.", 1+rand.IntN(254))
		free := true
		var lns []net.Listener
		for h := 1; h <= n && free; h++ {
			for _, p := range ports {
				ln, err := net.Listen("tcp", net.JoinHostPort(fmt.Sprint(prefix, h), p))
				if err != nil {
					free = false
					break
				}
				lns = append(lns, ln)
			}
		}
		for _, ln := range lns {
			ln.Close()
		}
		if free {
			return prefix, nil
		}
	}
	return "", errors.New("no free 127.24.R.0/24 on loopback")
}

// StartDocumented starts a cluster with the commands of
// docs/running-a-cluster.md, as written but for the hosts (10.0.0.H
// becomes 127.24.R.H, a loopback address on Linux) and the data
// directory: cairn init, each host's commands in a copy of its directory
// (the metadata members together, then the nodes, then the gateways), and
// the CLI commands, which make the bucket "photos". It fails the test if
// the doc's host blocks are not what cairn init printed. Tests that need
// a cluster set up the documented way build on it. Linux only (it skips
// elsewhere).
func StartDocumented(t testing.TB) *Documented {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the documented cluster runs on 127.24.R.H, loopback on Linux only")
	}
	_, file, _, _ := runtime.Caller(0)
	doc := filepath.Join(filepath.Dir(file), "..", "..", "docs", "running-a-cluster.md")
	blocks, err := readDocBlocks(doc)
	if err != nil {
		t.Fatal(err)
	}
	prefix, err := freeLoopbackNet(len(blocks.hosts) + len(blocks.joinHosts))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	loopback := strings.NewReplacer(docHostPrefix, prefix, docData, filepath.Join(work, "data"))
	bin := Binary(t)
	args := func(cmd string) []string { return docArgs(t, loopback, cmd) }
	run := func(cmd string) string {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, bin, args(cmd)...)
		c.Dir = work
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", loopback.Replace(cmd), err, out)
		}
		return string(out)
	}
	d := &Documented{Dir: work, Init: run(blocks.init[0]), blocks: blocks, loopback: loopback}

	printed := docHostBlocks(d.Init)
	var initDir string
	for _, h := range blocks.hosts {
		lh := loopback.Replace(h)
		if want := blocks.host[h]; !slices.Equal(printed[lh], want) {
			t.Fatalf("%s: the commands for %s are\n%s\nbut cairn init printed\n%s", doc, h,
				strings.Join(want, "\n"), strings.Join(printed[lh], "\n"))
		}
		initDir = filepath.Dir(initHostDir(t, d.Init, lh))
	}
	if len(printed) != len(blocks.hosts) {
		t.Fatalf("%s has %d hosts, cairn init printed commands for %d", doc, len(blocks.hosts), len(printed))
	}
	if !filepath.IsAbs(initDir) {
		initDir = filepath.Join(work, initDir)
	}
	d.initDir, d.Conf = initDir, filepath.Join(initDir, "client.conf")

	// The doc's scp: each host's directory, copied.
	hostDir := map[string]string{}
	for _, h := range blocks.hosts {
		lh := loopback.Replace(h)
		hostDir[h] = filepath.Join(work, "hosts", lh)
		if err := os.CopyFS(hostDir[h], os.DirFS(filepath.Join(initDir, lh))); err != nil {
			t.Fatal(err)
		}
	}
	for _, role := range []string{"meta", "node", "gateway"} {
		var cmds, dirs []string
		for _, h := range blocks.hosts {
			for _, c := range blocks.host[h] {
				if a := args(c); a[0] == role {
					cmds, dirs = append(cmds, c), append(dirs, hostDir[h])
				}
			}
		}
		procs := make([]*Proc, len(cmds))
		errs := make([]error, len(cmds))
		var wg sync.WaitGroup
		for i, c := range cmds {
			wg.Go(func() {
				procs[i], errs[i] = proc.Start(t.Context(), proc.Config{Name: loopback.Replace(c), Bin: bin, Args: args(c), Dir: dirs[i]})
			})
		}
		wg.Wait()
		for _, p := range procs {
			if p != nil {
				t.Cleanup(p.Kill)
				d.Procs = append(d.Procs, p)
			}
		}
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if role == "gateway" {
			for _, p := range procs {
				d.Gateways = append(d.Gateways, p.Addr(proc.S3))
			}
		}
	}
	for _, c := range blocks.cli {
		run(c)
	}
	b, err := os.ReadFile(filepath.Join(initDir, "s3-credentials"))
	if err != nil {
		t.Fatal(err)
	}
	var creds struct {
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	}
	if err := json.Unmarshal(b, &creds); err != nil {
		t.Fatal(err)
	}
	d.AccessKey, d.SecretKey = creds.AccessKey, creds.SecretKey
	if ca := filepath.Join(initDir, "tls", "ca.pem"); fileExists(ca) {
		d.CA = ca
	}
	return d
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// initHostDir returns the directory cairn init printed for host's files:
// "On HOST (files: DIR/HOST/):".
func initHostDir(t testing.TB, out, host string) string {
	t.Helper()
	for line := range strings.Lines(out) {
		if rest, ok := strings.CutPrefix(line, "On "+host+" (files: "); ok {
			return strings.TrimSuffix(strings.TrimSpace(rest), "/):")
		}
	}
	t.Fatalf("cairn init printed no files for %s:\n%s", host, out)
	return ""
}

// docArgs returns the arguments of a doc's cairn command on loopback.
func docArgs(t testing.TB, loopback *strings.Replacer, cmd string) []string {
	t.Helper()
	f := strings.Fields(loopback.Replace(cmd))
	if len(f) < 2 || f[0] != "cairn" {
		t.Fatalf("docs/running-a-cluster.md: %q is not a cairn command", cmd)
	}
	return f[1:]
}

// Join runs the doc's commands that add processes to the running cluster:
// the <!-- cluster:add --> commands, which write each new host's
// directory (cairn init --add-host), in the directory of cairn init; then
// each host gets a copy of its directory, as the doc's scp, and its
// commands (<!-- cluster:join HOST -->) run there. It returns their
// processes.
func (d *Documented) Join(t testing.TB) []*Proc {
	t.Helper()
	for _, c := range d.blocks.add {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		cmd := exec.CommandContext(ctx, Binary(t), docArgs(t, d.loopback, c)...)
		cmd.Dir = d.Dir
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s", d.loopback.Replace(c), err, out)
		}
	}
	var out []*Proc
	for _, h := range d.blocks.joinHosts {
		lh := d.loopback.Replace(h)
		dir := filepath.Join(d.Dir, "hosts", lh)
		if err := os.CopyFS(dir, os.DirFS(filepath.Join(d.initDir, lh))); err != nil {
			t.Fatalf("copying %s's files (the doc's cluster:add commands should make them): %v", h, err)
		}
		for _, c := range d.blocks.join[h] {
			p, err := proc.Start(t.Context(), proc.Config{Name: d.loopback.Replace(c), Bin: Binary(t), Args: docArgs(t, d.loopback, c), Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Kill)
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/running-a-cluster.md has no cluster:join commands")
	}
	return out
}
