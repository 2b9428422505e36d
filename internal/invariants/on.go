//go:build invariants || race

package invariants

// Enabled reports whether expensive self-checks run (true in this build).
const Enabled = true
