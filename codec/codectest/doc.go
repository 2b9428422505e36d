// Package codectest is the conformance suite every code in cairn runs: one
// call from the code's own tests checks round trips over awkward sizes,
// every erasure pattern up to the code's claimed tolerance (exhaustively
// while the stripe has at most 12 shards, seeded-random beyond), that
// CanReconstruct agrees with Reconstruct, linear-repair plans on random byte
// ranges, that Verify catches a flipped bit, malformed calls, and concurrent
// use. Fuzz and Bench give each code a fuzz target and benchmarks named by
// parameters.
//
// Usage, in a code's package:
//
//	func TestConformance(t *testing.T) { codectest.Run(t, codectest.Config{Code: mustNew(10, 4), Tolerance: 4}) }
//	func FuzzReconstruct(f *testing.F) { codectest.Fuzz(f, mustNew(4, 2)) }
//	func BenchmarkCode(b *testing.B)   { codectest.Bench(b, mustNew(10, 4)) }
//
// Randomness: every randomized check derives from one seed, logged at the
// start; rerun with -codectest.seed=N to replay.
package codectest
