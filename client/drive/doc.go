// Package drive carries out the speculative access engine's actions
// (client/engine) against real requests: it is the engine's I/O driver.
//
// Vocabulary:
//
//   - machine: a state machine of client/engine (Write, Read,
//     AdaptiveRead) or a Fixed plan; it says which block to send to or
//     fetch from which disk, and when the operation is done.
//   - disk queue: Send actions wait on their disk, which serves Depth of
//     them at a time (a read in RobuSTore mode sends every block at once;
//     the disks then deliver them in order, fast disks more).
//   - cancel: a queued request is dropped; a running one has its context
//     cancelled, which stops the node's disk I/O.
//
// Run returns when the machine is done or failed, after every request it
// started has ended, so callers' byte counts are final. It is used by the
// PUT and GET of fountain-coded objects (package client) and by the
// RobuSTore experiment (bench/robustore).
package drive
