package gp

import (
	"errors"
	"strings"
	"testing"
)

func TestParsePolicy(t *testing.T) {
	p, err := ParsePolicy("clay-10-4-13/gp=4MiB:2")
	if err != nil {
		t.Fatal(err)
	}
	if p.K() != 10 || p.M() != 4 || p.S0 != 4<<20 || p.Q != 2 || p.Max != 256<<20 || p.Small.String() != "rs-10-4" {
		t.Fatalf("parsed %+v", p)
	}
	for _, s := range []string{"clay-10-4-13/gp=4MiB:2", "clay-10-4-13/gp=1MiB:4:64MiB", "clay-4-2-5/gp=64KiB:2:1GiB"} {
		p, err := ParsePolicy(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if p.String() != s {
			t.Errorf("%s prints as %s", s, p.String())
		}
	}
}

func TestParsePolicyRefuses(t *testing.T) {
	tests := []struct {
		in  string
		err error
		why string // a fragment of the reason
	}{
		{"clay-10-4-13/gp=1536KiB:2", ErrInvalidGeometry, "sub-chunk unit 1MiB"},
		{"clay-10-4-13/gp=4000000:2", ErrInvalidGeometry, "not a positive multiple"},
		{"clay-10-4-13/gp=0:2", ErrInvalidGeometry, "not a positive multiple"},
		{"clay-10-4-13/gp=4MiB:1", ErrInvalidGeometry, "at least 2"},
		{"clay-10-4-13/gp=4MiB:0", ErrInvalidGeometry, "at least 2"},
		{"clay-10-4-13/gp=4MiB:-3", ErrInvalidGeometry, "at least 2"},
		{"clay-10-4-13/gp=4MiB:2:2MiB", ErrInvalidGeometry, "below s0"},
		{"clay-10-4-13/gp=4MiB:2:0", ErrInvalidGeometry, "below s0"},
		{"clay-10-4-13/gp=4MiB:2:100MiB", ErrInvalidGeometry, "not s0·q^i"},
		{"clay-10-4-13/gp=4MiB:2.5", ErrInvalidPolicy, "not a whole number"},
		{"clay-10-4-13/gp=4Mix:2", ErrInvalidPolicy, "s0"},
		{"clay-10-4-13/gp=4MiB", ErrInvalidPolicy, "S0:Q or S0:Q:MAX"},
		{"clay-10-4-13/gp=4MiB:2:8MiB:9", ErrInvalidPolicy, "S0:Q or S0:Q:MAX"},
		{"clay-10-4-13", ErrInvalidPolicy, "missing /gp="},
		{"rs-10-4/gp=4MiB:2", ErrInvalidPolicy, "needs a clay-K-M-D"},
		{"clay-10-4/gp=4MiB:2", ErrInvalidPolicy, "needs a clay-K-M-D"},
		{"clay-10-4-9/gp=4MiB:2", ErrInvalidPolicy, "clay"},
		{"Clay-10-4-13/gp=4MiB:2", ErrInvalidPolicy, "lower-case"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParsePolicy(tt.in)
			if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.why) || !strings.Contains(err.Error(), tt.in) {
				t.Fatalf("ParsePolicy(%q) = %v; want %v mentioning %q and the input", tt.in, err, tt.err, tt.why)
			}
		})
	}
}

// TestCheck: Check accepts codes and cold-tier policies and refuses either
// kind with the reason.
func TestCheck(t *testing.T) {
	tests := []struct {
		policy string
		ok     bool
	}{
		{"rs-4-2", true},
		{"rep-3", true},
		{"clay-4-2-5/gp=32KiB:2", true},
		{"clay-4-2-5/gp=1MiB:2:16MiB", true},
		{"rs-4-0x", false},
		{"clay-4-2-5/gp=48KiB:2", false}, // s0 not a multiple of the sub-chunk unit
		{"clay-4-2-5/gp=32KiB:1", false}, // q < 2
		{"rs-4-2/gp=32KiB:2", false},     // not a Clay code
	}
	for _, tt := range tests {
		err := Check(tt.policy)
		if (err == nil) != tt.ok {
			t.Errorf("Check(%q) = %v, want ok %v", tt.policy, err, tt.ok)
		}
	}
}
