// Package drive carries out the speculative access engine's actions
// (client/engine) against real requests: it is the one I/O driver of the
// data path's speculative loops — a GET's windows of stripes, a PUT's
// shard streams, the blocks of fountain-coded objects (package client) —
// and of the RobuSTore experiment's machines (bench/robustore).
//
// Vocabulary:
//
//   - machine: a state machine of client/engine (Write, Read,
//     AdaptiveRead) or a Fixed plan; it says which block to send to or
//     fetch from which disk, and when the operation is done.
//   - request: one Send, carried out by Options.Do on a goroutine of its
//     own: one block, or a stream of blocks that reports each block it
//     takes (Request.Progress) to a machine that wants to know
//     (Progresser: the engine's stream write).
//   - disk queue: Send actions wait on their disk, which serves Depth of
//     them at a time (a read in RobuSTore mode sends every block at once;
//     the disks then deliver them in order, fast disks more).
//   - cancel: a queued request is dropped; a running one has its context
//     cancelled, which stops the node's disk I/O.
//   - inbox: events for the machine from other goroutines (Inbox.Post),
//     e.g. a PUT's encoder ending the spare window.
//
// Run's goroutine is the machine's: every event — start, tick, a
// request's progress or end, a post — reaches the machine there, one at a
// time, so machines need no lock; the hooks (Start, Got, Failed) run
// there too. Run returns when the machine is done or failed, or ctx ends,
// and only after every request it started has ended: none of its
// goroutines outlives it, and callers' byte counts are final.
//
// Usage:
//
//	rd, err := engine.NewRead(engine.ReadConfig{Blocks: locs, Decodable: decodable})
//	...
//	_, err = drive.Run(ctx, drive.ReadMachine{Read: rd}, drive.Options{
//		Do: func(ctx context.Context, r *drive.Request) ([]byte, error) {
//			return fetch(ctx, r.Disk, r.Block)
//		},
//		Got: func(a engine.Action, b []byte) { have[a.Block] = b },
//	})
//
// Caveats: Run waits for a Do that ignores its context. Failed does not
// see the requests the machine cancelled. An Inbox serves one Run, and
// Post waits for that Run to start.
package drive
