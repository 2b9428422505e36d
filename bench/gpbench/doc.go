// Package gpbench is the Geometric Partitioning paper's experiment (its
// Figure 9 and Table 3, workload W1) as a time model: recovery throughput
// of one lost disk, and normal and degraded whole-object read times, for
// Clay with Geometric Partitioning (layout/gp) against Clay in the
// Contiguous, Stripe and Stripe-Max layouts and RS(10,4) and LRC(10,2,2)
// in the Stripe layout.
//
// # Vocabulary
//
// Machine. The cluster: disks (sequential rate, a seek per request that
// does not continue the previous one — the spinning-disk model of
// vfs.Throttle), node and client links, cores and their decode rates.
//
// Work and bound. Rebuilding a lost disk is work spread over every
// surviving disk, node link and core (its stripes lie in many placement
// groups); the recovery rate is the rebuilt bytes over the time of the
// busiest resource, its bound.
//
// Helper read. What a Clay helper reads is taken from codec/clay's real
// repair plan: β/α of the shard in q^{y0} runs; the model charges a seek
// for the first run and, for each gap, the cheaper of a seek and reading
// through it.
//
// Read pipeline. A normal read streams the object's pieces from its disk
// in 256 KiB packets, each sent as it arrives; a degraded read of a
// Geometric Partitioning object is layout/gp's Pipeline over the pieces'
// repair and send times.
//
// Node run. NodeRun is the same experiment on real storage nodes (package
// cold's layout, real codes, sockets and throttled disks): recovery of
// one lost disk across groups that hold it at every other stripe
// position, and normal, degraded and degraded-range reads of a sample of
// objects, in Geometric Partitioning and, on the same disks, in the
// Stripe-Max and Contiguous layouts (layouts.go: chunks in the slots of a
// one-size cold.Group, so every layout shares cold's reads and repairs).
// Stripe-Max is read twice: strip after strip, each sent once it and
// those before it are in, and by the paper's whole-stripe reader, which
// sends nothing of a stripe before all of it is in. The CLI shrinks every
// size the disk sees by one factor (docs/design/cold.md, "The
// experiment").
//
// Client link. The reader's link (shaped) sends each write from when it
// comes or when the writes before it are out: a read that starts late
// does not catch up.
//
// # Caveats
//
//   - Model: no node process runs. The decode rates can be measured on
//     this machine (Measure runs codec/clay's repair and RS's decode), the
//     rest are the Machine's parameters.
//   - The model is of an idle cluster: no foreground load, no queueing.
//     Stripe-Max's degraded reads in the paper suffered from contention the
//     model does not have (docs/design/cold.md, "The experiment").
package gpbench
