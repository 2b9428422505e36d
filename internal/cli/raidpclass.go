package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"cairn"
	"cairn/client"
	"cairn/codec/all"
	"cairn/meta"
	"cairn/node"
)

// storageClasses are the S3 storage classes a gateway maps to policies:
// s3's defaults, and WARM for the raidp policy (docs/design/raidp.md, "In
// the cluster").
func storageClasses() map[string]string {
	return map[string]string{"STANDARD": "", "REDUCED_REDUNDANCY": "rs-4-1", "WARM": cairn.RAIDPPolicy}
}

// checkPolicy accepts a code's policy (codec/all) or raidp, which is no
// code.
func checkPolicy(p string) error {
	if p == cairn.RAIDPPolicy {
		return nil
	}
	_, err := all.New(p)
	return err
}

// The raidp policy's data path runs over the node client and the
// metadata store.
var (
	_ client.RAIDPDisks = (*node.Client)(nil)
	_ client.RAIDPMeta  = meta.Store(nil)
)

// printRAIDP prints a raidp object's spans (cairn stat): the group, and
// per span its superchunk, bytes and both replicas.
func printRAIDP(w io.Writer, l *cairn.RAIDPLayout) {
	fmt.Fprintf(w, "group    %s (generation %d)\nspans:\n", l.Group, l.Generation)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  superchunk\toffset\tlength\treplica 1\treplica 2")
	for _, s := range l.Spans {
		fmt.Fprintf(tw, "  %d\t%d\t%d\t%s slot %d\t%s slot %d\n", s.Superchunk, s.Offset, s.Length, s.Disks[0], s.Slots[0], s.Disks[1], s.Slots[1])
	}
	tw.Flush()
}
