// Package raidpgroup is the write and read path of one RAIDP group
// (docs/design/raidp.md): objects are packed into the group's superchunks
// (raidp.Packer), each extent written to both replicas of its superchunk in
// parallel, every replica's disk updating its own Lstor parity; a Put is
// acknowledged only when both replicas and both parity updates are
// durable. Reads go to either replica.
//
// Terms:
//
//   - extent: a byte range of a superchunk (raidp.Extent); an object is a
//     list of extents, which the caller keeps (in the real system, in the
//     object's manifest).
//   - Disk: what the group needs of one disk — slot reads, journaled
//     writes and deletes with parity (node/lstor.Store has this shape; a
//     remote disk would implement it over the node protocol).
//
// Usage sketch:
//
//	g, _ := raidpgroup.New(layout, size, disks)
//	ext, err := g.Put(ctx, data)   // durable on both replicas when nil
//	err = g.Get(ctx, ext, buf)
//	err = g.Delete(ctx, ext)       // lazy or online, as each disk is set
//	g.SetLayout(plan.After)        // after a recovery
//
// Caveats: internal — no storage policy uses it yet (no manifest fields,
// no node protocol, no packer state in the metadata store), and the group
// and its disks live in one process. A Put that fails leaves its extents
// allocated and dead (compaction reclaims them), zeroed on both replicas
// (or listed by Divergent). Deletes are zeroed by the group on both
// replicas together (lazily at Idle, or online), because replicas that
// differ even in dead bytes break a dual-failure rebuild; the window of a
// range's two zeroing writes stays open (docs/design/raidp.md, "Replicas
// must agree").
package raidpgroup
