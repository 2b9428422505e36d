package cli

// cairn admin disk out|in|drain: the operator's side of the disk life
// cycle (docs/design/disks.md). director.Operate decides whether a
// command applies to the disk as it is; the change is a compare-and-swap
// on the disk's state, so it never overwrites a transition the director
// made in between.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"cairn"
	"cairn/codec"
	"cairn/codec/all"
	"cairn/director"
	"cairn/internal/cmdline"
	"cairn/meta"
	"cairn/repair"
	"cairn/repair/decide"
)

func runAdminDisk(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cmdline.Dispatch(ctx, "cairn admin disk", `Take a disk out of service, drain it, or bring it back.

A disk's state is up, suspect, down, draining or out ('cairn admin status'
shows each with its reason and since when). The director moves disks
between up, suspect and down by itself: a disk whose node stops renewing
its lease or reports a fault is suspect, and down after --grace; a down
disk whose node returns with the same volume, checked, is up again; a
disk whose directory was wiped and formatted again (a new volume ID) is
down until repair has rebuilt elsewhere every shard it held, then up,
empty. These commands are for what only an operator knows.`, []cmdline.Command{
		{Name: "out", Summary: "take a disk out for good: its shards are rebuilt elsewhere", Run: runDiskOut},
		{Name: "drain", Summary: "empty a disk: read, not written, its shards moved off, then out", Run: runDiskDrain},
		{Name: "in", Summary: "bring an out or draining disk back into service", Run: runDiskIn},
	}, args, stdout, stderr)
}

func runDiskOut(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin disk out", flag.ContinueOnError)
	cmdline.Usage(fs, "cairn admin disk out DISK", `Takes DISK (e.g. node1/disk3, as 'cairn admin status' lists it) out for
good: from now on its shards count as lost, nothing reads or writes it, and
repair rebuilds every shard it held onto other disks ('cairn admin repair
status' shows the progress). Use it for a disk that is failing or gone and
will not come back; to empty a working disk without losing redundancy
meanwhile, use 'cairn admin disk drain'.

It refuses when some object could not be rebuilt without the disk — fewer
of its other shards are on usable disks than its code needs — and names
such an object: bring their other disks back first.

'cairn admin disk in DISK' reverses it.`)
	return withCluster(ctx, fs, args, stdout, stderr, 1, func(ctx context.Context, cl *cluster, args []string) error {
		return diskCommand(ctx, cl.meta, director.OpOut, args[0], time.Now(), stdout)
	})
}

func runDiskDrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin disk drain", flag.ContinueOnError)
	cmdline.Usage(fs, "cairn admin disk drain DISK", fmt.Sprintf(`Drains DISK (e.g. node1/disk3): it is still read but no longer written,
and the director's repair moves its shards onto other disks — each one
rebuilt from the other shards of its stripe, so the objects keep their full
redundancy throughout. When no shard is left on it the disk becomes out
and can be removed.

The drain is bounded: at most %d moves are queued at a time, they run
only after every stripe that lost redundancy, --repair-parallel at once,
at most the director's --move-rate bytes per second, and each node
computes at most its --repair-rate. To drain a whole node at a rate of
your choice: 'cairn admin node drain NODE --rate BYTES'.

Only an up disk can be drained. 'cairn admin disk in DISK' stops a drain.`, repair.MaxMoves))
	return withCluster(ctx, fs, args, stdout, stderr, 1, func(ctx context.Context, cl *cluster, args []string) error {
		return diskCommand(ctx, cl.meta, director.OpDrain, args[0], time.Now(), stdout)
	})
}

func runDiskIn(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin disk in", flag.ContinueOnError)
	cmdline.Usage(fs, "cairn admin disk in DISK", `Brings DISK (e.g. node1/disk3) back into service:

  draining  the drain stops; the disk is up again
  out       up again if its node is alive, reports no fault, and serves
            the same volume as before, checked (the node checks every
            volume it opens); the shards still on it are read again.
            If the directory holds a new volume (the disk was replaced
            while out), the disk goes down until repair has rebuilt every
            shard the old one held, then up, empty.

A down disk needs no command: it returns by itself once its node is alive
and its volume checked, or, replaced, once nothing is left on its old
volume. The error says what it waits for.`)
	return withCluster(ctx, fs, args, stdout, stderr, 1, func(ctx context.Context, cl *cluster, args []string) error {
		return diskCommand(ctx, cl.meta, director.OpIn, args[0], time.Now(), stdout)
	})
}

