package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"cairn"
	"cairn/codec/all"
	"cairn/director"
	"cairn/internal/cmdline"
	"cairn/meta"
	etcdmeta "cairn/meta/etcd"
	"cairn/placement"
)

func runAdmin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cmdline.Dispatch(ctx, "cairn admin", "Inspect and operate the cluster.", []cmdline.Command{
		{Name: "status", Summary: "nodes, disks and their states, placement groups, capacity", Run: runAdminStatus},
		{Name: "repair", Summary: "the repair queue and repair-time predictions", Run: runAdminRepair},
		{Name: "disk", Summary: "take a disk out, drain it, or bring it back in", Run: runAdminDisk},
		{Name: "node", Summary: "drain a node, remove it, or readmit it", Run: runAdminNode},
		{Name: "scrub", Summary: "background verification of every shard: status, start, pause", Run: runAdminScrub},
		{Name: "rebuild-meta", Summary: "disaster recovery: rebuild lost manifests from the shards' identities on the disks", Run: runAdminRebuildMeta},
		{Name: "lifecycle", Summary: "the director's passes applying S3 lifecycle rules: status", Run: runAdminLifecycle},
		{Name: "gc", Summary: "orphan shard files (no manifest names them) found and removed: status", Run: runAdminGC},
		{Name: "du", Summary: "stored and logical bytes per bucket, code, node and disk", Run: runAdminDu},
		{Name: "keys", Summary: "rotate the SSE-S3 master keys and re-seal data keys", Run: runAdminKeys},
		{Name: "node-key", Summary: "a client config holding one role's node key instead of the cluster secret", Run: runAdminNodeKey},
		{Name: "user", Summary: "S3 users and keys, shared by every gateway: add, rm, list, set-policy, rotate, import", Run: runAdminUser},
		{Name: "backup", Summary: "write a consistent snapshot of the metadata store to a file", Run: runAdminBackup},
		{Name: "meta", Summary: "add or remove a member of the metadata cluster", Run: runAdminMeta},
		{Name: "restore", Summary: "rebuild a stopped metadata member from a backup (offline)", Run: runAdminRestore},
		{Name: "raidp", Summary: "RAIDP disks and Lstors: verify parity and replicas (offline)", Run: runAdminRaidp},
	}, args, stdout, stderr)
}

// Status is what `cairn admin status --json` prints.
type Status struct {
	Director  string         `json:"director,omitempty"`
	Nodes     []NodeStatus   `json:"nodes"`
	Disks     []cairn.Disk   `json:"disks"`
	PGTables  []PGStatus     `json:"pg_tables"`
	Capacity  int64          `json:"capacity"`
	Free      int64          `json:"free"`
	Buckets   int            `json:"buckets"`
	Warnings  []string       `json:"warnings,omitempty"`
	Repair    string         `json:"repair"`        // one line: the repair queue and its ETA
	Scrub     string         `json:"scrub"`         // one line: scrub's state and the damage pending (scrub.go)
	Balance   string         `json:"rebalance"`     // one line: the rebalancer's last round (nodeops.go)
	Cold      string         `json:"cold"`          // one line: the cold export job's progress (cold.go)
	Lifecycle string         `json:"lifecycle"`     // one line: the lifecycle runner's passes (lifecycle.go)
	Queued    int            `json:"repair_queued"` // stripes in the repair queue
	States    map[string]int `json:"disk_states"`
	// FileSystems hold the readable disks, one per node and file system;
	// Capacity and Free count each once.
	FileSystems []FSStatus   `json:"file_systems"`
	Usage       *StatusUsage `json:"usage,omitempty"` // du.go

	// Meta is the metadata cluster: its members, leader and quorum
	// (absent for a store that is not etcd).
	Meta *etcdmeta.Members `json:"meta,omitempty"`
}

// NodeStatus is one node in Status.
type NodeStatus struct {
	cairn.Node
	Alive bool `json:"alive"`
	Disks int  `json:"disks"`
	// State follows its disks' (director.NodeState): up, draining,
	// removed, degraded.
	State string `json:"state"`
}

