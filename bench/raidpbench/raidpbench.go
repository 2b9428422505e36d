package raidpbench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"cairn"
	"cairn/client"
	"cairn/node"
	"cairn/raidp"
	"cairn/repair"
	"cairn/repair/raidprun"
)

// Meta is what a run needs of the metadata store (*etcd.Store and the
// mem store have it): the client's, the repairer's, and buckets and disk
// states.
type Meta interface {
	client.Meta
	repair.Store
	CreateBucket(ctx context.Context, b cairn.Bucket) error
	SetDiskState(ctx context.Context, id cairn.DiskID, st cairn.DiskState, since time.Time) error
}

// Cluster is what a run measures on.
type Cluster struct {
	Meta  Meta
	Nodes *node.Client // its connections counted by Net (NewCounter's HTTPClient)
	Net   *Counter     // nil: network bytes not counted
	Disks []cairn.DiskID
	// DiskIO returns the bytes each disk (by ID) and each Lstor (by ID
	// and "/lstor") read and wrote so far; nil: not counted.
	DiskIO func(ctx context.Context) (map[string]DiskIO, error)
}

// DiskIO is what one disk or Lstor read and wrote, in bytes.
type DiskIO struct{ Read, Written int64 }

// Counter counts the bytes through the connections it dialed, both ways.
type Counter struct{ n atomic.Int64 }

// Bytes returns the bytes counted so far.
func (c *Counter) Bytes() int64 { return c.n.Load() }

// HTTPClient returns an HTTP client whose connections c counts.
func (c *Counter) HTTPClient() *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &countedConn{Conn: conn, c: c}, nil
		},
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}}
}

type countedConn struct {
	net.Conn
	c *Counter
}

func (cc *countedConn) Read(p []byte) (int, error) {
	n, err := cc.Conn.Read(p)
	cc.c.n.Add(int64(n))
	return n, err
}

func (cc *countedConn) Write(p []byte) (int, error) {
	n, err := cc.Conn.Write(p)
	cc.c.n.Add(int64(n))
	return n, err
}

// Workload is the stream of objects written and read back: Count objects
// of Size bytes, their bytes drawn from Seed, Concurrency at a time.
type Workload struct {
	Count       int
	Size        int64
	Concurrency int
	Seed        uint64
}

func (w Workload) data(i int) []byte {
	b := make([]byte, w.Size)
	var seed [32]byte
	seed[0], seed[1], seed[2] = byte(i), byte(i>>8), byte(w.Seed)
	rand.NewChaCha8(seed).Read(b)
	return b
}

// Row is one measurement: a policy's write and read throughput (Part
// "write"), its critical exit ("exit") or a re-mirroring ("remirror",
// Policy "matching" or "naive").
type Row struct {
	Part, Policy string
	// Seconds is the writes' time, the critical exit or the
	// re-mirroring's; Bps the user bytes written per second (write).
	Seconds, Bps float64
	// ReadSeconds and ReadBps: the objects read back (write).
	ReadSeconds, ReadBps float64
	UserBytes            int64
	// Per user byte written (write): disk bytes read and written, network
	// bytes, and the Lstors' bytes apart; DiskWrittenPerByte is the
	// stored bytes alone.
	DiskPerByte, DiskWrittenPerByte, NetPerByte, LstorPerByte float64
	// AllSeconds (exit): until every lost piece is rebuilt, not only the
	// critical ones; ScanSeconds of it the repair scan took.
	AllSeconds, ScanSeconds float64
	// Critical (exit): stripes, blocks or superchunks with no redundancy
	// left when the disks failed; Bytes: the bytes rebuilt (exit,
	// remirror) or the objects' bytes (write).
	Critical int
	Bytes    int64
	// MaxPerReceiver (remirror): most superchunks one disk received.
	MaxPerReceiver int
	Failed         string // the failed disks (exit, remirror)
}

// Bucket is the bucket the writes of policy go to.
func Bucket(policy string) string { return "bench-" + strings.ReplaceAll(policy, "_", "-") }

