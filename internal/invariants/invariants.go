// Package invariants switches expensive self-checks on in tests and off in
// production (after pebble's internal/invariants): Enabled is true in
// builds with the race detector or the "invariants" tag, so `go test -race`
// and `go test -tags invariants` run the checks and release binaries pay
// nothing for them.
package invariants
