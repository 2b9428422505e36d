// Package cleanup deletes the shard files the metadata store queued as
// no longer named (docs/design/cleanup.md): the background half of
// overwrites, deletes, repairs and failed writes, so that none of them
// waits for a shard delete, and a GET that read a manifest before it was
// replaced or deleted can still read its shards for the grace period.
//
// Terms:
//
//   - record (cairn.Cleanup): files dropped by one write, with the time
//     they were dropped (Since). The writes queue records in their own
//     metadata transaction, so a crash loses none.
//   - grace period: how long dropped files stay; a record is due at
//     Since + Grace (at once when Since is zero: files never named).
//   - attempt: one pass over a record's files. Files deleted, or already
//     gone, leave the record; the rest are re-queued with the attempt
//     counted and Since moved so the record is due again after the
//     backoff (internal/retry's Policy). After MaxAttempts the record is
//     dropped and its files are left to the orphan collector.
//
// Usage sketch (the director runs it as a background duty):
//
//	w := cleanup.New(store, nodes, cleanup.Config{Grace: 15 * time.Minute})
//	stats, err := w.Run(ctx, time.Now())
//
// Caveats: the grace period bounds the reads it protects: a GET that runs
// longer than it may find its shards gone (and fail with
// cairn.ErrUnavailable). Deletes are paced (Config.Rate) over all records.
package cleanup