// WriteRead writes w's objects under policy into a new bucket, then reads
// them back and checks every byte.
func WriteRead(ctx context.Context, cl Cluster, c *client.Client, policy string, w Workload) (Row, error) {
	bucket := Bucket(policy)
	if err := cl.Meta.CreateBucket(ctx, cairn.Bucket{Name: bucket, Policy: policy}); err != nil {
		return Row{}, fmt.Errorf("bucket for %s: %w", policy, err)
	}
	io0, err := diskIO(ctx, cl)
	if err != nil {
		return Row{}, err
	}
	net0 := cl.netBytes()
	start := time.Now()
	if err := each(ctx, w, func(ctx context.Context, i int) error {
		data := w.data(i)
		_, err := c.Put(ctx, bucket, strconv.Itoa(i), bytes.NewReader(data), client.PutOptions{Size: w.Size})
		return err
	}); err != nil {
		return Row{}, fmt.Errorf("%s: writing: %w", policy, err)
	}
	row := Row{Part: "write", Policy: policy, Seconds: time.Since(start).Seconds(), UserBytes: int64(w.Count) * w.Size}
	row.Bytes = row.UserBytes
	row.Bps = float64(row.UserBytes) / row.Seconds
	netN := cl.netBytes() - net0
	io1, err := diskIO(ctx, cl)
	if err != nil {
		return Row{}, err
	}
	var disk, written, lst int64
	for k, v := range io1 {
		d := v.Read + v.Written - io0[k].Read - io0[k].Written
		if strings.HasSuffix(k, "/lstor") {
			lst += d
			continue
		}
		disk += d
		written += v.Written - io0[k].Written
	}
	u := float64(row.UserBytes)
	row.DiskPerByte, row.DiskWrittenPerByte, row.NetPerByte, row.LstorPerByte = float64(disk)/u, float64(written)/u, float64(netN)/u, float64(lst)/u
	start = time.Now()
	if err := each(ctx, w, func(ctx context.Context, i int) error {
		_, rc, err := c.Get(ctx, bucket, strconv.Itoa(i), 0, -1)
		if err != nil {
			return err
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		if !bytes.Equal(got, w.data(i)) {
			return fmt.Errorf("object %d read back %d bytes that differ from the %d written", i, len(got), w.Size)
		}
		return nil
	}); err != nil {
		return Row{}, fmt.Errorf("%s: reading: %w", policy, err)
	}
	row.ReadSeconds = time.Since(start).Seconds()
	row.ReadBps = u / row.ReadSeconds
	return row, nil
}

// each runs f for every object of w, w.Concurrency at a time.
func each(ctx context.Context, w Workload, f func(context.Context, int) error) error {
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(max(1, w.Concurrency))
	for i := range w.Count {
		eg.Go(func() error { return f(ectx, i) })
	}
	return eg.Wait()
}

func (cl Cluster) netBytes() int64 {
	if cl.Net == nil {
		return 0
	}
	return cl.Net.Bytes()
}

func diskIO(ctx context.Context, cl Cluster) (map[string]DiskIO, error) {
	if cl.DiskIO == nil {
		return map[string]DiskIO{}, nil
	}
	return cl.DiskIO(ctx)
}

// SharedPair returns the first two disks of g (layout indexes, in order)
// that share a superchunk: the pair whose loss puts data in the critical
// state.
func SharedPair(g raidp.Group) (int, int, error) {
	for a := range g.Layout.Disks {
		for b := a + 1; b < g.Layout.Disks; b++ {
			if _, ok := g.Layout.Shared(a, b); ok && !slices.Contains(g.Out, a) && !slices.Contains(g.Out, b) {
				return a, b, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("%w: no two disks of RAIDP group %s share a superchunk", cairn.ErrInvalid, g.Name)
}

// groupDisks is every disk of g over the node protocol, by layout index.
func groupDisks(ctx context.Context, cl Cluster, g raidp.Group) map[int]raidprun.Disk {
	disks := map[int]raidprun.Disk{}
	for i, d := range g.Disks {
		if !slices.Contains(g.Out, i) {
			disks[i] = raidprun.Remote(ctx, cl.Nodes, cairn.DiskID(d.ID))
		}
	}
	return disks
}

// Parallel is the transfers or rebuild sides run at once, as
// client.RecoverRAIDP runs them.
const Parallel = raidprun.RecoveryParallel

// ExitRAIDP times raidp's critical exit after disks a and b of the group
// fail: their shared superchunk rebuilt from both Lstors and the mirrors
// of their other superchunks, half into each of two target disks
// (raidprun.Rebuild of the raidp.Dual plan); AllSeconds goes on to the end
// of the exchange of halves and the plan's two re-mirroring steps.
func ExitRAIDP(ctx context.Context, cl Cluster, c *client.Client, a, b int) (Row, error) {
	g, err := c.RAIDPGroup(ctx)
	if err != nil {
		return Row{}, err
	}
	plan, err := raidp.Dual(g.Layout, a, b, g.Size, [2]bool{true, true}, nil, g.Out...)
	if err != nil {
		return Row{}, err
	}
	if !plan.Shared {
		return Row{}, fmt.Errorf("%w: disks %d and %d share no superchunk: nothing is critical", cairn.ErrInvalid, a, b)
	}
	disks, cfg := groupDisks(ctx, cl, g), raidprun.Config{Size: g.Size, Parallel: Parallel}
	start := time.Now()
	if err := raidprun.Rebuild(ctx, plan, disks, cfg); err != nil {
		return Row{}, fmt.Errorf("rebuilding superchunk %d: %w", plan.Lost, err)
	}
	row := Row{Part: "exit", Policy: cairn.RAIDPPolicy, Seconds: time.Since(start).Seconds(), Critical: 1, Bytes: g.Size,
		Failed: g.Disks[a].ID + " " + g.Disks[b].ID}
	// Then a split rebuild's exchange of halves and the plan's two
	// re-mirroring steps, as raidprun.Dual runs them: every superchunk has
	// two replicas again.
	if err := raidprun.Remirror(ctx, raidp.Remirroring{Transfers: plan.Swap}, disks, cfg); err != nil {
		return Row{}, fmt.Errorf("exchanging the rebuilt halves: %w", err)
	}
	for _, t := range plan.Swap {
		row.Bytes += t.Len
	}
	for i, step := range plan.Remirror {
		if err := raidprun.Remirror(ctx, step, disks, cfg); err != nil {
			return Row{}, fmt.Errorf("re-mirroring step %d: %w", i+1, err)
		}
		row.Bytes += int64(len(step.Transfers)) * g.Size
	}
	row.AllSeconds = time.Since(start).Seconds()
	return row, nil
}

// ExitRepair times the critical exit of the objects of policy after the
// failed disks go down: the repair queue (repair.Repairer: Scan, then
// Work riskiest first, parallel stripes at a time) runs until no task
// with critical lost pieces (M of the code: 2 for rs-K-2 and rep-3) is
// left, and on until the queue is empty (AllSeconds), for at most limit.
func ExitRepair(ctx context.Context, cl Cluster, policy string, critical int, failed []cairn.DiskID, parallel int, limit time.Duration) (Row, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	row := Row{Part: "exit", Policy: policy, Failed: fmt.Sprint(failed)}
	start := time.Now()
	for _, d := range failed {
		if err := cl.Meta.SetDiskState(ctx, d, cairn.DiskDown, start); err != nil {
			return Row{}, err
		}
	}
	r := repair.New(cl.Meta, cl.Nodes, repair.Config{Parallel: parallel})
	if _, err := r.Scan(ctx, time.Now()); err != nil {
		return Row{}, fmt.Errorf("repair scan: %w", err)
	}
	row.ScanSeconds = time.Since(start).Seconds()
	var lastErr atomic.Value // a task's last recorded error, for a run that times out
	count := func(ctx context.Context) (crit, all int, err error) {
		after := ""
		for {
			ts, more, err := cl.Meta.RepairTaskPage(ctx, after, 1000)
			if err != nil {
				return 0, 0, err
			}
			for _, t := range ts {
				all++
				if len(t.Lost) >= critical {
					crit++
				}
				if t.LastError != "" {
					lastErr.Store(t.LastError)
				}
				after = t.ID
			}
			if !more || len(ts) == 0 {
				return crit, all, nil
			}
		}
	}
	crit, all, err := count(ctx)
	if err != nil {
		return Row{}, err
	}
	if all == 0 {
		return Row{}, fmt.Errorf("%s: the scan queued nothing after %v failed", policy, failed)
	}
	row.Critical = crit
	// A poller marks when the last critical task leaves the queue while
	// Work runs the rest.
	var exit atomic.Int64 // nanoseconds since start; 0: not yet
	if crit == 0 {
		exit.Store(int64(time.Since(start)))
	}
	pctx, stop := context.WithCancel(ctx)
	polled := make(chan error, 1)
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for exit.Load() == 0 {
			select {
			case <-pctx.Done():
				polled <- nil
				return
			case <-tick.C:
			}
			c, _, err := count(pctx)
			if err != nil && pctx.Err() == nil {
				polled <- err
				return
			}
			if err == nil && c == 0 {
				exit.Store(int64(time.Since(start)))
			}
		}
		polled <- nil
	}()
	var werr error
	for {
		if _, err := r.Work(ctx, time.Now()); err != nil {
			werr = err
			break
		}
		_, n, err := count(ctx)
		if err != nil {
			werr = err
			break
		}
		if n == 0 {
			break
		}
		select { // tasks that failed wait for their backoff
		case <-ctx.Done():
			werr = ctx.Err()
		case <-time.After(100 * time.Millisecond): // real time: the queue's backoff is in real time
		}
		if werr != nil {
			break
		}
	}
	row.AllSeconds = time.Since(start).Seconds()
	stop()
	if err := <-polled; err != nil && werr == nil {
		werr = err
	}
	if werr != nil {
		if e, ok := lastErr.Load().(string); ok {
			werr = fmt.Errorf("%w (a task's last error: %s)", werr, e)
		}
		return Row{}, fmt.Errorf("%s: repairing: %w", policy, werr)
	}
	if e := exit.Load(); e > 0 {
		row.Seconds = time.Duration(e).Seconds()
	} else {
		row.Seconds = row.AllSeconds
	}
	st := r.Stats()
	row.Bytes = st.Bytes
	if st.Failed > 0 {
		row.Failed += fmt.Sprintf(" (%d failed attempts retried)", st.Failed)
	}
	return row, nil
}

// Remirror times the re-mirroring of every superchunk of disk d of the
// group after it fails alone, with the matching (naive false) or the
// naive plan drawn from seed, then zeroes the copies it made: the group
// is left as it was.
func Remirror(ctx context.Context, cl Cluster, c *client.Client, d int, naive bool, seed uint64) (Row, error) {
	g, err := c.RAIDPGroup(ctx)
	if err != nil {
		return Row{}, err
	}
	var plan raidp.Remirroring
	name := "matching"
	if naive {
		name = "naive"
		plan, err = raidp.RemirrorNaive(g.Layout, []int{d}, rand.New(rand.NewPCG(seed, 0x7270)))
	} else {
		plan, err = raidp.Remirror(g.Layout, []int{d}, nil, g.Out...)
	}
	if err != nil {
		return Row{}, err
	}
	per := map[int]int{}
	row := Row{Part: "remirror", Policy: name, Failed: g.Disks[d].ID}
	for _, t := range plan.Transfers {
		per[t.To.Disk]++
		row.MaxPerReceiver = max(row.MaxPerReceiver, per[t.To.Disk])
		row.Bytes += g.Size
	}
	disks, cfg := groupDisks(ctx, cl, g), raidprun.Config{Size: g.Size, Parallel: Parallel}
	start := time.Now()
	if err := raidprun.Remirror(ctx, plan, disks, cfg); err != nil {
		return Row{}, fmt.Errorf("re-mirroring disk %d (%s): %w", d, name, err)
	}
	row.Seconds = time.Since(start).Seconds()
	// The plan is not committed: its receivers' slots are still free in
	// the layout. Zeroed (outside the timing), as a given-up plan's are,
	// their high-water marks drop, so a later part that writes there (the
	// dual rebuild's targets) takes the zero-region shortcut as on any
	// free slot instead of reading old data first.
	for _, t := range plan.Transfers {
		z := raidp.Step{Kind: raidp.StepZero, Superchunk: -1, To: t.To}
		if err := raidprun.RunStep(ctx, z, disks, cfg); err != nil {
			return Row{}, fmt.Errorf("undoing the re-mirroring of disk %d (%s): %w", d, name, err)
		}
	}
	return row, nil
}

// ScrapeDiskIO reads the disk byte counters (cairn_disk_read_bytes_total
// and cairn_disk_written_bytes_total, by disk) from the metrics endpoints
// at addrs and adds them up by disk.
func ScrapeDiskIO(ctx context.Context, hc *http.Client, addrs []string) (map[string]DiskIO, error) {
	out := map[string]DiskIO{}
	for _, a := range addrs {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a+"/metrics", nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		err = parseDiskIO(resp.Body, out)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("metrics of %s: %s", a, resp.Status)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseDiskIO adds the disk byte counters of a Prometheus text exposition
// to out.
func parseDiskIO(r io.Reader, out map[string]DiskIO) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var read bool
		switch {
		case strings.HasPrefix(line, "cairn_disk_read_bytes_total{"):
			read = true
		case strings.HasPrefix(line, "cairn_disk_written_bytes_total{"):
		default:
			continue
		}
		_, rest, _ := strings.Cut(line, `disk="`)
		disk, rest, ok := strings.Cut(rest, `"`)
		_, val, ok2 := strings.Cut(rest, "} ")
		if !ok || !ok2 {
			return fmt.Errorf("metrics line %q: no disk label or value", line)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return fmt.Errorf("metrics line %q: %w", line, err)
		}
		c := out[disk]
		if read {
			c.Read += int64(v)
		} else {
			c.Written += int64(v)
		}
		out[disk] = c
	}
	return sc.Err()
}

// Summary is the experiment's one-line result.
type Summary struct {
	// WriteVsRep3 and WriteVsRep2: raidp's write throughput over theirs.
	WriteVsRep3 float64 `json:"write_vs_rep3"`
	WriteVsRep2 float64 `json:"write_vs_rep2"`
	// CriticalExitSpeedupVsRS: rs-K-2's critical exit over raidp's.
	CriticalExitSpeedupVsRS float64 `json:"critical_exit_speedup_vs_rs"`
	// Per user byte raidp wrote: disk bytes stored, network bytes, and
	// the Lstors' bytes.
	StoragePerByte float64 `json:"storage_per_byte"`
	NetworkPerByte float64 `json:"network_per_byte"`
	LstorPerByte   float64 `json:"lstor_per_byte"`
	// MatchingOverNaive: the matching re-mirroring's time over the naive
	// one's (≤ 1: the matching is no slower).
	MatchingOverNaive float64  `json:"matching_over_naive"`
	Measured          []string `json:"measured"`
}

// Summarize computes the summary from the rows (0 where a side is
// missing).
func Summarize(rows []Row) Summary {
	var s Summary
	find := func(part, policy string) (Row, bool) {
		for _, r := range rows {
			if r.Part == part && (r.Policy == policy || policy == "rs" && strings.HasPrefix(r.Policy, "rs-")) {
				return r, true
			}
		}
		return Row{}, false
	}
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	for _, r := range rows {
		s.Measured = append(s.Measured, r.Part+":"+r.Policy)
	}
	rp, ok := find("write", cairn.RAIDPPolicy)
	if ok {
		s.StoragePerByte, s.NetworkPerByte, s.LstorPerByte = rp.DiskWrittenPerByte, rp.NetPerByte, rp.LstorPerByte
		if r3, ok := find("write", "rep-3"); ok {
			s.WriteVsRep3 = ratio(rp.Bps, r3.Bps)
		}
		if r2, ok := find("write", "rep-2"); ok {
			s.WriteVsRep2 = ratio(rp.Bps, r2.Bps)
		}
	}
	if ex, ok := find("exit", cairn.RAIDPPolicy); ok {
		if rs, ok := find("exit", "rs"); ok {
			s.CriticalExitSpeedupVsRS = ratio(rs.Seconds, ex.Seconds)
		}
	}
	if m, ok := find("remirror", "matching"); ok {
		if n, ok := find("remirror", "naive"); ok {
			s.MatchingOverNaive = ratio(m.Seconds, n.Seconds)
		}
	}
	return s
}

// NaiveCrowding is the share of the naive plans drawn from seeds 1..draws
// for disk d's re-mirroring that give some receiver more than one
// superchunk (the matching never does): how often a measured naive run
// can be slower at all. Draws that leave a superchunk no receiver
// (raidp.ErrNoAssignment) are not plans and are not counted.
func NaiveCrowding(g raidp.Group, d, draws int) (float64, error) {
	crowded, planned := 0, 0
	for s := 1; s <= draws; s++ {
		plan, err := raidp.RemirrorNaive(g.Layout, []int{d}, rand.New(rand.NewPCG(uint64(s), 0x7270)))
		if errors.Is(err, raidp.ErrNoAssignment) {
			continue // the draw left a superchunk no receiver: not a plan
		}
		if err != nil {
			return 0, err
		}
		planned++
		per := map[int]int{}
		for _, t := range plan.Transfers {
			per[t.To.Disk]++
			if per[t.To.Disk] == 2 {
				crowded++
				break
			}
		}
	}
	if planned == 0 {
		return 0, fmt.Errorf("%w: no naive draw of %d re-mirrors disk %d", raidp.ErrNoAssignment, draws, d)
	}
	return float64(crowded) / float64(planned), nil
}