// FSStatus is one file system of a node holding readable disks.
type FSStatus struct {
	Node     cairn.NodeID   `json:"node"`
	FS       string         `json:"fs,omitempty"` // cairn.Disk.FS; "" unknown (the disk is counted alone)
	Capacity int64          `json:"capacity"`
	Free     int64          `json:"free"`
	Disks    []cairn.DiskID `json:"disks"`
}

// fileSystems groups the readable disks by node and file system (a disk
// whose file system is unknown is one of its own). A file system's space
// is what the disk reporting the largest capacity reports: the disks on
// it report the same file system, and a disk whose usage could not be
// read reports zeros.
func fileSystems(disks []cairn.Disk) []FSStatus {
	var out []FSStatus
	at := map[[2]string]int{}
	for _, d := range disks {
		if !d.State.Readable() {
			continue
		}
		key := [2]string{string(d.Node), d.FS}
		if d.FS == "" {
			key[1] = "disk " + string(d.ID)
		}
		i, ok := at[key]
		if !ok {
			i = len(out)
			at[key] = i
			out = append(out, FSStatus{Node: d.Node, FS: d.FS})
		}
		f := &out[i]
		if d.Capacity > f.Capacity {
			f.Capacity, f.Free = d.Capacity, d.Free
		}
		f.Disks = append(f.Disks, d.ID)
	}
	return out
}

// PGStatus summarizes one placement-group table.
type PGStatus struct {
	Width         int  `json:"width"`
	PGs           int  `json:"pgs"`
	DistinctNodes bool `json:"distinct_nodes"`
	Epoch         int  `json:"epoch"` // recomputations as the cluster changed
	// Policies are the policies of this width in use (buckets' and the
	// default) and the node losses their stripes survive.
	Policies []PolicySurvival `json:"policies,omitempty"`
}

// PolicySurvival is what the stripes of one policy survive in one table
// (placement.NodeLosses).
type PolicySurvival struct {
	Policy        string `json:"policy"`
	AnyNodeLosses int    `json:"any_node_losses"` // every loss of this many nodes at once is survivable
	Survival      string `json:"survival"`        // the sentence, e.g. "rs-6-3 over 4 nodes (...): survives any 1 node loss, ..."
}

func runAdminStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	wait := fs.Duration("wait", 0, "wait up to this long (e.g. 5m) for the cluster to be healthy — every node alive, every disk up, nothing to repair — checking every 2 s; exit status 1 if it is not")
	cmdline.Usage(fs, "cairn admin status [--json] [--wait DURATION]", "Shows the cluster: nodes (alive or not), disks with their state, since when and why\n(docs/design/disks.md; 'cairn admin disk --help'), capacity, placement-group\ntables with the node losses each policy's stripes survive, the metadata\ncluster's members and leader, and warnings.\n\nWith --wait it first waits for the cluster to be healthy (after a disk loss:\nuntil repair has rebuilt what was lost and the disks are back up), then\nprints the status.")
	printed := false
	err := withCluster(ctx, fs, args, stdout, stderr, 0, func(ctx context.Context, cl *cluster, _ []string) error {
		if *wait < 0 {
			return fmt.Errorf("%w: --wait must not be negative", ErrUsage)
		}
		deadline := time.Now().Add(*wait)
		st, err := clusterStatus(ctx, cl)
		for err == nil && !st.Healthy() && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(2 * time.Second):
			}
			st, err = clusterStatus(ctx, cl)
		}
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(st); err != nil {
				return err
			}
		} else {
			printStatus(stdout, st)
		}
		printed = true
		if *wait > 0 && !st.Healthy() {
			return fmt.Errorf("the cluster is not healthy after %v: %s", *wait, strings.Join(st.unhealthy(), "; "))
		}
		return nil
	})
	if err != nil && !printed && !errors.Is(err, ErrUsage) && !errors.Is(err, flag.ErrHelp) && ctx.Err() == nil {
		probeMeta(ctx, fs, *asJSON, stdout, err)
	}
	return err
}

