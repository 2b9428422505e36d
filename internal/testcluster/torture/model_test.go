package torture

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestKeyPossibleVersions: an acknowledged write leaves one possible
// version, writes in doubt add theirs, a read of a version outside the set
// is an error that names the history, and a settled read narrows the set.
func TestKeyPossibleVersions(t *testing.T) {
	m := NewModel("k", 1)
	k := m.Keys()[0]
	a, b, c := NewVersion(1, 10), NewVersion(2, 10), NewVersion(3, 20)
	if err := k.Observe(Absent, "first read", true); err != nil {
		t.Fatalf("a new key reads as absent: %v", err)
	}
	if err := k.Observe(Observed(Content(a.Seed, a.Size)), "read", false); err == nil {
		t.Fatal("a version never written was accepted")
	}
	k.Ack(a, "put a")
	if err := k.Observe(Absent, "read", false); err == nil {
		t.Fatal("an acknowledged object read back absent and was accepted")
	}
	k.Doubt(b, "put b", "503")
	k.Doubt(Absent, "delete", "connection reset")
	for _, v := range []Version{a, b, Absent} {
		if err := k.Observe(v, "read", false); err != nil {
			t.Fatalf("%v is possible after writes in doubt: %v", v, err)
		}
	}
	err := k.Observe(c, "read", false)
	if err == nil || !strings.Contains(err.Error(), "put b") {
		t.Fatalf("an impossible read: %v, want an error naming the history", err)
	}
	if err := k.Observe(Observed(Content(b.Seed, b.Size)), "settled read", true); err != nil {
		t.Fatal(err)
	}
	if got := k.Possible(); len(got) != 1 || got[0] != b {
		t.Fatalf("after a settled read of b the possible set is %v", got)
	}
	if err := k.Observe(a, "read", false); err == nil {
		t.Fatal("the old version was accepted after a settled read found the new one")
	}
}

// TestAcquireSkipsHeldAndFrozen: a key is held by one worker at a time,
// and a frozen key waits for its gateway epoch to end.
func TestAcquireSkipsHeldAndFrozen(t *testing.T) {
	m := NewModel("k", 2)
	rng := rand.New(rand.NewPCG(1, 2))
	x, y := m.Acquire(rng, 0), m.Acquire(rng, 0)
	if x == nil || y == nil || x == y {
		t.Fatalf("two acquires: %v %v", x, y)
	}
	if z := m.Acquire(rng, 0); z != nil {
		t.Fatalf("a held key was acquired again: %s", z.Name)
	}
	x.Freeze(0)
	m.Release(x)
	if z := m.Acquire(rng, 0); z != nil {
		t.Fatalf("a key frozen in epoch 0 was acquired in epoch 0")
	}
	if !m.AnyFrozen(0) || m.AnyFrozen(1) {
		t.Fatal("AnyFrozen is wrong")
	}
	if z := m.Acquire(rng, 1); z != x {
		t.Fatalf("in epoch 1 the frozen key is free again: got %v", z)
	}
}
