package clay

// Tests tied to the construction of Clay codes: Vajha, Ramkumar, Puranik,
// Kini, Lobo, Sasidharan, Kumar, Barg, Ye, Narayanamurthy, Hussain, Nandi,
// "Clay Codes: Moulding MDS Codes to Yield an MSR Code", USENIX FAST 2018,
// Section 3 ("Construction of the Clay code": layers, the uncoupled code, the
// pairwise coupling, decoding by intersection score, repair), and the summary
// in docs/codes.md#clay, whose subsections (parameters, geometry, coupling,
// layered decode, repair) the tests cite.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"cairn/codec"
	"cairn/codec/codectest"
	"cairn/codec/internal/gf"
)

// docs/codes.md#clay-parameters: q = d−k+1, ν = shortening so that q | k+m+ν,
// t = (k+m+ν)/q, α = q^t sub-chunks, β = α/q read per helper, repair traffic
// d·β sub-chunks = d/(d−k+1) chunks. The table is the one on that page.
func TestParameters(t *testing.T) {
	tests := []struct {
		k, m, d            int
		q, nu, t, alpha, b int
		repair             float64 // chunks read per chunk repaired
		subChunk1MiB       int     // sub-chunk bytes at 1 MiB shards
	}{
		{4, 2, 5, 2, 0, 3, 8, 4, 2.50, 128 << 10},
		{6, 3, 8, 3, 0, 3, 27, 9, 8.0 / 3, (1 << 20) / 27},
		{8, 4, 11, 4, 0, 3, 64, 16, 2.75, 16 << 10},
		{10, 4, 13, 4, 2, 4, 256, 64, 3.25, 4 << 10},
		{10, 4, 12, 3, 1, 5, 243, 81, 4.00, (1 << 20) / 243},
		{12, 4, 15, 4, 0, 4, 256, 64, 3.75, 4 << 10},
		{16, 4, 19, 4, 0, 5, 1024, 256, 4.75, 1 << 10},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("clay-%d-%d-%d", tc.k, tc.m, tc.d), func(t *testing.T) {
			c := mustNew(t, tc.k, tc.m, tc.d)
			g := c.g
			if g.q != tc.q || g.nu != tc.nu || g.t != tc.t || g.alpha != tc.alpha || g.beta != tc.b {
				t.Fatalf("q=%d ν=%d t=%d α=%d β=%d, want %d %d %d %d %d", g.q, g.nu, g.t, g.alpha, g.beta, tc.q, tc.nu, tc.t, tc.alpha, tc.b)
			}
			if p := c.Params(); p.Alpha != tc.alpha || p.ShardMultiple != tc.alpha || p.K != tc.k || p.M != tc.m {
				t.Fatalf("Params() = %+v", p)
			}
			if got := float64(tc.d*g.beta) / float64(g.alpha); got != tc.repair {
				t.Fatalf("d·β/α = %v, want %v", got, tc.repair)
			}
			if got := float64(tc.d) / float64(tc.d-tc.k+1); got != tc.repair {
				t.Fatalf("d/(d−k+1) = %v, want %v", got, tc.repair)
			}
			if sc := (1 << 20) / g.alpha; sc != tc.subChunk1MiB {
				t.Fatalf("sub-chunk at 1 MiB = %d, want %d", sc, tc.subChunk1MiB)
			}
			if want := fmt.Sprintf("clay-%d-%d-%d", tc.k, tc.m, tc.d); c.Policy().String() != want {
				t.Fatalf("policy %s, want %s", c.Policy(), want)
			}
		})
	}
}

// docs/codes.md#clay-parameters, the limits: k+1 ≤ d ≤ k+m−1, k+m+ν ≤
// MaxNodes, α ≤ MaxAlpha.
func TestParameterLimits(t *testing.T) {
	tests := []struct {
		k, m, d int
		ok      bool
	}{
		{1, 2, 2, true},    // smallest: q=2, ν=1, t=2
		{4, 2, 5, true},    //
		{0, 2, 1, false},   // K < 1
		{4, 1, 4, false},   // M < 2: no d in K+1..K+M−1
		{4, 2, 4, false},   // d = K
		{4, 2, 6, false},   // d = K+M
		{20, 4, 23, true},  // q=4, t=6: α = 4096 = MaxAlpha
		{21, 4, 24, false}, // q=4, ν=3, t=7: α = 16384
		{30, 2, 31, false}, // q=2, t=16: α = 65536
		{250, 8, 257, false},
		{249, 5, 250, false}, // q=2, n=254 nodes but α = 2^127
	}
	for _, tc := range tests {
		_, err := New(tc.k, tc.m, tc.d)
		if tc.ok && err != nil {
			t.Errorf("New(%d,%d,%d): %v", tc.k, tc.m, tc.d, err)
		}
		if !tc.ok && !errorsIsInvalid(err) {
			t.Errorf("New(%d,%d,%d) = %v, want ErrInvalidParams", tc.k, tc.m, tc.d, err)
		}
	}
}