// probeMeta shows the metadata members when status failed (err), most
// likely because the metadata cluster has lost its quorum and no store
// can be opened on it: the members that still run say who they are and
// who is missing (etcdmeta.ProbeMembers). It prints nothing if the
// members cannot be read either.
func probeMeta(ctx context.Context, fs *flag.FlagSet, asJSON bool, stdout io.Writer, err error) {
	path := fs.Lookup("config").Value.String()
	if path == "" {
		path = os.Getenv(configEnv)
	}
	cfg, cerr := loadClientConfig(path)
	if cerr != nil {
		return
	}
	mo, oerr := cfg.metaOptions()
	if oerr != nil {
		return
	}
	m, merr := etcdmeta.ProbeMembers(ctx, cfg.Meta, mo, metaStatusTimeout)
	if merr != nil {
		return
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			Error string            `json:"error"`
			Meta  *etcdmeta.Members `json:"meta"`
		}{err.Error(), &m})
		return
	}
	fmt.Fprintf(stdout, "the cluster status failed (%v); the metadata members that answer say:\n\n", err)
	printMeta(stdout, &m)
	fmt.Fprintln(stdout, "warnings:")
	for _, w := range m.Warnings {
		fmt.Fprintln(stdout, "  -", w)
	}
}

// Healthy reports whether every node is alive, every disk up and the
// repair queue empty — not counting removed nodes (cairn admin node
// remove) and their disks.
func (st *Status) Healthy() bool { return len(st.unhealthy()) == 0 }

// unhealthy says what keeps the cluster from being healthy.
func (st *Status) unhealthy() []string {
	var out []string
	removed := map[cairn.NodeID]bool{} // taken out by the operator: not missed
	for _, n := range st.Nodes {
		switch {
		case n.State == director.NodeRemoved:
			removed[n.ID] = true
		case !n.Alive:
			out = append(out, fmt.Sprintf("node %s is not alive", n.ID))
		}
	}
	for _, d := range st.Disks {
		if d.State != cairn.DiskUp && !removed[d.Node] {
			out = append(out, fmt.Sprintf("disk %s is %s", d.ID, d.State))
		}
	}
	if st.Meta != nil {
		for _, m := range st.Meta.Members {
			if !m.Up {
				out = append(out, fmt.Sprintf("metadata member %s is down", m.Name))
			}
		}
	}
	if st.Queued > 0 {
		out = append(out, fmt.Sprintf("%s to repair", plural(st.Queued, "stripe")))
	}
	return out
}

