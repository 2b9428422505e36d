package raidp

// forbidden is the cost of an edge that must not be used. Caller costs are
// bounded by MaxCost, so any assignment of at most MaxDisks·MaxDisks items
// that avoids forbidden edges costs less than one forbidden edge.
const forbidden = int64(1) << 50

// MaxCost bounds a receiver's cost (see Remirror).
const MaxCost = int64(1) << 30

// hungarian solves the rectangular assignment problem: cost is n rows of m
// ≥ n columns; it returns, for every row, the column assigned to it, so
// that no column is used twice and the total cost is minimal. It is the
// Hungarian algorithm with potentials (Kuhn–Munkres, O(n²m)). Callers mark
// edges that must not be used with the cost forbidden and check the result
// for them.
func hungarian(cost [][]int64, m int) []int {
	n := len(cost)
	const inf = int64(1) << 62
	// 1-based: u, v potentials; p[j] the row assigned to column j; way the
	// augmenting path.
	u := make([]int64, n+1)
	v := make([]int64, m+1)
	p := make([]int, m+1)
	way := make([]int, m+1)
	for i := 1; i <= n; i++ {
		p[0] = i
		j0 := 0
		minv := make([]int64, m+1)
		used := make([]bool, m+1)
		for j := range minv {
			minv[j] = inf
		}
		for {
			used[j0] = true
			i0, delta, j1 := p[j0], inf, 0
			for j := 1; j <= m; j++ {
				if used[j] {
					continue
				}
				if cur := cost[i0-1][j-1] - u[i0] - v[j]; cur < minv[j] {
					minv[j], way[j] = cur, j0
				}
				if minv[j] < delta {
					delta, j1 = minv[j], j
				}
			}
			for j := 0; j <= m; j++ {
				if used[j] {
					u[p[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
			if p[j0] == 0 {
				break
			}
		}
		for j0 != 0 {
			j1 := way[j0]
			p[j0] = p[j1]
			j0 = j1
		}
	}
	rowCol := make([]int, n)
	for j := 1; j <= m; j++ {
		if p[j] != 0 {
			rowCol[p[j]-1] = j - 1
		}
	}
	return rowCol
}
