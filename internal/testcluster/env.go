package testcluster

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// EnvCount returns the count in environment variable name (a number ≥ 1:
// the iterations or rounds of a long test), or def when it is unset. A
// bad value fails the test.
func EnvCount(t testing.TB, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a number ≥ 1", name, s)
	}
	return n
}

// EnvSeed returns the seed in environment variable name, or a new one
// drawn from the clock when it is unset (the test logs it, so that
// name=SEED replays the run's choices). A bad value fails the test.
func EnvSeed(t testing.TB, name string) uint64 {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return uint64(time.Now().UnixNano())
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: want a number", name, s)
	}
	return n
}
