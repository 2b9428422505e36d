// Package lint holds tests that enforce cairn's code rules (STYLE.md §4):
// pure cores do no I/O and read no clock or global randomness, dependencies
// point downward, and atomics are typed.
package lint