// docs/codes.md#clay-geometry: data shard j → node j, ν virtual nodes
// k..k+ν−1, parity shard j → node j+ν; x = i mod q, y = i div q; plane z has
// digits z_0 (most significant) .. z_{t−1}; (x, y, z) is a dot iff z_y = x,
// else its companion is (z_y, y) in the plane with digit y set to x. Pairing
// is an involution within a y-section.
func TestIndexingAndCompanions(t *testing.T) {
	c := mustNew(t, 10, 4, 13) // q=4, ν=2, t=4
	g := &c.g
	for j := range 14 {
		if i := g.node(j); g.shard(i) != j || g.virtual(i) {
			t.Fatalf("shard %d → node %d → shard %d", j, i, g.shard(i))
		}
	}
	if g.node(9) != 9 || g.node(10) != 12 || !g.virtual(10) || !g.virtual(11) || g.shard(11) != -1 {
		t.Fatal("virtual nodes must sit between data and parity")
	}
	// z = 27 = 0·64 + 1·16 + 2·4 + 3: digits (0, 1, 2, 3).
	for y, want := range []int{0, 1, 2, 3} {
		if d := g.digit(27, y); d != want {
			t.Fatalf("digit %d of 27 = %d, want %d", y, d, want)
		}
	}
	dots := 0
	for i := range g.n {
		for z := range g.alpha {
			j, zs, ok := g.companion(i, z)
			if !ok {
				dots++
				if !g.isDot(i, z) {
					t.Fatalf("(%d, %d) has no companion but is not a dot", i, z)
				}
				continue
			}
			if j/g.q != i/g.q || j == i {
				t.Fatalf("companion of (%d,%d) is node %d: not a column-mate", i, z, j)
			}
			if i2, z2, ok := g.companion(j, zs); !ok || i2 != i || z2 != z {
				t.Fatalf("pairing is not an involution at (%d,%d)", i, z)
			}
			if g.digit(zs, i/g.q) != i%g.q {
				t.Fatalf("companion plane %d of (%d,%d) must have digit y = x", zs, i, z)
			}
		}
	}
	// Every plane has exactly one dot per y-section.
	if dots != g.t*g.alpha {
		t.Fatalf("%d dots, want t·α = %d", dots, g.t*g.alpha)
	}
}

// docs/codes.md#clay-coupling: the pairwise transform is invertible and any
// two of {C, C*, U, U*} determine the other two — checked for both forms
// through the operations the decoders use.
func TestTransformAnyTwoOfFour(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for name, tf := range map[string]transform{"ceph": cephForm, "symmetric": symmetricForm} {
		t.Run(name, func(t *testing.T) {
			m := tf.m
			if det := gf.Mul(m[0][0], m[1][1]) ^ gf.Mul(m[0][1], m[1][0]); det == 0 {
				t.Fatal("singular")
			}
			for _, e := range []byte{m[0][0], m[0][1], m[1][0], m[1][1]} {
				if e == 0 {
					t.Fatal("a zero entry: some pair of the four would not determine the rest")
				}
			}
			const n = 200
			c := [2][]byte{randBytes(rng, n), randBytes(rng, n)}
			var u [2][]byte
			for s := range 2 {
				u[s] = make([]byte, n)
				tf.uncouple(u[s], s, c[s], c[1-s])
				for b := range n { // the definition, byte by byte
					if want := gf.Mul(m[s][0], c[0][b]) ^ gf.Mul(m[s][1], c[1][b]); u[s][b] != want {
						t.Fatalf("uncouple side %d byte %d", s, b)
					}
				}
			}
			check := func(what string, got, want []byte) {
				t.Helper()
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: wrong", what)
				}
			}
			// (U_lo, U_hi) → (C_lo, C_hi)
			lo, hi := bytes.Clone(u[0]), bytes.Clone(u[1])
			tf.recouplePair(lo, hi)
			check("pair", lo, c[0])
			check("pair", hi, c[1])
			for s := range 2 {
				o := 1 - s
				// (U_s, C_o) → C_s
				x := bytes.Clone(u[s])
				tf.recouple(x, s, c[o])
				check("recouple", x, c[s])
				// (C_s, U_s) → C_o
				x = make([]byte, n)
				tf.companionC(x, s, u[s], c[s])
				check("companion C", x, c[o])
				// (C_s, U_o) → U_s
				x = make([]byte, n)
				tf.uncoupleFromU(x, s, c[s], u[o])
				check("uncouple from U", x, u[s])
			}
		})
	}
}

