package vfs

import (
	"errors"
	"syscall"
	"testing"
)

// TestSplit: paths at or under the split directory live on one file
// system, the rest on the other; a rename across fails with EXDEV.
func TestSplit(t *testing.T) {
	rest, under := NewMem(), NewMem()
	s := Split(rest, "/lstor/d1/", under)
	for _, name := range []string{"/disk1/raidp.data", "/lstor/d1/LSTOR", "/lstor/d10/LSTOR", "/lstor/d1"} {
		if err := s.MkdirAll(name+".dir", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		under bool
	}{
		{"/disk1/raidp.data", false},
		{"/lstor/d1/LSTOR", true},
		{"/lstor/d1/sub/../LOCK", true},
		{"/lstor/d10/LSTOR", false}, // a sibling with the same prefix is not under
	} {
		f, err := s.Create(tc.name)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		f.Close()
		_, errU := under.Stat(tc.name)
		_, errR := rest.Stat(tc.name)
		if (errU == nil) != tc.under || (errR == nil) == tc.under {
			t.Errorf("%s: on the split side %v (%v), on the rest %v (%v); want split side %v", tc.name, errU == nil, errU, errR == nil, errR, tc.under)
		}
	}
	if err := s.Rename("/lstor/d1/LSTOR", "/disk1/x"); !errors.Is(err, syscall.EXDEV) {
		t.Errorf("rename across: %v, want EXDEV", err)
	}
	if err := s.Rename("/lstor/d1/LSTOR", "/lstor/d1/LSTOR2"); err != nil {
		t.Errorf("rename within: %v", err)
	}
	if _, err := under.Stat("/lstor/d1/LSTOR2"); err != nil {
		t.Errorf("renamed file: %v", err)
	}
}
