//go:build invariants || race

package volume

// invariantsEnabled turns on expensive self-checks (re-reading every shard
// after writing it). On in tests (-race or -tags invariants), off in
// production builds.
const invariantsEnabled = true