// Paper §3 / docs/codes.md#clay-coupling: in every layer (plane) z the
// uncoupled symbols (U(0,z), …, U(n−1,z)) form a codeword of the scalar
// [n, k+ν] MDS code, and the virtual nodes store zeros. Checked against an
// independent, byte-by-byte computation of U from the stored C.
func TestUncoupledLayersAreCodewords(t *testing.T) {
	rng := codectest.Rand(t)
	for _, p := range [][3]int{{4, 2, 5}, {10, 4, 13}, {10, 4, 12}, {5, 4, 7}, {1, 2, 2}} {
		c := mustNew(t, p[0], p[1], p[2])
		t.Run(c.Policy().String(), func(t *testing.T) {
			g := &c.g
			sc := 3
			shards := codectest.Stripe(t, c, rng, g.alpha*sc)
			C := func(i, z, b int) byte {
				if g.virtual(i) {
					return 0
				}
				return shards[g.shard(i)][z*sc+b]
			}
			U := func(i, z, b int) byte {
				j, zs, ok := g.companion(i, z)
				if !ok {
					return C(i, z, b)
				}
				s := side(i%g.q, j%g.q)
				return gf.Mul(c.tf.m[s][s], C(i, z, b)) ^ gf.Mul(c.tf.m[s][1-s], C(j, zs, b))
			}
			kk := g.k + g.nu
			for z := range g.alpha {
				for b := range sc {
					for r := kk; r < g.n; r++ {
						var want byte
						for col := range kk {
							want ^= gf.Mul(c.gen[r][col], U(col, z, b))
						}
						if got := U(r, z, b); got != want {
							t.Fatalf("plane %d byte %d: U of parity node %d is not the scalar code's", z, b, r)
						}
					}
				}
			}
		})
	}
}

// Paper §3 (Theorem: the Clay code is MDS) /
// docs/codes.md#clay-layered-decode: any K of the K+M shards determine the
// stripe. Checked as a rank property of the code's generator over GF(2^8) —
// K·α×K·α submatrices for every K-subset — built by encoding unit vectors
// (1-byte sub-chunks). Small codes only; the conformance suite decodes every
// pattern of the larger ones.
func TestMDSProperty(t *testing.T) {
	for _, p := range [][3]int{{4, 2, 5}, {3, 3, 4}, {4, 3, 5}, {2, 2, 3}, {1, 2, 2}} {
		c := mustNew(t, p[0], p[1], p[2])
		t.Run(c.Policy().String(), func(t *testing.T) {
			gen := generatorRows(t, c)
			k, n, alpha := c.g.k, c.g.k+c.g.m, c.g.alpha
			subsets := 0
			forSubsets(n, k, func(nodes []int) {
				span := gf.NewSpan(k * alpha)
				for _, j := range nodes {
					for z := range alpha {
						span.Add(gen[j*alpha+z])
					}
				}
				if span.Rank() != k*alpha {
					t.Fatalf("shards %v have rank %d < K·α = %d", nodes, span.Rank(), k*alpha)
				}
				subsets++
			})
			t.Logf("%d subsets of %d shards all of full rank %d", subsets, k, k*alpha)
		})
	}
}

