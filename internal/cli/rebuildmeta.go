package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"cairn"
	"cairn/codec/all"
	"cairn/internal/cmdline"
)

// RebuildReport is what `cairn admin rebuild-meta --json` prints.
type RebuildReport struct {
	DryRun bool `json:"dry_run,omitempty"`
	Disks  int  `json:"disks"`  // disks listed
	Files  int  `json:"files"`  // shard files found on them
	NoID   int  `json:"no_id"`  // of which without an identity (format 1: not rebuildable)
	Failed int  `json:"failed"` // of which unreadable (damaged footer or identity)
	// Objects were committed (or, with --dry-run, would be), Present
	// already had a manifest (left alone), Buckets were created.
	Objects []string `json:"objects"`
	Present []string `json:"present,omitempty"`
	Buckets []string `json:"buckets,omitempty"`
	// Skipped explains every version left out, and every object that did
	// not read back.
	Skipped []string `json:"skipped,omitempty"`
}

// rebuildPage is how many shards one listing with identities asks for.
const rebuildPage = 1000

func runAdminRebuildMeta(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cairn admin rebuild-meta", flag.ContinueOnError)
	dry := fs.Bool("dry-run", false, "read the disks and the objects back, commit nothing")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	cmdline.Usage(fs, "cairn admin rebuild-meta [--dry-run] [--json]",
		`Disaster recovery: rebuilds the manifests of the objects whose metadata was
lost from the identities their shard files record (docs/design/rebuild-meta.md).
Every node must be running and registered with the (new, empty) metadata store.
Each object found is read back whole (which checks that it decodes and gives
its ETag) and committed unless the store already has the key. Buckets that do
not exist are created with the policy of their objects. Not recovered: objects
written before shard identities, encrypted objects, user metadata, bucket
owners; an object deleted or overwritten within the cleanup grace may come back
in its old version.`)
	return withCluster(ctx, fs, args, stdout, stderr, 0, func(ctx context.Context, cl *cluster, _ []string) error {
		rep, err := rebuildMeta(ctx, cl, *dry)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, rep)
		}
		verb := "rebuilt"
		if *dry {
			verb = "would rebuild (dry run)"
		}
		fmt.Fprintf(stdout, "%d shard files on %d disks (%d without identity, %d unreadable)\n", rep.Files, rep.Disks, rep.NoID, rep.Failed)
		fmt.Fprintf(stdout, "%s %d objects; %d already present; buckets created: %v\n", verb, len(rep.Objects), len(rep.Present), rep.Buckets)
		for i, s := range rep.Skipped {
			if i == 20 {
				fmt.Fprintf(stdout, "  … and %d more (--json lists them)\n", len(rep.Skipped)-i)
				break
			}
			fmt.Fprintf(stdout, "  skipped %s\n", s)
		}
		return nil
	})
}

// rebuildMeta lists every disk's shards with their identities, rebuilds
// the manifests (cairn.RebuildManifests), reads each object back and
// commits it unless dry.
func rebuildMeta(ctx context.Context, cl *cluster, dry bool) (RebuildReport, error) {
	rep := RebuildReport{DryRun: dry}
	disks, err := cl.meta.Disks(ctx)
	if err != nil {
		return rep, err
	}
	if len(disks) == 0 {
		return rep, fmt.Errorf("%w: no disk is registered with the metadata store: start the nodes first", cairn.ErrUnavailable)
	}
	var found []cairn.FoundShard
	for _, d := range disks {
		rep.Disks++
		after := ""
		for {
			page, more, err := cl.nodes.ListIdentities(ctx, d.ID, after, rebuildPage)
			if err != nil {
				return rep, fmt.Errorf("listing disk %s: %w", d.ID, err)
			}
			for _, st := range page {
				rep.Files++
				switch {
				case st.Error != "":
					rep.Failed++
				case st.Identity == nil:
					rep.NoID++
				default:
					found = append(found, cairn.FoundShard{Disk: d.ID, ID: *st.Identity, Size: st.Size, CRC: st.CRC,
						Ident: st.Ident, Written: st.Written})
				}
				after = st.Name
			}
			if !more || len(page) == 0 {
				break
			}
		}
	}
	r := cairn.RebuildManifests(found, func(code string) (int, error) {
		c, err := all.New(code)
		if err != nil {
			return 0, err
		}
		return c.Params().N(), nil
	})
	rep.Skipped = r.Skipped
	policies := map[string]map[string]int{} // bucket → policy → objects
	for _, m := range r.Manifests {
		if policies[m.Bucket] == nil {
			policies[m.Bucket] = map[string]int{}
		}
		policies[m.Bucket][m.Policy]++
	}
	for _, b := range slices.Sorted(func(yield func(string) bool) {
		for b := range policies {
			if !yield(b) {
				return
			}
		}
	}) {
		_, err := cl.meta.Bucket(ctx, b)
		if err == nil {
			continue
		} else if !errors.Is(err, cairn.ErrNotFound) {
			return rep, err
		}
		policy, most := "", 0
		for p, n := range policies[b] {
			if n > most || n == most && p < policy {
				policy, most = p, n
			}
		}
		rep.Buckets = append(rep.Buckets, b)
		if !dry {
			if err := cl.meta.CreateBucket(ctx, cairn.Bucket{Name: b, Policy: policy, Created: time.Now().UTC()}); err != nil {
				return rep, fmt.Errorf("creating bucket %s: %w", b, err)
			}
		}
	}
	for _, m := range r.Manifests {
		name := m.Bucket + "/" + m.Key
		if _, err := cl.meta.Manifest(ctx, m.Bucket, m.Key); err == nil {
			rep.Present = append(rep.Present, name)
			continue
		} else if !errors.Is(err, cairn.ErrNotFound) {
			return rep, err
		}
		if err := cl.data.FillETags(ctx, m); err != nil {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s version %s: does not read back: %v", name, m.Version, err))
			continue
		}
		if !dry {
			err := cl.meta.CommitManifest(ctx, m, "")
			if errors.Is(err, cairn.ErrConflict) {
				rep.Present = append(rep.Present, name) // committed meanwhile
				continue
			} else if err != nil {
				return rep, fmt.Errorf("committing %s: %w", name, err)
			}
		}
		rep.Objects = append(rep.Objects, name)
	}
	return rep, nil
}
