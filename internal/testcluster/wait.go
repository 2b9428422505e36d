package testcluster

import (
	"testing"
	"time"
)

// Poll calls cond every 200 ms until it holds (true) or d has passed
// (false): for conditions on the state of real processes.
func Poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		// real time: the condition is the state of real processes (files, the CLI), polled.
		time.Sleep(200 * time.Millisecond)
	}
	return true
}

// WaitFor polls cond (Poll) and fails the test if it does not hold
// within d; what names the condition in the failure.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(d, cond) {
		t.Fatalf("timed out after %s waiting for %s", d, what)
	}
}
