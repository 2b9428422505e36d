//go:build !(invariants || race)

package invariants

// Enabled reports whether expensive self-checks run (false in this build).
const Enabled = false
