// Package scrub is the storage node's scrubber: it walks every shard of a
// disk at a bounded rate, verifies every block's CRC-32C, the footer and
// the whole-content CRC, and records what it finds damaged in the
// metadata store, where the director turns it into repairs
// (docs/design/scrub.md is the design).
//
// Terms:
//
//   - pass: one walk over all the disk's shards, in name order (the
//     volume's listing order). A pass starts when the previous one ended
//     Config.Interval ago, at once for a disk never scrubbed, or when an
//     operator starts one (cairn.ScrubControl.Start changes).
//   - cursor: the last shard name the pass in progress checked. The
//     progress record (cairn.ScrubProgress) is written every
//     Config.SaveEvery, so a restarted node resumes its pass there instead
//     of starting over; a replaced volume (another volume ID) starts afresh.
//   - rate: the scrubber reads at most Config.Rate bytes per second (a
//     token bucket, golang.org/x/time/rate, burst one chunk).
//   - share: while the node serves clients on the node (Config.Busy), the
//     scrubber takes at most Config.Share of the disk's time: after a chunk
//     that took d to read, it waits d·(1−Share)/Share before the next one.
//   - damage: a shard whose footer, a block or the content CRC fails, or
//     whose file is shorter than its footer says (cairn.DamageCorrupt).
//     Each is recorded once per pass (meta.Store.PutDamage, keyed by disk
//     and shard); at most Config.MaxDamage records per pass, the rest are
//     counted (ScrubProgress.Unreported) and found again by the next pass.
//     A shard recording an identity (volume format 2) whose manifest names
//     it on this disk with another size or CRC is damage too
//     (cairn.Mismatch).
//   - orphan: a shard recording an identity that no committed manifest or
//     upload names on this disk (cairn.Unnamed). Counted each pass
//     (ScrubProgress.PassOrphans), and removed (ScrubProgress.Collected)
//     once its file is older than Config.OrphanGrace, after a second
//     lookup.
//
// Usage sketch (the node server runs one per disk):
//
//	s := scrub.New(vol, scrub.Config{Rate: 16 << 20, Share: 0.1, Store: store, Busy: handler.Busy})
//	go s.Run(ctx) // until ctx ends
//	p := s.Progress()
//
// Caveats: a shard written before identities (format 1) is checked
// against its own checksums only, never matched with a manifest nor
// collected. An orphan is told from a file whose manifest is still to be
// committed only by its age: the grace period must exceed the longest
// write. A shard the volume cannot
// read for another reason (an I/O error) is logged and skipped, not
// reported, so a flaky controller does not queue a repair of every shard.
package scrub