// diskStore is what the disk commands use of the metadata store.
type diskStore interface {
	Disks(ctx context.Context) ([]cairn.Disk, error)
	Nodes(ctx context.Context) ([]cairn.Node, error)
	Alive(ctx context.Context) ([]string, error)
	Buckets(ctx context.Context) ([]cairn.Bucket, error)
	ListManifests(ctx context.Context, bucket, prefix, startAfter string, limit int) ([]*cairn.Manifest, bool, error)
	ListVersionManifests(ctx context.Context, bucket, afterKey, afterVersion string, limit int) ([]*cairn.Manifest, bool, error)
	// UploadPage and PartPage: the parts of uploads in progress are
	// stripes repair rebuilds too (docs/design/repair.md).
	UploadPage(ctx context.Context, bucket, after string, limit int) ([]cairn.Upload, bool, error)
	PartPage(ctx context.Context, bucket, id string, after, limit int) ([]cairn.Part, bool, error)
	ChangeDisk(ctx context.Context, id cairn.DiskID, c cairn.DiskChange) (cairn.Disk, error)
}

// diskCommand runs op on disk id at time now and says what it did.
func diskCommand(ctx context.Context, st diskStore, op director.Op, id string, now time.Time, out io.Writer) error {
	disks, err := st.Disks(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(disks, func(d cairn.Disk) bool { return string(d.ID) == id })
	if i < 0 {
		var ids []string
		for _, d := range disks {
			ids = append(ids, string(d.ID))
		}
		return fmt.Errorf("%w: no disk %q in the cluster map (disks: %s)", ErrUsage, id, strings.Join(ids, ", "))
	}
	d := disks[i]
	alive, err := st.Alive(ctx)
	if err != nil {
		return err
	}
	tr, err := director.Operate(op, d, slices.Contains(alive, string(d.Node)))
	if err != nil {
		return err
	}
	var on diskShards
	if op == director.OpOut || op == director.OpDrain {
		nodes, err := st.Nodes(ctx)
		if err != nil {
			return err
		}
		if on, err = shardsOn(ctx, st, decide.NewView(nodes, disks), d.ID); err != nil {
			return err
		}
		if op == director.OpOut && on.lost > 0 {
			return fmt.Errorf("%w: taking disk %s out would lose data: %d stripe(s) could not be rebuilt without it, e.g. %s; bring their other disks back first",
				cairn.ErrInvalid, d.ID, on.lost, on.example)
		}
	}
	if _, err := st.ChangeDisk(ctx, d.ID, tr.Change(now)); err != nil {
		if errors.Is(err, cairn.ErrConflict) {
			return fmt.Errorf("disk %s changed state meanwhile; look again ('cairn admin status'): %w", d.ID, err)
		}
		return err
	}
	fmt.Fprintf(out, "disk %s: %s → %s: %s\n", d.ID, tr.From, tr.To, tr.Why)
	switch op {
	case director.OpOut:
		fmt.Fprintf(out, "%d shards on it are rebuilt elsewhere ('cairn admin repair status')\n", on.shards)
		if on.coded > 0 {
			fmt.Fprintf(out, "%d coded blocks of lt objects on it are not rebuilt (lt objects are not repaired); their objects still decode\n", on.coded)
		}
	case director.OpDrain:
		fmt.Fprintf(out, "%d shards on it are moved off, at most %d at a time, after every stripe that lost redundancy; it becomes out when empty\n",
			on.shards, repair.MaxMoves)
	}
	return nil
}

// diskShards is what the manifests and the uploads in progress keep on
// one disk.
type diskShards struct {
	shards  int    // shards of stripes (rebuilt by repair)
	coded   int    // coded blocks of lt objects
	lost    int    // stripes or coded stripes that cannot be rebuilt or decoded without the disk
	example string // one of them
}

// shardsOn walks every manifest and every part of the uploads in progress
// and counts what they keep on disk, and the stripes that could not be
// rebuilt without it: fewer of their other shards (blocks, for lt) on
// usable disks of v than the code needs.
func shardsOn(ctx context.Context, st diskStore, v *decide.View, disk cairn.DiskID) (diskShards, error) {
	return shardsOnAny(ctx, st, v, map[cairn.DiskID]bool{disk: true})
}

// shardsOnAny is shardsOn for a set of disks (a node's): what the
// manifests keep on any of them, and the stripes that could not be
// rebuilt without all of them.
func shardsOnAny(ctx context.Context, st diskStore, v *decide.View, disks map[cairn.DiskID]bool) (diskShards, error) {
	var out diskShards
	count := func(m *cairn.Manifest) error {
		if m.RAIDP != nil || m.Cold != nil {
			// No shards: its bytes are the RAIDP group's, which the
			// director's raidp recovery looks after, or the cold group's,
			// whose lost disk the cold export job rebuilds onto a spare.
			return nil
		}
		code, err := all.New(m.LayoutCode())
		if err != nil {
			return fmt.Errorf("%s/%s: %w", m.Bucket, m.Key, err)
		}
		for _, s := range decide.Stripes(m) {
			on := 0
			for _, l := range s.Shards {
				if disks[l.Disk] {
					on++
				}
			}
			if on == 0 {
				continue
			}
			out.shards += on
			if !canRebuildWithout(code, s, v, disks) {
				out.lost++
				out.example = fmt.Sprintf("%s/%s part %d (%s)", m.Bucket, m.Key, s.Part, m.LayoutCode())
				if m.IsOpenPart() {
					out.example = fmt.Sprintf("%s/%s part %d of upload %s in progress (%s)", m.Bucket, m.Key, s.Part, m.Upload, m.LayoutCode())
				}
			}
		}
		for _, cs := range codedStripes(m) {
			on, usable := 0, 0
			for _, b := range cs.Blocks {
				switch {
				case disks[b.Disk]:
					on++
				case v.Usable(b.Disk):
					usable++
				}
			}
			out.coded += on
			if on > 0 && usable < code.Params().K {
				out.lost++
				out.example = fmt.Sprintf("%s/%s (%s: %d blocks left, %d needed)", m.Bucket, m.Key, m.Policy, usable, code.Params().K)
			}
		}
		return nil
	}
	// The uploads first, as repair's census: a completion moves parts to
	// the object atomically, so none is missed meanwhile.
	err := meta.EachUpload(ctx, st, "", func(u cairn.Upload) error {
		err := meta.EachPart(ctx, st, u.Bucket, u.ID, func(p cairn.Part) error { return count(u.OpenPart(p)) })
		if errors.Is(err, cairn.ErrNotFound) {
			return nil // completed or aborted meanwhile
		}
		return err
	})
	if err != nil {
		return out, err
	}
	return out, eachManifest(ctx, st, count)
}

// canRebuildWithout reports whether stripe s of code decodes from its
// shards on usable disks other than those in without.
func canRebuildWithout(code codec.Code, s decide.Stripe, v *decide.View, without map[cairn.DiskID]bool) bool {
	sc, err := decide.StripeCode(code, s)
	if err != nil {
		return false
	}
	present := make([]bool, sc.Params().N())
	for i, l := range s.Shards {
		if r := s.Row(i); !without[l.Disk] && v.Usable(l.Disk) && r < len(present) {
			present[r] = true
		}
	}
	return sc.CanReconstruct(present)
}

// codedStripes returns the coded stripes of m and of its parts.
func codedStripes(m *cairn.Manifest) []cairn.CodedStripe {
	out := slices.Clone(m.Coded)
	for _, p := range m.Parts {
		out = append(out, p.Coded...)
	}
	return out
}