// generatorRows returns the (n·α)×(k·α) generator of c: row j·α+z gives
// sub-chunk z of shard j as a combination of the k·α data sub-chunks.
func generatorRows(t *testing.T, c *Code) [][]byte {
	k, n, alpha := c.g.k, c.g.k+c.g.m, c.g.alpha
	rows := make([][]byte, n*alpha)
	for r := range rows {
		rows[r] = make([]byte, k*alpha)
	}
	for col := range k * alpha {
		shards := make([][]byte, n)
		for j := range k {
			shards[j] = make([]byte, alpha)
		}
		shards[col/alpha][col%alpha] = 1
		if err := c.Encode(shards); err != nil {
			t.Fatal(err)
		}
		for j := range n {
			for z := range alpha {
				rows[j*alpha+z][col] = shards[j][z]
			}
		}
	}
	return rows
}

func forSubsets(n, k int, fn func([]int)) {
	idx := make([]int, k)
	var rec func(pos, start int)
	rec = func(pos, start int) {
		if pos == k {
			fn(idx)
			return
		}
		for i := start; i <= n-(k-pos); i++ {
			idx[pos] = i
			rec(pos+1, i+1)
		}
	}
	rec(0, 0)
}

// docs/codes.md#clay-layered-decode, step 2: the intersection score IS(z)
// counts erased dots in plane z; decoding goes by score, lowest first; the
// highest score is the number of distinct y-sections the erasures hit.
func TestDecodeOrderByIntersectionScore(t *testing.T) {
	c := mustNew(t, 10, 4, 13)
	g := &c.g
	for _, lost := range [][]int{{0}, {0, 1}, {0, 4}, {0, 4, 8, 13}, {12, 13, 14, 15}} {
		p, err := newDecodePlan(g, c.gen, lost)
		if err != nil {
			t.Fatal(err)
		}
		cols := map[int]bool{}
		for _, e := range lost {
			cols[e/g.q] = true
		}
		if len(p.levels)-1 != len(cols) {
			t.Fatalf("erased %v: max score %d, want %d distinct y-sections", lost, len(p.levels)-1, len(cols))
		}
		total := 0
		for s, level := range p.levels {
			if !slices.IsSorted(level) {
				t.Fatalf("erased %v: planes of score %d not ascending", lost, s)
			}
			for _, z := range level {
				n := 0
				for _, e := range lost {
					if g.isDot(e, int(z)) {
						n++
					}
				}
				if n != s {
					t.Fatalf("erased %v: plane %d listed at score %d has %d erased dots", lost, z, s, n)
				}
			}
			total += len(level)
		}
		if total != g.alpha {
			t.Fatalf("erased %v: %d planes scheduled, want α = %d", lost, total, g.alpha)
		}
	}
}

// docs/codes.md#clay-repair / paper §3 repair: a lost node L = (x0, y0) is
// rebuilt from d helpers (its real column-mates, then others up to d), each
// sending the β sub-chunks of the planes with z_{y0} = x0: d·β sub-chunks in
// all, d/(d−k+1) chunks, against k for Reed–Solomon.
func TestRepairBandwidth(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, p := range [][3]int{{4, 2, 5}, {6, 3, 8}, {8, 4, 11}, {10, 4, 13}, {10, 4, 12}, {12, 4, 15}, {5, 4, 7}, {3, 3, 4}} {
		c := mustNew(t, p[0], p[1], p[2])
		t.Run(c.Policy().String(), func(t *testing.T) {
			g := &c.g
			n := g.k + g.m
			sc := 5
			size := g.alpha * sc
			for lost := range n {
				avail := others(n, lost)
				rng.Shuffle(len(avail), func(i, j int) { avail[i], avail[j] = avail[j], avail[i] })
				plan, err := c.SubChunkPlan(lost, avail, size)
				if err != nil {
					t.Fatal(err)
				}
				if len(plan.Helpers) != g.d {
					t.Fatalf("lost %d: %d helpers, want d = %d", lost, len(plan.Helpers), g.d)
				}
				for _, h := range plan.Helpers {
					if len(h.SubChunks) != g.beta || h.Bytes() != g.beta*sc {
						t.Fatalf("lost %d: helper %d reads %d sub-chunks (%d bytes), want β = %d", lost, h.Shard, len(h.SubChunks), h.Bytes(), g.beta)
					}
				}
				if plan.ReadBytes() != g.d*g.beta*sc {
					t.Fatalf("lost %d: reads %d bytes, want d·β·sc = %d", lost, plan.ReadBytes(), g.d*g.beta*sc)
				}
				if plan.ReadBytes()*(g.d-g.k+1) != g.d*size || plan.ReadBytes() >= g.k*size {
					t.Fatalf("lost %d: reads %d bytes, want d/(d−k+1) = %d/%d shards < k", lost, plan.ReadBytes(), g.d, g.d-g.k+1)
				}
				// The column-mates are always helpers (their U cannot be
				// computed without the lost node).
				l := g.node(lost)
				for x := range g.q {
					mate := l/g.q*g.q + x
					if mate == l || g.virtual(mate) {
						continue
					}
					if !slices.ContainsFunc(plan.Helpers, func(h codec.HelperRead) bool { return h.Shard == g.shard(mate) }) {
						t.Fatalf("lost %d: column-mate shard %d is not a helper", lost, g.shard(mate))
					}
				}
			}
		})
	}
}

