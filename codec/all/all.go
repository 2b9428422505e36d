// Package all is the registry of cairn's codes: it turns a policy string
// ("rs-10-4", "lrc-12-2-2", "rep-3") into a codec.Code. Every scheme is
// listed here explicitly; there is no init-time registration.
package all

import (
	"fmt"

	"cairn/codec"
	"cairn/codec/clay"
	"cairn/codec/lrc"
	"cairn/codec/lt"
	"cairn/codec/replica"
	"cairn/codec/rs"
)

// Scheme describes one policy scheme for help texts.
type Scheme struct {
	Name    string // scheme name in policy strings
	Form    string // e.g. "rs-K-M"
	Example string
	Summary string
}

// Schemes lists every scheme, in the order help texts show them.
var Schemes = []Scheme{
	{"rs", "rs-K-M", "rs-10-4", "Reed–Solomon: K data + M parity shards, any K rebuild the stripe; K+M ≤ 256"},
	{"lrc", "lrc-K-L-R", "lrc-12-2-2", "Azure-style LRC: K data in L local groups (one XOR parity each) + R global parities; one lost shard is rebuilt from its group (K/L reads)"},
	{"rep", "rep-N", "rep-3", "N-way replication: N copies, any one rebuilds the rest"},
	{"lt", "lt-K-X", "lt-1024-3", "rateless fountain code (Raptor-style): K source blocks + (X−1)·K repair blocks, any ≈K blocks decode (≈99.5% from exactly K); 16 ≤ K ≤ 8192, shard size a multiple of 64"},
	{"clay", "clay-K-M-D", "clay-10-4-13", "Clay MSR code: K data + M parity, any K rebuild the stripe; one lost shard is rebuilt from D helpers (K+1 ≤ D ≤ K+M−1) reading D/(D−K+1) shards' worth; shard size a multiple of α"},
}

// New builds the code a policy string names. The error wraps
// codec.ErrInvalidParams and says what is wrong.
func New(policy string) (codec.Code, error) {
	p, err := codec.ParsePolicy(policy)
	if err != nil {
		return nil, err
	}
	return FromPolicy(p)
}

// FromPolicy builds the code for a parsed policy.
func FromPolicy(p codec.Policy) (codec.Code, error) {
	args := func(n int, form string) error {
		if len(p.Args) != n {
			return fmt.Errorf("%w: policy %q: %s takes %d number(s) (%s)", codec.ErrInvalidParams, p, p.Scheme, n, form)
		}
		return nil
	}
	switch p.Scheme {
	case "rs":
		if err := args(2, "rs-K-M"); err != nil {
			return nil, err
		}
		return rs.New(p.Args[0], p.Args[1])
	case "lrc":
		if err := args(3, "lrc-K-L-R"); err != nil {
			return nil, err
		}
		return lrc.New(p.Args[0], p.Args[1], p.Args[2])
	case "rep":
		if err := args(1, "rep-N"); err != nil {
			return nil, err
		}
		return replica.New(p.Args[0])
	case "lt":
		if err := args(2, "lt-K-X"); err != nil {
			return nil, err
		}
		return lt.New(p.Args[0], p.Args[1])
	case "clay":
		if err := args(3, "clay-K-M-D"); err != nil {
			return nil, err
		}
		return clay.New(p.Args[0], p.Args[1], p.Args[2])
	}
	return nil, fmt.Errorf("%w: policy %q: unknown scheme %q (known: %s)", codec.ErrInvalidParams, p, p.Scheme, names())
}

func names() string {
	s := ""
	for i, sc := range Schemes {
		if i > 0 {
			s += ", "
		}
		s += sc.Form
	}
	return s
}
