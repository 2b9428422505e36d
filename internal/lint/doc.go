// Package lint holds tests that enforce cairn's code rules: pure cores do
// no I/O and read no clock or global randomness, dependencies point
// downward as docs/design/layering.md draws them (and every package the
// rules name exists), and atomics are typed.
package lint
