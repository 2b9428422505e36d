package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config describes a process to start.
type Config struct {
	// Name names the process in errors (default: its first argument).
	Name string
	// Bin is the program: a cairn binary, or cairn-bench.
	Bin string
	// Args are its arguments, e.g. NodeArgs(...).
	Args []string
	// Dir is its working directory (default: this process's).
	Dir string
	// Timeout bounds the wait for the ready line (default 1 minute).
	Timeout time.Duration
	// DiscardOutput drops what the process prints after its ready line
	// (long experiments); by default Output keeps all of it.
	DiscardOutput bool
}

// Proc is a started process. Restart must not run at the same time as any
// other method; the others may be called from any goroutine.
type Proc struct {
	cfg   Config
	cmd   *exec.Cmd
	out   *Output
	done  chan struct{} // closed when the process has exited
	ready Ready
}

// ErrNotReady is returned by Start and Restart for a process that exited,
// or did not print its ready line in time; the error includes its output.
var ErrNotReady = errors.New("process not ready")

// Start starts the process and waits for its ready line. On failure the
// process is killed. ctx bounds only the wait: the process runs until Kill.
func Start(ctx context.Context, cfg Config) (*Proc, error) {
	if cfg.Name == "" && len(cfg.Args) > 0 {
		cfg.Name = cfg.Args[0]
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Minute
	}
	p := &Proc{cfg: cfg}
	if err := p.start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Proc) start(ctx context.Context) error {
	p.out = &Output{ready: make(chan Ready, 1), discard: p.cfg.DiscardOutput}
	p.cmd = exec.Command(p.cfg.Bin, p.cfg.Args...)
	p.cmd.Dir = p.cfg.Dir
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = sysProcAttr()
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.cfg.Name, err)
	}
	done := make(chan struct{})
	p.done = done
	go func() { p.cmd.Wait(); close(done) }()
	t := time.NewTimer(p.cfg.Timeout)
	defer t.Stop()
	var why string
	select {
	case p.ready = <-p.out.ready:
		return nil
	case <-done:
		why = "exited before it was ready"
	case <-t.C:
		why = "not ready after " + p.cfg.Timeout.String()
	case <-ctx.Done():
		why = ctx.Err().Error()
	}
	p.Kill()
	return fmt.Errorf("%s: %w: %s:\n%s", p.cfg.Name, ErrNotReady, why, p.out.String())
}

// Restart kills the process if it runs and starts it again with the same
// arguments; its addresses are those of the new ready line.
func (p *Proc) Restart(ctx context.Context) error {
	p.Kill()
	return p.start(ctx)
}

// Name is the process's name (Config.Name).
func (p *Proc) Name() string { return p.cfg.Name }

// Args returns a copy of the process's arguments (Config.Args), e.g. to
// start it again with a flag appended (the last of a repeated flag wins).
func (p *Proc) Args() []string { return slices.Clone(p.cfg.Args) }

// Ready is the process's ready line.
func (p *Proc) Ready() Ready { return p.ready }

// Addr is the address its ready line gives under key (S3, Meta, Peer,
// Node); "" if none.
func (p *Proc) Addr(key string) string { return p.ready.Addrs[key] }

// Kill sends SIGKILL and waits for the process to exit. Idempotent.
func (p *Proc) Kill() {
	if !p.Alive() {
		return
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

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Freeze stops the process (SIGSTOP) and returns once every one of its
// threads is stopped. kill(2) returns when the signal is queued, not when
// it takes effect: the thread chosen to take it starts the group stop
// only when it next runs, and on a loaded machine the other threads can
// serve requests until then. A test that asserts "frozen" must wait.
func (p *Proc) Freeze() error {
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for !stopped(p.cmd.Process.Pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not stopped 10 s after SIGSTOP", p.Name())
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// Thaw lets a frozen process run again (SIGCONT).
func (p *Proc) Thaw() error { return p.cmd.Process.Signal(syscall.SIGCONT) }

// stopped reports whether every thread of pid is in state T (stopped) or
// t (traced); false if /proc cannot tell.
func stopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		if st := statState(b); st != 'T' && st != 't' {
			return false
		}
	}
	return true
}

// statState is the state letter of a /proc/…/stat line: the first field
// after the command name, which is in parentheses and may hold spaces.
func statState(stat []byte) byte {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}

// Output returns what the process printed so far, standard output and
// standard error interleaved (up to its ready line with DiscardOutput).
func (p *Proc) Output() string { return p.out.String() }

// CPU is the process's user+system CPU time so far (CPUTime).
func (p *Proc) CPU() time.Duration { return CPUTime(p.cmd.Process.Pid) }

// CPUTime is a process's user+system CPU time from /proc (0 where there is
// none, or once it has exited). Linux reports it in clock ticks of 1/100 s.
func CPUTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// NodeArgs are the arguments of `cairn node` with ID id on a loopback port
// the kernel picks, registering in the metadata store at meta, with the
// cluster secret in secretFile and one --disk per spec (the i-th is
// ID/disk<i>). Append more flags as needed.
func NodeArgs(id string, meta []string, secretFile string, disks []string) []string {
	args := []string{"node", "--id", id, "--meta", strings.Join(meta, ","), "--secret-file", secretFile,
		"--addr", "127.0.0.1:0"}
	for _, d := range disks {
		args = append(args, "--disk", d)
	}
	return args
}

// Output keeps what a process prints and watches it for the ready line.
// It is safe for concurrent use: exec.Cmd calls Write from one goroutine
// (Stdout and Stderr are the same writer), an in-process command (a test
// running cli.Run) from several, while String reads.
type Output struct {
	ready   chan Ready // gets the ready line once; buffered
	discard bool       // drop writes after the ready line

	mu    sync.Mutex
	buf   bytes.Buffer // guarded by mu
	line  []byte       // guarded by mu; the unfinished line before the ready line
	found bool         // guarded by mu
}

// NewOutput returns an empty Output that keeps everything written to it.
func NewOutput() *Output { return &Output{ready: make(chan Ready, 1)} }

// ReadyC returns the channel that receives the first ready line written.
func (o *Output) ReadyC() <-chan Ready { return o.ready }

// Write implements io.Writer.
func (o *Output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.found && o.discard {
		return len(b), nil
	}
	o.buf.Write(b)
	if o.found {
		return len(b), nil
	}
	o.line = append(o.line, b...)
	for {
		i := bytes.IndexByte(o.line, '\n')
		if i < 0 {
			break
		}
		l := string(o.line[:i])
		o.line = o.line[i+1:]
		if r, ok := ParseReady(l); ok {
			o.found, o.line = true, nil
			o.ready <- r
			break
		}
	}
	return len(b), nil
}

// String returns everything written so far (after the ready line, only
// if it keeps what follows it).
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}
