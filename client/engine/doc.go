// Package engine is the speculative access state machine of RobuSTore
// (docs/papers.md#robustore): it decides which block goes to (or comes from) which disk
// and when to stop, and it does no I/O, reads no clock and starts no
// goroutines. A driver feeds it events — a request finished, time passed —
// and carries out the actions it returns: send a request, cancel one, the
// operation is done, or it failed. Tests and the simulator drive it with a
// virtual clock.
//
// Vocabulary:
//
//   - block: a unit of coded data with an ID: shard i of an RS stripe (IDs
//     ≥ n are spare parity rows, made on demand — rs.Code.MakeParity), or a
//     fountain-code block (lt).
//   - request: one block to or from one disk; a disk has at most Depth
//     requests outstanding.
//   - durable: a write request acknowledged by its disk (fsynced).
//   - straggler: a request outstanding for longer than StragglerFactor ×
//     the median time of the requests finished so far (and at least
//     MinWait).
//
// Write: primaries (disks 0..Primaries−1) start with block = their index.
// With Eager (RobuSTore mode, the fountain code) every disk keeps getting
// new blocks as it acknowledges, so fast disks take more, and the write is
// done the moment Target blocks are durable; everything outstanding is
// cancelled. Without Eager (RS with spares) each disk takes at most
// MaxPerDisk blocks, and a spare disk gets a new spare block only when a
// request straggles or fails: the straggler is replaced rather than waited
// for. Durable reports where each block really landed, for the manifest.
//
// Stream write (RS with spares in the PUT path): every request is a whole
// shard, streamed block by block in step with the encoder, which can queue
// only Lag blocks ahead of the slowest stream — so one slow stream holds
// back every other. The driver reports each block a stream takes
// (Progress). A stream that has held the write back for longer than
// StragglerFactor × the median time between blocks (measured while nobody
// held it back) and MinWait is replaced at once by a spare block (a spare
// parity row) on a spare disk, which the driver starts from the first
// stripe, and cancelled. StopSpares ends this when the driver no longer
// holds the stripes a new stream would need; from then on stragglers are
// waited for and a failed stream fails the write.
//
// Read: requests Initial blocks (K+δ; 0 = every block, RobuSTore mode),
// replaces failures, hedges stragglers with further blocks, and is done the
// moment the blocks that arrived can be decoded (Decodable); the rest are
// cancelled.
//
// Adaptive read (RRAID-A, the replicated baseline of the paper): every disk
// reads its primary copies in order, Depth at a time; a disk that runs out
// of its own blocks is idle and is given an unarrived block it holds a copy
// of — one nobody fetches first, else the one fetched longest — never the
// same block twice. So fast disks take over the rest of slow or failed
// disks' work, and extra requests are made only for otherwise idle disks.
// A block's other requests are cancelled when it arrives, and everything
// outstanding when Need distinct blocks have.
//
// Times are durations since the operation started.
package engine
