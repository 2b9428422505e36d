// Package lint holds tests that enforce cairn's code rules (STYLE.md §4):
// pure cores do no I/O and read no clock or global randomness, dependencies
// point downward, and atomics are typed.
//
// Tests do not sleep to let something happen (sleep_test.go): they wait on
// the condition or run in a testing/synctest bubble, and a time.Sleep that
// must take real time carries a "// real time:" comment saying why.
package lint