func clusterStatus(ctx context.Context, cl *cluster) (*Status, error) {
	nodes, err := cl.meta.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	disks, err := cl.meta.Disks(ctx)
	if err != nil {
		return nil, err
	}
	alive, err := cl.meta.Alive(ctx)
	if err != nil {
		return nil, err
	}
	buckets, err := cl.meta.Buckets(ctx)
	if err != nil {
		return nil, err
	}
	st := &Status{Disks: disks, Buckets: len(buckets), States: map[string]int{}}
	if id, err := cl.meta.Leader(ctx, director.Role); err == nil {
		st.Director = id
	}
	if mr, ok := cl.meta.(membersReader); ok {
		if m, err := mr.Members(ctx, metaStatusTimeout); err != nil {
			st.Warnings = append(st.Warnings, "the metadata members could not be read: "+err.Error())
		} else {
			st.Meta = &m
			st.Warnings = append(st.Warnings, m.Warnings...)
		}
	}
	st.Repair = "nothing to repair"
	st.Balance = rebalanceSummary(ctx, cl.meta, time.Now())
	st.Cold = coldSummary(ctx, cl.meta, time.Now())
	ts, err := meta.AllRepairTasks(ctx, cl.meta)
	if err != nil {
		return nil, err
	}
	st.Queued = len(ts)
	if len(ts) > 0 {
		var progress *cairn.RepairProgress
		if p, err := cl.meta.RepairProgress(ctx); err == nil {
			progress = &p
		}
		if q, err := judgeQueue(ctx, cl.meta, ts); err == nil {
			st.Repair = q.summary(progress, time.Now()) + " (cairn admin repair status)"
		} else {
			st.Repair = fmt.Sprintf("%s with lost shards (not judged: %v)", plural(len(ts), "stripe"), err)
		}
	}
	if st.Scrub, err = scrubSummary(ctx, cl, disks, time.Now()); err != nil {
		return nil, err
	}
	if p, err := cl.meta.LifecycleProgress(ctx); err == nil {
		st.Lifecycle = lifecycleSummary(p)
	}
	per := map[cairn.NodeID]int{}
	byNode := map[cairn.NodeID][]cairn.Disk{}
	for _, d := range disks {
		per[d.Node]++
		byNode[d.Node] = append(byNode[d.Node], d)
		st.States[string(d.State)]++
	}
	st.FileSystems = fileSystems(disks)
	for _, f := range st.FileSystems {
		st.Capacity += f.Capacity
		st.Free += f.Free
	}
	for _, n := range nodes {
		ns := NodeStatus{Node: n, Alive: slices.Contains(alive, string(n.ID)), Disks: per[n.ID], State: director.NodeState(byNode[n.ID])}
		st.Nodes = append(st.Nodes, ns)
		if !ns.Alive && ns.State != director.NodeRemoved {
			st.Warnings = append(st.Warnings, fmt.Sprintf("node %s is not alive (no liveness lease)", n.ID))
		}
	}
	policies := []string{DefaultPolicy}
	for _, b := range buckets {
		if b.Policy != "" && !slices.Contains(policies, b.Policy) {
			policies = append(policies, b.Policy)
		}
	}
	nodeOf := make(map[cairn.DiskID]cairn.NodeID, len(disks))
	for _, d := range disks {
		nodeOf[d.ID] = d.Node
	}
	for w := 1; w <= 64; w++ { // tables exist only for the widths of policies in use
		t, err := cl.meta.PGTable(ctx, w)
		if err != nil {
			continue
		}
		ps, warn := tableSurvival(t, policies, nodeOf)
		st.PGTables = append(st.PGTables, PGStatus{Width: t.Width, PGs: len(t.PGs), DistinctNodes: t.DistinctNodes, Epoch: t.Epoch, Policies: ps})
		if len(nodes) > 1 { // one node: the warning below says it all
			st.Warnings = append(st.Warnings, warn...)
		}
	}
	if len(nodes) == 1 {
		st.Warnings = append(st.Warnings, "single node: the cluster cannot survive a node loss")
	}
	if st.Usage, err = statusUsage(ctx, cl); err != nil {
		return nil, err
	}
	for _, d := range disks {
		if d.State != cairn.DiskUp {
			w := fmt.Sprintf("disk %s is %s since %s", d.ID, d.State, fmtSince(d.Since))
			if d.Reason != "" {
				w += ": " + d.Reason
			}
			st.Warnings = append(st.Warnings, w)
		}
	}
	return st, nil
}

// tableSurvival says, for each of policies whose width is t's, how many
// node losses its stripes survive over t (placement.NodeLosses), and
// warns for each whose stripes put several shards on one node (they
// survive fewer node losses than the code could). A table no policy of
// which is known gets a warning if its PGs share nodes.
func tableSurvival(t cairn.PGTable, policies []string, nodeOf map[cairn.DiskID]cairn.NodeID) ([]PolicySurvival, []string) {
	var out []PolicySurvival
	var warn []string
	for _, p := range policies {
		code, err := all.New(p)
		if err != nil || code.Params().N() != t.Width {
			continue
		}
		stripes := make([][]cairn.NodeID, len(t.PGs))
		for i, pg := range t.PGs {
			for _, d := range placement.ArrangePG(pg, nodeOf, code.CanReconstruct) {
				stripes[i] = append(stripes[i], nodeOf[d])
			}
		}
		s := placement.NodeLosses(stripes, code.Params().M, code.CanReconstruct)
		msg := s.String(p)
		out = append(out, PolicySurvival{Policy: p, AnyNodeLosses: s.Any, Survival: msg})
		if s.MaxPerNode > 1 {
			warn = append(warn, msg)
		}
	}
	if len(out) == 0 && !t.DistinctNodes {
		warn = append(warn, fmt.Sprintf("placement groups of width %d put several shards of a stripe on one node; no bucket's policy has %d shards, so what a node loss costs depends on the objects' codes", t.Width, t.Width))
	}
	return out, warn
}

// membersReader is a metadata store that can show its cluster
// (*etcdmeta.Store).
type membersReader interface {
	Members(ctx context.Context, timeout time.Duration) (etcdmeta.Members, error)
}

// metaStatusTimeout bounds each question status asks a metadata member.
const metaStatusTimeout = 3 * time.Second

