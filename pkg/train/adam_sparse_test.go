package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rocone/rocone/pkg/model"
)

// sparseFixture is a small parameter set: an entity table, a relation table and a dense
// weight, with cols not a multiple of 16 so that both the vector and the scalar loop run.
func sparseFixture(entities, relations, cols int, seed uint64) []model.Tensor[float32] {
	r := rand.New(rand.NewPCG(seed, 1))
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	return []model.Tensor[float32]{
		{Name: "entity", Data: fill(entities * cols), Rows: entities, Cols: cols},
		{Name: "relation.axis", Data: fill(relations * cols), Rows: relations, Cols: cols},
		{Name: "modulus", Data: fill(1), Rows: 1, Cols: 1},
		{Name: "intersection.w1", Data: fill(7 * cols), Rows: 7, Cols: cols},
	}
}

func cloneTensors(ts []model.Tensor[float32]) []model.Tensor[float32] {
	out := slices.Clone(ts)
	for i := range out {
		out[i].Data = slices.Clone(ts[i].Data)
	}
	return out
}

// TestSparseAdamMatchesDense runs dense Adam and sparse Adam side by side on the same
// gradients. Rows touched at every update and the dense tensors must end bit-identical
// in both (values and moments); rows never touched must be bit-identical to their start
// under sparse Adam (while dense Adam, for rows touched once, moves them afterwards); a
// row touched only at update k must equal one Adam step from zero moments with the bias
// corrections of the global step k (SparseAdam's semantics). Worker counts must not
// change anything.
func TestSparseAdamMatchesDense(t *testing.T) {
	const entities, relations, cols, updates = 300, 9, 37, 6
	always := []int32{0, 5, 17, 42, 299}  // touched at every update
	never := []int32{1, 2, 100, 200, 298} // never touched
	once := map[int32]int{7: 3, 150: 5}   // touched at this update only (1-based)
	relAlways := []int32{0, 4}            // relation rows touched at every update
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			start := sparseFixture(entities, relations, cols, 7)
			dense, sparse := cloneTensors(start), cloneTensors(start)
			ad, as := NewAdam(dense, 1e-2), NewAdam(sparse, 1e-2)
			r := rand.New(rand.NewPCG(11, 2))
			for u := 1; u <= updates; u++ {
				grads := cloneTensors(start)
				for i := range grads {
					clear(grads[i].Data)
				}
				ent := slices.Clone(always)
				for row, at := range once {
					if at == u {
						ent = append(ent, row)
					}
				}
				// Some rows touched now and then, in a shuffled order.
				for range 20 {
					row := int32(r.IntN(entities))
					if !slices.Contains(never, row) && !slices.Contains(ent, row) {
						if _, ok := once[row]; !ok {
							ent = append(ent, row)
						}
					}
				}
				r.Shuffle(len(ent), func(i, j int) { ent[i], ent[j] = ent[j], ent[i] })
				if u%2 == 0 {
					// Sorted, as TouchedRows gives them, with a run of consecutive rows:
					// updated as one span.
					for _, row := range []int32{60, 61, 62, 63} {
						if !slices.Contains(ent, row) {
							ent = append(ent, row)
						}
					}
					slices.Sort(ent)
				}
				for _, row := range ent {
					for j := range cols {
						grads[0].Data[int(row)*cols+j] = float32(r.NormFloat64())
					}
				}
				for _, row := range relAlways {
					for j := range cols {
						grads[1].Data[int(row)*cols+j] = float32(r.NormFloat64())
					}
				}
				for _, i := range []int{2, 3} {
					for j := range grads[i].Data {
						grads[i].Data[j] = float32(r.NormFloat64())
					}
				}
				if err := ad.Update(dense, grads, workers); err != nil {
					t.Fatal(err)
				}
				if err := as.UpdateRows(sparse, grads, [][]int32{ent, relAlways, nil, nil}, workers); err != nil {
					t.Fatal(err)
				}
			}
			same := func(what string, a, b []float32) {
				t.Helper()
				for j := range a {
					if math.Float32bits(a[j]) != math.Float32bits(b[j]) {
						t.Fatalf("%s: element %d: %v, want %v", what, j, a[j], b[j])
					}
				}
			}
			rowOf := func(x []float32, row int32) []float32 { return x[int(row)*cols : int(row+1)*cols] }
			for _, row := range always {
				same(fmt.Sprintf("entity row %d (always touched)", row), rowOf(sparse[0].Data, row), rowOf(dense[0].Data, row))
				same(fmt.Sprintf("entity row %d m", row), rowOf(as.M[0], row), rowOf(ad.M[0], row))
				same(fmt.Sprintf("entity row %d v", row), rowOf(as.V[0], row), rowOf(ad.V[0], row))
			}
			for _, row := range relAlways {
				same(fmt.Sprintf("relation row %d", row), rowOf(sparse[1].Data, row), rowOf(dense[1].Data, row))
			}
			for _, i := range []int{2, 3} {
				same(sparse[i].Name, sparse[i].Data, dense[i].Data)
				same(sparse[i].Name+" m", as.M[i], ad.M[i])
				same(sparse[i].Name+" v", as.V[i], ad.V[i])
			}
			zero := make([]float32, cols)
			for _, row := range never {
				same(fmt.Sprintf("entity row %d (never touched)", row), rowOf(sparse[0].Data, row), rowOf(start[0].Data, row))
				same(fmt.Sprintf("entity row %d m (never touched)", row), rowOf(as.M[0], row), zero)
			}
			for rr := int32(0); rr < relations; rr++ {
				if !slices.Contains(relAlways, rr) {
					same(fmt.Sprintf("relation row %d (never touched)", rr), rowOf(sparse[1].Data, rr), rowOf(start[1].Data, rr))
				}
			}
			// A row touched once, at update k: one step from zero moments, with t = k.
			for row, k := range once {
				if k == updates {
					continue // dense Adam agrees on a row touched last; covered by always
				}
				p := rowOf(sparse[0].Data, row)
				if slices.Equal(p, rowOf(start[0].Data, row)) {
					t.Fatalf("row %d touched at update %d did not move", row, k)
				}
				if slices.Equal(p, rowOf(dense[0].Data, row)) {
					t.Fatalf("row %d touched at update %d only: sparse equals dense Adam, which keeps moving it", row, k)
				}
				// Replay: a fresh optimiser with k−1 updates of nothing before.
				solo := []model.Tensor[float32]{{Name: "entity", Data: slices.Clone(rowOf(start[0].Data, row)), Rows: 1, Cols: cols}}
				a := NewAdam(solo, 1e-2)
				a.Step = int64(k - 1)
				m0 := rowOf(as.M[0], row)
				g := make([]float32, cols)
				for j := range g {
					g[j] = m0[j] / float32(1-a.Beta1) // m after one step from zero is (1−β1)·g
				}
				if err := a.UpdateRows(solo, []model.Tensor[float32]{{Data: g}}, [][]int32{{0}}, 1); err != nil {
					t.Fatal(err)
				}
				for j := range p {
					if d := math.Abs(float64(solo[0].Data[j] - p[j])); !(d <= 1e-6) {
						t.Fatalf("row %d element %d: %v, want %v (one step at t=%d)", row, j, p[j], solo[0].Data[j], k)
					}
				}
			}
		})
	}
}

