package grids_test

// Covering grids. The full cartesian product of the decode axes (formats × dtypes × GQA groups ×
// block sizes × layouts × split counts × query groups × modes × padding × sign patterns × ...) has
// hundreds of thousands of cases. A covering array of strength t holds, for every t axes, every
// combination of their values in at least one case: strength 2 ("pairwise") catches every defect
// that needs two axis values to show (G 6 with block size 48, bf16 with splits 1024), strength 3
// every defect that needs three. coveringArray builds one greedily (AETG: Cohen et al., IEEE TSE
// 1997), deterministically from a seed, and checkCovering verifies it.

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
)

// axis is one dimension of a grid: a name and its values (as they appear in case paths).
type axis struct {
	name   string
	values []string
}

// forbid is a pair of axis values no case may combine (a budget constraint of the -short grids,
// documented where it is used). Combinations that contain a forbidden pair are not required.
type forbid struct{ a, va, b, vb string }

// allowed reports whether a (partial) row — value indices, −1 for unset — contains no forbidden
// pair.
func allowed(axes []axis, fb []forbid, row []int) bool {
	for _, f := range fb {
		ia, ib := axisIndex(axes, f.a), axisIndex(axes, f.b)
		if ia < 0 || ib < 0 || row[ia] < 0 || row[ib] < 0 {
			continue
		}
		if axes[ia].values[row[ia]] == f.va && axes[ib].values[row[ib]] == f.vb {
			return false
		}
	}
	return true
}

func axisIndex(axes []axis, name string) int {
	for i, a := range axes {
		if a.name == name {
			return i
		}
	}
	return -1
}

// tupleRow is a row holding only the values of tuple ti of combo c (−1 elsewhere).
func tupleRow(axes []axis, c []int, ti int) []int {
	row := make([]int, len(axes))
	for i := range row {
		row[i] = -1
	}
	for j := len(c) - 1; j >= 0; j-- {
		a := c[j]
		row[a] = ti % len(axes[a].values)
		ti /= len(axes[a].values)
	}
	return row
}

// combos lists every set of t axis indices (increasing).
func combos(n, t int) [][]int {
	var out [][]int
	var rec func(start int, cur []int)
	rec = func(start int, cur []int) {
		if len(cur) == t {
			out = append(out, append([]int(nil), cur...))
			return
		}
		for i := start; i < n; i++ {
			rec(i+1, append(cur, i))
		}
	}
	rec(0, nil)
	return out
}

// tupleIndex is the mixed-radix index of row's values on the axes of combo c.
func tupleIndex(axes []axis, c []int, row []int) int {
	idx := 0
	for _, a := range c {
		idx = idx*len(axes[a].values) + row[a]
	}
	return idx
}

func tupleCount(axes []axis, c []int) int {
	n := 1
	for _, a := range c {
		n *= len(axes[a].values)
	}
	return n
}

// coveringArray returns rows of value indices (one per axis) in which every combination of
// values of every `strength` axes appears. Greedy: each new row starts from a random uncovered
// tuple, fills the other axes one at a time (random order) with the value covering the most
// uncovered tuples (ties broken at random), and the best of several candidates is kept.
func coveringArray(axes []axis, strength int, fb []forbid, rng *rand.Rand) [][]int {
	n := len(axes)
	cs := combos(n, strength)
	uncovered := make([][]bool, len(cs))
	left := 0
	byAxis := make([][]int, n) // combos containing each axis
	for ci, c := range cs {
		uncovered[ci] = make([]bool, tupleCount(axes, c))
		for i := range uncovered[ci] {
			if allowed(axes, fb, tupleRow(axes, c, i)) {
				uncovered[ci][i] = true
				left++
			}
		}
		for _, a := range c {
			byAxis[a] = append(byAxis[a], ci)
		}
	}
	gain := func(row []int) int {
		g := 0
		for ci, c := range cs {
			if uncovered[ci][tupleIndex(axes, c, row)] {
				g++
			}
		}
		return g
	}
	var rows [][]int
	for left > 0 {
		// An uncovered tuple to start from.
		var seedC, seedT int
		k := rng.IntN(left)
		for ci := range cs {
			for ti, u := range uncovered[ci] {
				if u {
					if k == 0 {
						seedC, seedT = ci, ti
					}
					k--
				}
			}
		}
		var best []int
		bestGain := -1
		for cand := 0; cand < 24; cand++ {
			// Start from the seed tuple's values.
			row := tupleRow(axes, cs[seedC], seedT)
			fixed := make([]bool, n)
			for a := range row {
				fixed[a] = row[a] >= 0
			}
			for _, a := range rng.Perm(n) {
				if fixed[a] {
					continue
				}
				bestV, bestG, ties := -1, -1, 0
				for v := range axes[a].values {
					row[a] = v
					if !allowed(axes, fb, row) {
						continue
					}
					g := 0
					for _, ci := range byAxis[a] {
						ok := true
						for _, b := range cs[ci] {
							if !fixed[b] && b != a {
								ok = false
								break
							}
						}
						if ok && uncovered[ci][tupleIndex(axes, cs[ci], row)] {
							g++
						}
					}
					switch {
					case g > bestG:
						bestV, bestG, ties = v, g, 1
					case g == bestG:
						ties++
						if rng.IntN(ties) == 0 {
							bestV = v
						}
					}
				}
				row[a] = bestV
				fixed[a] = true
			}
			if g := gain(row); g > bestGain {
				best, bestGain = row, g
			}
		}
		for ci, c := range cs {
			ti := tupleIndex(axes, c, best)
			if uncovered[ci][ti] {
				uncovered[ci][ti] = false
				left--
			}
		}
		rows = append(rows, best)
	}
	return rows
}

// checkCovering returns an error naming the first allowed combination of `strength` axis values
// that no row holds, or a row holding a forbidden pair.
func checkCovering(axes []axis, strength int, fb []forbid, rows [][]int) error {
	for i, r := range rows {
		if !allowed(axes, fb, r) {
			return fmt.Errorf("grid case %d combines a forbidden pair of values", i)
		}
	}
	for _, c := range combos(len(axes), strength) {
		seen := make([]bool, tupleCount(axes, c))
		for _, r := range rows {
			seen[tupleIndex(axes, c, r)] = true
		}
		for ti, s := range seen {
			if s || !allowed(axes, fb, tupleRow(axes, c, ti)) {
				continue
			}
			var parts []string
			for j := len(c) - 1; j >= 0; j-- {
				a := c[j]
				parts = append(parts, axes[a].name+"="+axes[a].values[ti%len(axes[a].values)])
				ti /= len(axes[a].values)
			}
			sort.Strings(parts)
			return fmt.Errorf("grid of %d cases misses the combination %s", len(rows), strings.Join(parts, ", "))
		}
	}
	return nil
}

// gridCase is one row of a grid, by axis name.
type gridCase map[string]string

// buildGrid returns the rows of a covering array of the axes as maps from axis name to value,
// verified.
func buildGrid(axes []axis, strength int, fb []forbid, seed uint64) ([]gridCase, error) {
	rng := rand.New(rand.NewPCG(seed, 0x6772696400000000|uint64(strength)))
	rows := coveringArray(axes, strength, fb, rng)
	if err := checkCovering(axes, strength, fb, rows); err != nil {
		return nil, err
	}
	out := make([]gridCase, len(rows))
	for i, r := range rows {
		out[i] = gridCase{}
		for a, v := range r {
			out[i][axes[a].name] = axes[a].values[v]
		}
	}
	return out, nil
}
