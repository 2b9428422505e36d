package all

import (
	"errors"
	"strings"
	"testing"

	"cairn/codec"
)

func TestPolicyRoundTrip(t *testing.T) {
	for _, s := range []string{"rs-10-4", "rs-6-3", "rs-1-1", "rs-250-6", "lrc-12-2-2", "lrc-6-2-2", "rep-1", "rep-3"} {
		c, err := New(s)
		if err != nil {
			t.Fatalf("New(%q): %v", s, err)
		}
		if got := c.Policy().String(); got != s {
			t.Fatalf("New(%q).Policy() = %q", s, got)
		}
	}
}

// Bad policy strings give an error that names the policy and the problem.
func TestBadPolicies(t *testing.T) {
	for _, tc := range []struct{ policy, mention string }{
		{"rs-0-2", "K (data shards) must be at least 1"},
		{"rs-200-100", "exceeds 256"},
		{"rs-4", "rs takes 2 number(s)"},
		{"lrc-12-5-2", "must divide K"},
		{"lrc-12-2", "lrc takes 3 number(s)"},
		{"rep-0", "between 1 and 256"},
		{"rep-3-1", "rep takes 1 number(s)"},
		{"garbage", "unknown scheme"},
		{"xyz-1-2", "unknown scheme"},
		{"rs-ten-4", "not a number"},
		{"", "missing scheme"},
		{"RS-10-4", "lower-case"},
	} {
		_, err := New(tc.policy)
		if !errors.Is(err, codec.ErrInvalidParams) {
			t.Errorf("New(%q) = %v, want ErrInvalidParams", tc.policy, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("New(%q) error %q does not say %q", tc.policy, err, tc.mention)
		}
	}
}

func TestSchemesListed(t *testing.T) {
	for _, s := range Schemes {
		if _, err := New(s.Example); err != nil {
			t.Errorf("scheme %s example %q: %v", s.Name, s.Example, err)
		}
	}
}
