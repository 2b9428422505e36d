// Package retry calls a function again after a transient failure, with a
// capped exponential backoff and jitter, a bounded number of times. Which
// failures are transient is decided in one place, cairn.IsPermanent.
//
// Terms:
//
//   - attempt: one call of the function. Policy.Attempts bounds them, so
//     nothing waits forever; ctx ends the waiting sooner.
//   - permanent error: one that the same call, made again, meets again
//     (cairn.ErrInvalid, ErrNotFound, ErrCorrupt, …, a context's error).
//     Do returns it at once. Everything else is transient and retried:
//     cairn.ErrUnavailable, cairn.ErrConflict (the function re-reads
//     before its compare-and-swap), a network failure, the metadata
//     store's "no leader" while it elects one.
//   - backoff: the wait after failure i (from 0) is Base·2^i, capped at
//     Max (Policy.Delay); with Policy.Rand it is jittered, drawn uniformly
//     from [d/2, d], so callers that failed together do not retry in step.
//
// Usage sketch:
//
//	p := retry.Policy{Attempts: 6, Base: 100 * time.Millisecond, Max: 2 * time.Second,
//		Rand: rand.New(retry.LockedSource(rand.NewPCG(seed, 0)))}
//	err := retry.Do(ctx, p, func(ctx context.Context) error {
//		old, err := store.Manifest(ctx, bucket, key)
//		…
//		return store.CommitManifest(ctx, m, prev) // ErrConflict: read again
//	})
//
// Time and randomness are inputs: the waits are timers, which run on
// virtual time inside a testing/synctest bubble, and the jitter comes from
// the Policy's *rand.Rand.
//
// Caveats: the function must be safe to call again after any transient
// error, including one whose outcome is unknown (a write that may have
// happened). A *rand.Rand is not safe for concurrent use: a Policy shared
// by concurrent calls takes one made over LockedSource.
package retry
