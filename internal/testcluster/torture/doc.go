// Package torture kills cairn processes with SIGKILL at random moments
// under a workload and checks that nothing acknowledged is lost: issue 14's
// "Torture test on real processes". Its test (TestTorture) starts a
// cluster of separate processes — a metadata member, storage nodes (one of
// which is the director), a gateway — runs PUTs, multipart uploads,
// overwrites, deletes and GETs through the gateway's S3 API, and in each
// round kills a node, the director's node, the gateway (or two of them),
// or removes a disk's directory, then restarts what it killed. It lives
// beside internal/testcluster's tests, in a package of its own, so that
// `go test ./...` runs it in parallel with them.
//
// Vocabulary (the model of what each key may hold, Model and Key):
//
//   - version: one content a key may hold, named by the seed its bytes are
//     drawn from, with its size and SHA-256; Absent is no object at all
//     (never written, or deleted).
//   - acknowledged: the gateway answered 2xx; the key now holds exactly
//     that version (Key.Ack).
//   - in doubt: the gateway answered an error, or no answer came (the
//     gateway died, the connection broke). The operation may or may not
//     have taken effect, so the key may hold the old or the new version,
//     whole (Key.Doubt) — never a part of one.
//   - possible set: the versions a read of the key may return; one after
//     an acknowledged write, more after writes in doubt. A read that
//     returns a version of the set narrows it to that version
//     (Key.Observe), provided every earlier operation on the key is
//     settled.
//   - settled: an operation is over once the gateway answered it or the
//     gateway that ran it is dead. One that got no answer from a gateway
//     still alive may yet take effect: its key is frozen (not used, not
//     narrowed) until that gateway is killed.
//
// The seed of a run is logged; CAIRN_TORTURE_SEED=N replays the same
// choices of victims, delays and operations (the timing of real processes
// still varies). CAIRN_TORTURE=N runs N rounds (the long form, e.g. 200);
// the default is a short form for CI.
package torture
