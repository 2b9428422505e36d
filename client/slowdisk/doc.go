// Package slowdisk tells which disks are slow from the latencies of many
// requests, so that new stripes avoid them (docs/design/speculative.md, "Slow disks across PUTs").
// It is a pure core: it reads no clock and does no I/O; the caller passes
// the time with every call.
//
// Vocabulary:
//
//   - batch: requests to several disks that started together and carry
//     the same amount of work — the shard streams of one PUT. A disk is
//     judged against its peers in the same batch, never against a fixed
//     latency, so the verdict does not depend on object size or on how
//     busy the whole machine is.
//   - ratio: one request's time ÷ the median time of its batch (at least
//     minRatio, at most maxRatio). A request that was cancelled because it
//     straggled counts with the time it had run: a lower bound.
//   - score: a disk's exponentially weighted mean of its ratios (weight
//     Alpha for the newest).
//   - states: ok → slow when the score reaches MarkAt after at least
//     MinSamples ratios; slow → probation when its hold ends; probation →
//     slow again at the first ratio ≥ MarkAt (the hold doubles, up to
//     MaxHold), or → ok once the score falls below ClearAt (the hold is
//     back to Hold). A slow disk is avoided for new stripes; a disk on
//     probation is used and watched. MarkAt > ClearAt is the hysteresis.
//
// Tracker is safe for concurrent use: a gateway's PUTs share one.
package slowdisk