// TestSparseAdamNonFinite checks that a touched row that becomes infinite is reported.
func TestSparseAdamNonFinite(t *testing.T) {
	ps := sparseFixture(10, 2, 5, 3)
	gs := cloneTensors(ps)
	for i := range gs {
		clear(gs[i].Data)
	}
	a := NewAdam(ps, 1e-2)
	ps[0].Data[3*5+2] = float32(math.Inf(1))
	err := a.UpdateRows(ps, gs, [][]int32{{3}, {}, nil, nil}, 1)
	var nf *NonFiniteError
	if !errors.As(err, &nf) || nf.Tensor != "entity" || nf.Index != 17 {
		t.Fatalf("got %v, want entity[17] non-finite", err)
	}
	// An untouched infinite row is not looked at.
	ps = sparseFixture(10, 2, 5, 3)
	ps[0].Data[4*5] = float32(math.Inf(1))
	if err := NewAdam(ps, 1e-2).UpdateRows(ps, gs, [][]int32{{3}, {}, nil, nil}, 1); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkAdam times one update of dense and sparse Adam on an entity table of d=200 at
// growing entity counts, with the rows of a b=512, n=128 batch touched (about 66k draws):
// dense grows with the table, sparse with the batch.
func BenchmarkAdam(b *testing.B) {
	const d, draws = 200, 512 * 130
	for _, n := range []int{15_000, 150_000, 600_000} {
		ps := []model.Tensor[float32]{
			{Name: "entity", Data: make([]float32, n*d), Rows: n, Cols: d},
			{Name: "intersection.w1", Data: make([]float32, 2*d*d), Rows: d, Cols: 2 * d},
		}
		gs := cloneTensors(ps)
		r := rand.New(rand.NewPCG(1, 1))
		seen := make([]bool, n)
		var rows []int32
		for range draws {
			e := int32(r.IntN(n))
			if !seen[e] {
				seen[e] = true
				rows = append(rows, e)
			}
		}
		for _, e := range rows {
			for j := range d {
				gs[0].Data[int(e)*d+j] = 0.01
			}
		}
		for _, kind := range []string{"dense", "sparse"} {
			b.Run(fmt.Sprintf("%s/entities=%d", kind, n), func(b *testing.B) {
				a := NewAdam(ps, 1e-3)
				for b.Loop() {
					if kind == "dense" {
						_ = a.Update(ps, gs, 2)
					} else {
						_ = a.UpdateRows(ps, gs, [][]int32{rows, nil}, 2)
					}
				}
				b.ReportMetric(float64(len(rows)), "rows-touched")
			})
		}
	}
}

// TestUpdateRowsZero checks that UpdateRowsZero updates exactly as UpdateRows (parameters
// and moments bit-identical) and leaves zero every gradient element it was given: the
// dense tensors, the listed rows of the tables, and those of a tensor not started yet
// (which it must not update); rows not listed are not its business and keep their values.
func TestUpdateRowsZero(t *testing.T) {
	const entities, relations, cols = 120, 6, 37
	for _, tc := range []struct {
		name     string
		workers  int
		deferred bool // the relation table not started (DeferStart, Reach without it)
	}{
		{"workers=1", 1, false},
		{"workers=3", 3, false},
		{"relation table not started", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := sparseFixture(entities, relations, cols, 5)
			p1, p2 := cloneTensors(start), cloneTensors(start)
			a1, a2 := NewAdam(p1, 1e-2), NewAdam(p2, 1e-2)
			if tc.deferred {
				reached := []bool{true, false, true, true}
				for _, a := range []*Adam{a1, a2} {
					a.DeferStart()
					a.Reach(reached)
				}
			}
			rows := [][]int32{{0, 3, 4, 5, 60, 119}, {1, 5}, nil, nil}
			r := rand.New(rand.NewPCG(3, 4))
			for u := 0; u < 3; u++ {
				g := cloneTensors(start)
				for i := range g {
					clear(g[i].Data)
					if rows[i] == nil {
						for j := range g[i].Data {
							g[i].Data[j] = float32(r.NormFloat64())
						}
					}
					for _, row := range rows[i] {
						for j := range cols {
							g[i].Data[int(row)*cols+j] = float32(r.NormFloat64())
						}
					}
				}
				const sentinel = 7 // a row not listed, which UpdateRowsZero must leave alone
				g[0].Data[sentinel*cols] = 1.5
				g2 := cloneTensors(g)
				if err := a1.UpdateRows(p1, g, rows, tc.workers); err != nil {
					t.Fatal(err)
				}
				if err := a2.UpdateRowsZero(p2, g2, rows, tc.workers); err != nil {
					t.Fatal(err)
				}
				for i := range p1 {
					for j := range p1[i].Data {
						if math.Float32bits(p1[i].Data[j]) != math.Float32bits(p2[i].Data[j]) ||
							math.Float32bits(a1.M[i][j]) != math.Float32bits(a2.M[i][j]) ||
							math.Float32bits(a1.V[i][j]) != math.Float32bits(a2.V[i][j]) {
							t.Fatalf("update %d: %s[%d] differs from UpdateRows'", u, p1[i].Name, j)
						}
					}
					for j, x := range g2[i].Data {
						want := float32(0)
						if i == 0 && j == sentinel*cols {
							want = 1.5
						}
						if x != want {
							t.Fatalf("update %d: gradient %s[%d] = %v, want %v", u, p1[i].Name, j, x, want)
						}
					}
				}
			}
			if tc.deferred && !slices.Equal(p2[1].Data, start[1].Data) {
				t.Fatal("the table not started was updated")
			}
		})
	}
}
