package gp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"cairn/codec"
	"cairn/codec/all"
	"cairn/codec/clay"
	"cairn/internal/units"
)

// Errors of policy parsing and geometry checks.
var (
	// ErrInvalidGeometry: s0, q or the chunk cap break a rule of
	// NewGeometry, or s0 is not a multiple of the code's sub-chunk unit.
	ErrInvalidGeometry = errors.New("gp: invalid geometry")
	// ErrInvalidPolicy: the policy string is not CODE/gp=S0:Q[:MAX] with a
	// clay-K-M-D code.
	ErrInvalidPolicy = errors.New("gp: invalid policy")
)

// PageSize is the smallest sub-chunk a helper reads: a Clay repair reads
// whole sub-chunks (chunk/α bytes), and keeping them whole pages keeps the
// helpers' reads aligned and at least 4 KiB (docs/codes.md, "Clay
// sub-chunk size").
const PageSize = 4 << 10

// Policy is a cold-tier policy: a Clay code for the chunks, the RS code of
// the small-size bucket over the same placement group, and the geometry.
// Its string form is "clay-K-M-D/gp=S0:Q" or "clay-K-M-D/gp=S0:Q:MAX", e.g.
// "clay-10-4-13/gp=4MiB:2" (sizes as internal/units reads them).
type Policy struct {
	Code  codec.Policy // clay-K-M-D
	Small codec.Policy // rs-K-M: the small-size bucket's code
	Geometry
	// capSet records whether the string named the cap, so String
	// round-trips.
	capSet bool
}

// SubChunkUnit returns what s0 must be a multiple of for code: α pages,
// so that every chunk's sub-chunks are whole pages.
func SubChunkUnit(c codec.Code) int64 {
	return int64(c.Params().ShardMultiple) * PageSize
}

// ParsePolicy parses and checks a cold-tier policy. Errors wrap
// ErrInvalidPolicy (syntax, a code that is not a valid clay-K-M-D) or
// ErrInvalidGeometry (s0 not a multiple of the sub-chunk unit, q < 2, a
// cap below s0 or not s0·q^i), and quote the input with the reason.
func ParsePolicy(s string) (Policy, error) {
	bad := func(err error, why string) (Policy, error) {
		return Policy{}, fmt.Errorf("%w: policy %q: %s (want e.g. clay-10-4-13/gp=4MiB:2 or clay-10-4-13/gp=4MiB:2:256MiB)", err, s, why)
	}
	code, geo, ok := strings.Cut(s, "/gp=")
	if !ok {
		return bad(ErrInvalidPolicy, "missing /gp=S0:Q")
	}
	cp, err := codec.ParsePolicy(code)
	if err != nil {
		return bad(ErrInvalidPolicy, err.Error())
	}
	if cp.Scheme != "clay" || len(cp.Args) != 3 || cp.Read != "" {
		return bad(ErrInvalidPolicy, fmt.Sprintf("code %q: the cold tier needs a clay-K-M-D code", code))
	}
	c, err := clay.New(cp.Args[0], cp.Args[1], cp.Args[2])
	if err != nil {
		return bad(ErrInvalidPolicy, err.Error())
	}
	fields := strings.Split(geo, ":")
	if len(fields) < 2 || len(fields) > 3 {
		return bad(ErrInvalidPolicy, fmt.Sprintf("gp=%s: want S0:Q or S0:Q:MAX", geo))
	}
	s0, err := units.ParseSize(fields[0])
	if err != nil {
		return bad(ErrInvalidPolicy, "s0: "+err.Error())
	}
	q, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return bad(ErrInvalidPolicy, fmt.Sprintf("q %q is not a whole number", fields[1]))
	}
	var max int64
	if len(fields) == 3 {
		if max, err = units.ParseSize(fields[2]); err != nil {
			return bad(ErrInvalidPolicy, "chunk cap: "+err.Error())
		}
		if max == 0 {
			return bad(ErrInvalidGeometry, "chunk cap 0 is below s0")
		}
	}
	if unit := SubChunkUnit(c); s0 <= 0 || s0%unit != 0 {
		return bad(ErrInvalidGeometry, fmt.Sprintf("s0 = %s is not a positive multiple of %s's sub-chunk unit %s (α = %d sub-chunks of whole %d-byte pages)",
			units.FormatSize(s0), code, units.FormatSize(unit), c.Params().Alpha, PageSize))
	}
	g, err := NewGeometry(s0, q, max)
	if err != nil {
		return bad(ErrInvalidGeometry, strings.TrimPrefix(err.Error(), ErrInvalidGeometry.Error()+": "))
	}
	return Policy{
		Code:     cp,
		Small:    codec.Policy{Scheme: "rs", Args: []int{cp.Args[0], cp.Args[1]}},
		Geometry: g,
		capSet:   max != 0,
	}, nil
}

// K returns the number of data disks of a placement group.
func (p Policy) K() int { return p.Code.Args[0] }

// M returns the number of parity disks of a placement group.
func (p Policy) M() int { return p.Code.Args[1] }

// String prints the policy in the form ParsePolicy reads.
func (p Policy) String() string {
	s := fmt.Sprintf("%s/gp=%s:%d", p.Code, units.FormatSize(p.S0), p.Q)
	if p.capSet {
		s += ":" + units.FormatSize(p.Max)
	}
	return s
}

// Check validates any policy string: a cold-tier one (CODE/gp=S0:Q[:MAX])
// with ParsePolicy, any other with the codec registry (codec/all.New) —
// the check of a bucket's default policy, a storage class or a per-object
// policy.
func Check(policy string) error {
	if strings.Contains(policy, "/gp=") {
		_, err := ParsePolicy(policy)
		return err
	}
	_, err := all.New(policy)
	return err
}
