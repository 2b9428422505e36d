//go:build !(invariants || race)

package volume

const invariantsEnabled = false
