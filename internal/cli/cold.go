package cli

// The COLD storage class (docs/design/cold.md): the x-amz-storage-class
// that maps to a cold-tier policy on the gateway, and the director's
// export job that moves staged objects into the cold groups.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"cairn"
	"cairn/cold"
	"cairn/director"
	"cairn/layout/gp"
)

// ColdClass is the storage class name of the cold tier.
const ColdClass = "COLD"

// ColdAlias is another name of ColdClass on writes, for clients that
// accept only AWS's class names (the aws CLI's s3 commands refuse COLD):
// Glacier Instant Retrieval is AWS's cold class whose objects read at
// once, as cairn's do. Objects report ColdClass; lifecycle transitions
// name ColdClass.
const ColdAlias = "GLACIER_IR"

// coldFlags configure the COLD class and the export job.
type coldFlags struct {
	policy *string
	every  *time.Duration
	groups *int
}

// addColdFlags adds --cold-policy (default def: "auto" picks one that fits
// the disks, "" none), --cold-every and --cold-groups.
func addColdFlags(fs *flag.FlagSet, def string) *coldFlags {
	return &coldFlags{
		policy: fs.String("cold-policy", def,
			`policy of the COLD storage class (also named GLACIER_IR, for the aws CLI), clay-K-M-D/gp=S0:Q[:MAX] (docs/design/cold.md); "auto": clay-4-2-5/gp=1MiB:2 with 6 disks or more, clay-2-2-3/gp=1MiB:2 with 4 or 5, none below; "": no COLD class`),
		every: fs.Duration("cold-every", time.Minute,
			"director: how often the export job moves objects staged for the COLD class into the cold tier"),
		groups: fs.Int("cold-groups", 4,
			"director: the number of cold placement groups objects are spread over"),
	}
}

// resolve returns the COLD class's policy for a cluster of disks disks
// ("" = no class). An explicit policy is checked.
func (f *coldFlags) resolve(disks int) (string, error) {
	p := *f.policy
	if p == "auto" {
		switch {
		case disks >= 6:
			p = "clay-4-2-5/gp=1MiB:2"
		case disks >= 4:
			p = "clay-2-2-3/gp=1MiB:2"
		default:
			return "", nil
		}
	}
	if p == "" {
		return "", nil
	}
	if *f.every <= 0 || *f.groups < 1 {
		return "", fmt.Errorf("%w: --cold-every must be positive and --cold-groups at least 1", ErrUsage)
	}
	pol, err := gp.ParsePolicy(p)
	if err != nil {
		return "", fmt.Errorf("%w: --cold-policy: %v", ErrUsage, err)
	}
	return pol.String(), nil
}

// coldClasses returns the gateway's storage classes: storageClasses (S3's
// defaults and WARM), and COLD with its alias GLACIER_IR if policy is set.
// An object of the cold policy reports COLD (the gateway names a policy
// by its first class in name order).
func coldClasses(policy string) map[string]string {
	c := storageClasses()
	if policy != "" {
		c[ColdClass], c[ColdAlias] = policy, policy
	}
	return c
}

// coldDuty is the director's export job for policy.
func coldDuty(cl *cluster, policy string, every time.Duration, groups int, log *slog.Logger) (director.Duty, error) {
	p, err := gp.ParsePolicy(policy)
	if err != nil {
		return director.Duty{}, err
	}
	ex := cold.NewExporter(cold.ExporterConfig{
		Meta: cl.meta, Nodes: cl.nodes, Policy: p, Groups: groups,
		GroupDisks: func(ctx context.Context, n int) ([]cairn.DiskID, error) { return cl.data.ColdGroupDisks(ctx, p, n) },
		Fetch: func(ctx context.Context, m *cairn.Manifest, off, n int64, w io.Writer) error {
			rc, err := cl.data.OpenStored(ctx, m, off, n)
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.Copy(w, rc)
			return err
		},
		Log: log,
	})
	return director.Duty{Name: "export staged objects to the cold tier", Every: every, Background: true,
		Run: func(ctx context.Context, now time.Time) error {
			st, err := ex.Run(ctx)
			if st.Exported+st.Lost+st.Released+st.Recovered > 0 {
				log.Info("cold export", "exported", st.Exported, "bytes", st.Bytes, "lost_to_writes", st.Lost,
					"released", st.Released, "recovered", st.Recovered)
			}
			return err
		}}, nil
}

// coldSummary is the status line of the cold export job.
func coldSummary(ctx context.Context, st cold.StateReader, now time.Time) string {
	p, err := cold.ReadProgress(ctx, st)
	switch {
	case err != nil:
		return "export progress unreadable: " + err.Error()
	case p.Passes == 0:
		return "no export has run"
	}
	s := fmt.Sprintf("%d objects (%s) exported, %d staged in the last pass %s ago; %d copies lost to newer writes, %d freed, %d interrupted exports recovered, %d lost disks rebuilt",
		p.Exported, fmtBytes(p.Bytes), p.Staged, now.Sub(p.Last).Round(time.Second), p.Lost, p.Released, p.Recovered, p.Rebuilt)
	if p.Blocked > 0 {
		s += fmt.Sprintf("; %d objects wait for a group whose disk is not writable", p.Blocked)
	}
	if p.LastError != "" {
		s += "; last pass failed: " + p.LastError
	}
	return s
}

// printCold prints where an exported object lives: its group's disks, the
// data disk holding its pieces, and each piece's bucket file and slot.
func printCold(ctx context.Context, w io.Writer, cl *cluster, m *cairn.Manifest) error {
	st, err := cold.LoadState(ctx, cl.meta, m.Cold.Group, cl.nodes)
	if err != nil {
		return fmt.Errorf("cold group of %s/%s: %w", m.Bucket, m.Key, err)
	}
	r, err := gp.DecodeRecord(m.Cold.Record, st.PG.Geo)
	if err != nil {
		return fmt.Errorf("%w: %s/%s: %v", cairn.ErrCorrupt, m.Bucket, m.Key, err)
	}
	locs, err := st.PG.Pieces(r)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "cold     group %s (%d data + %d parity disks: %v)\n", st.ID, st.PG.K, st.PG.M, st.Disks)
	fmt.Fprintf(w, "         on data disk %d (%s), %d pieces, %d-byte index record\n", r.Disk, st.Disks[r.Disk], len(locs), len(m.Cold.Record))
	for i, l := range locs {
		where := fmt.Sprintf("slot %d", l.Offset/l.Length)
		if l.File == gp.SmallFile {
			where = fmt.Sprintf("front at %d", l.Offset)
		}
		fmt.Fprintf(w, "  %2d  %-14s  %-16s  %9d bytes  crc32c %08x\n", i, l.File, where, l.Length, r.Sums[i])
	}
	return nil
}