func printStatus(w io.Writer, st *Status) {
	fmt.Fprintf(w, "director: %s\ncapacity: %s, %s free (%s); %d buckets\nrepair: %s\nscrub: %s\nrebalance: %s\ncold: %s\nlifecycle: %s\n\n", orNone(st.Director),
		fmtBytes(st.Capacity), fmtBytes(st.Free), onFileSystems(st.FileSystems), st.Buckets, st.Repair, st.Scrub, st.Balance, st.Cold, orNone(st.Lifecycle))
	printMeta(w, st.Meta)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADDR\tALIVE\tSTATE\tDISKS")
	for _, n := range st.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%d\n", n.ID, n.Addr, n.Alive, n.State, n.Disks)
	}
	fmt.Fprintln(tw, "\nDISK\tNODE\tSTATE\tSINCE\tCAPACITY\tFREE\tPATH\tREASON")
	for _, d := range st.Disks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.Node, d.State, fmtSince(d.Since),
			fmtBytes(d.Capacity), fmtBytes(d.Free), d.Path, orDash(d.Reason))
	}
	tw.Flush()
	if len(st.PGTables) > 0 {
		fmt.Fprintln(w, "\nplacement groups:")
		for _, t := range st.PGTables {
			fmt.Fprintf(w, "  width %d: %d PGs, distinct nodes: %v, recomputed %d times\n", t.Width, t.PGs, t.DistinctNodes, t.Epoch)
			for _, p := range t.Policies {
				fmt.Fprintf(w, "    %s\n", p.Survival)
			}
		}
	}
	printSharedFS(w, st.FileSystems)
	printStatusUsage(w, st.Usage)
	if len(st.Warnings) > 0 {
		fmt.Fprintln(w, "\nwarnings:")
		for _, s := range st.Warnings {
			fmt.Fprintln(w, "  -", s)
		}
	}
}

// printMeta prints the metadata cluster: a summary line and a table of
// its members.
func printMeta(w io.Writer, m *etcdmeta.Members) {
	if m == nil {
		return
	}
	fmt.Fprintf(w, "metadata: %s, %d up, quorum %d, leader %s", plural(m.Voters, "member"), m.Up, m.Quorum, orNone(m.Leader))
	if len(m.Alarms) > 0 {
		fmt.Fprintf(w, ", alarms: %s", strings.Join(m.Alarms, ", "))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tID\tUP\tROLE\tTERM\tINDEX\tLAG\tDB\tIN USE\tENDPOINT")
	for _, x := range m.Members {
		role := "follower"
		switch {
		case x.Learner:
			role = "learner"
		case x.Leader:
			role = "leader"
		case !x.Up:
			role = "-"
		}
		if !x.Up {
			fmt.Fprintf(tw, "%s\t%s\tfalse\t%s\t-\t-\t-\t-\t-\t%s\n", x.Name, x.ID, role, orDash(strings.Join(x.ClientURLs, ",")))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\ttrue\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", x.Name, x.ID, role, x.RaftTerm, x.RaftIndex, x.Lag,
			fmtBytes(x.DBSize), fmtBytes(x.DBInUse), x.Endpoint)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// onFileSystems says how many readable disks the capacity counts on how
// many file systems: "8 disks on 1 file system".
func onFileSystems(fss []FSStatus) string {
	n := 0
	for _, f := range fss {
		n += len(f.Disks)
	}
	return fmt.Sprintf("%s on %s", plural(n, "readable disk"), plural(len(fss), "file system"))
}

// printSharedFS lists the file systems that hold more than one disk.
func printSharedFS(w io.Writer, fss []FSStatus) {
	head := false
	for _, f := range fss {
		if len(f.Disks) < 2 {
			continue
		}
		if !head {
			fmt.Fprintln(w, "\ndisks sharing a file system (its space counted once):")
			head = true
		}
		ids := make([]string, len(f.Disks))
		for i, d := range f.Disks {
			ids[i] = string(d)
		}
		fmt.Fprintf(w, "  %s %s: %s, %s free: %s\n", f.Node, f.FS, fmtBytes(f.Capacity), fmtBytes(f.Free), strings.Join(ids, " "))
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// fmtSince formats a disk's Since time, UTC.
func fmtSince(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<40:
		return fmt.Sprintf("%.1f TiB", float64(n)/(1<<40))
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
