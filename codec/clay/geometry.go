package clay

import (
	"fmt"

	"cairn/codec"
)

// Limits on the parameters (see New).
const (
	// MaxAlpha caps the sub-packetization α = q^t. Beyond it sub-chunks get
	// tiny (1 MiB shards would have < 256-byte sub-chunks) and the plane
	// tables large; Ceph's own deployments stay well below.
	MaxAlpha = 4096
	// MaxNodes caps k+m+ν, the length of the per-plane scalar code over
	// GF(2^8) (Ceph's limit as well).
	MaxNodes = 254
)

// geometry is the pure arithmetic of a Clay code: node coordinates, plane
// digits, dots and companions, repair planes (docs/codes.md#clay-parameters,
// docs/codes.md#clay-geometry).
//
// Internal node i ∈ [0, n) has coordinates x = i mod q, y = i div q. Data
// shard j < k is node j; the ν virtual (always zero) nodes are k..k+ν−1;
// parity shard j ≥ k is node j+ν. Plane z ∈ [0, α) has base-q digits
// z_0..z_{t−1}, z_0 most significant: z = Σ_y z_y·q^(t−1−y).
type geometry struct {
	k, m, d     int
	q, t, nu    int
	n           int   // internal nodes q·t = k+m+ν
	alpha, beta int   // q^t, q^(t−1)
	pow         []int // pow[y] = q^(t−1−y), the weight of digit y
}

func newGeometry(k, m, d int) (geometry, error) {
	name := fmt.Sprintf("clay-%d-%d-%d", k, m, d)
	switch {
	case k < 1:
		return geometry{}, fmt.Errorf("%w: %s: K (data shards) must be at least 1", codec.ErrInvalidParams, name)
	case m < 2:
		return geometry{}, fmt.Errorf("%w: %s: M (parity shards) must be at least 2 (d ranges over K+1..K+M−1)", codec.ErrInvalidParams, name)
	case d < k+1 || d > k+m-1:
		return geometry{}, fmt.Errorf("%w: %s: d (helpers per repair) must be in K+1..K+M−1 = %d..%d", codec.ErrInvalidParams, name, k+1, k+m-1)
	}
	g := geometry{k: k, m: m, d: d, q: d - k + 1}
	if r := (k + m) % g.q; r != 0 {
		g.nu = g.q - r
	}
	g.n = k + m + g.nu
	g.t = g.n / g.q
	if g.n > MaxNodes {
		return geometry{}, fmt.Errorf("%w: %s: K+M+ν = %d nodes exceeds %d", codec.ErrInvalidParams, name, g.n, MaxNodes)
	}
	g.alpha = 1
	for range g.t {
		g.alpha *= g.q
		if g.alpha > MaxAlpha {
			return geometry{}, fmt.Errorf("%w: %s: sub-packetization α = q^t = %d^%d exceeds %d (use a smaller d or fewer shards)",
				codec.ErrInvalidParams, name, g.q, g.t, MaxAlpha)
		}
	}
	g.beta = g.alpha / g.q
	g.pow = make([]int, g.t)
	p := 1
	for y := g.t - 1; y >= 0; y-- {
		g.pow[y] = p
		p *= g.q
	}
	return g, nil
}

// node returns the internal node of shard j.
func (g *geometry) node(shard int) int {
	if shard < g.k {
		return shard
	}
	return shard + g.nu
}

// shard returns the shard of internal node i, or −1 for a virtual node.
func (g *geometry) shard(i int) int {
	switch {
	case i < g.k:
		return i
	case i < g.k+g.nu:
		return -1
	}
	return i - g.nu
}

// virtual reports whether node i is one of the ν shortening nodes.
func (g *geometry) virtual(i int) bool { return i >= g.k && i < g.k+g.nu }

// digit returns z_y.
func (g *geometry) digit(z, y int) int { return z / g.pow[y] % g.q }

// isDot reports whether node i is a dot (unpaired) in plane z: z_y = x.
func (g *geometry) isDot(i, z int) bool { return g.digit(z, i/g.q) == i%g.q }

// companion returns the companion of vertex (i, z): node (z_y, y) in plane
// z with digit y replaced by x. ok is false when (i, z) is a dot.
func (g *geometry) companion(i, z int) (j, zs int, ok bool) {
	x, y := i%g.q, i/g.q
	zy := g.digit(z, y)
	if zy == x {
		return i, z, false
	}
	return y*g.q + zy, z + (x-zy)*g.pow[y], true
}

// repairPlanes returns the planes whose sub-chunks helpers send to repair
// node i = (x0, y0): those with z_{y0} = x0, ascending
// (docs/codes.md#clay-repair).
func (g *geometry) repairPlanes(i int) []int32 {
	x0, y0 := i%g.q, i/g.q
	planes := make([]int32, 0, g.beta)
	for z := range g.alpha {
		if g.digit(z, y0) == x0 {
			planes = append(planes, int32(z))
		}
	}
	return planes
}

// runs coalesces ascending sub-chunk indices into byte runs for
// sub-chunks of sc bytes.
func runs(subChunks []int, sc int) []codec.Run {
	var out []codec.Run
	for _, z := range subChunks {
		if n := len(out); n > 0 && out[n-1].Offset+out[n-1].Length == z*sc {
			out[n-1].Length += sc
			continue
		}
		out = append(out, codec.Run{Offset: z * sc, Length: sc})
	}
	return out
}