// docs/codes.md#clay-repair (Ceph's get_repair_subchunks): for L = (x0, y0)
// the repair planes form q^{y0} runs of q^{t−1−y0} sub-chunks, run j starting
// at j·q^{t−y0} + x0·q^{t−1−y0}.
func TestRepairRunLayout(t *testing.T) {
	for _, p := range [][3]int{{4, 2, 5}, {6, 3, 8}, {10, 4, 13}, {16, 4, 19}} {
		c := mustNew(t, p[0], p[1], p[2])
		g := &c.g
		sc := 7
		for lost := range g.k + g.m {
			plan, err := c.SubChunkPlan(lost, others(g.k+g.m, lost), g.alpha*sc)
			if err != nil {
				t.Fatal(err)
			}
			l := g.node(lost)
			x0, y0 := l%g.q, l/g.q
			runLen := g.pow[y0]
			var want []codec.Run
			for j := range g.alpha / (g.q * runLen) {
				start := j*g.q*runLen + x0*runLen
				want = append(want, codec.Run{Offset: start * sc, Length: runLen * sc})
			}
			for _, h := range plan.Helpers {
				if !slices.Equal(h.Runs, want) {
					t.Fatalf("%s lost %d (x0=%d, y0=%d): runs %v, want %v", c.Policy(), lost, x0, y0, h.Runs, want)
				}
				for i, z := range h.SubChunks {
					if g.digit(z, y0) != x0 || (i > 0 && z <= h.SubChunks[i-1]) {
						t.Fatalf("%s lost %d: sub-chunk %d is not an ascending repair plane", c.Policy(), lost, z)
					}
				}
			}
		}
	}
}

// docs/codes.md#clay-repair: with d < k+m−1 the n−1−d available shards not
// chosen are aloof — never read — and the repair still reads exactly d·β
// sub-chunks. With shortening the ν virtual nodes are never read and count as
// neither helpers nor aloof.
func TestAloofAndVirtualNodes(t *testing.T) {
	for _, p := range [][3]int{{10, 4, 12}, {5, 4, 7}, {3, 3, 4}, {7, 4, 9}, {10, 4, 13}} {
		c := mustNew(t, p[0], p[1], p[2])
		g := &c.g
		n := g.k + g.m
		for lost := range n {
			s, err := c.repairSchedule(lost, others(n, lost))
			if err != nil || s == nil {
				t.Fatalf("%s lost %d: no schedule (%v)", c.Policy(), lost, err)
			}
			if len(s.aloof) != n-1-g.d {
				t.Fatalf("%s lost %d: %d aloof, want n−1−d = %d", c.Policy(), lost, len(s.aloof), n-1-g.d)
			}
			for _, h := range s.helpers {
				if g.virtual(h) {
					t.Fatalf("%s lost %d: virtual node %d chosen as a helper", c.Policy(), lost, h)
				}
			}
			// Erased per repair plane: the lost node's y-section plus the
			// aloof nodes, m in all (one m-erasure decode per plane).
			if len(s.erased) != g.m || len(s.inputs) != g.k+g.nu {
				t.Fatalf("%s lost %d: %d erased, %d inputs", c.Policy(), lost, len(s.erased), len(s.inputs))
			}
		}
	}
}

func others(n, lost int) []int {
	var out []int
	for i := range n {
		if i != lost {
			out = append(out, i)
		}
	}
	return out
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}
