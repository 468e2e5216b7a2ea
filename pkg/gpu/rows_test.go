package gpu

import (
	"fmt"
	"testing"

	"github.com/rocone/rocone/pkg/model"
)

// testGather: gathers and scatter-adds of embedding rows, with repeated indices.
func testGather(h *harness) {
	const tableRows, rows, d, R = 13, 29, 19, 0.5
	table := h.uniform(tableRows*d, -2*R, 2*R)
	idx := make([]int32, rows)
	for i := range idx {
		idx[i] = int32(h.rng.IntN(tableRows))
	}
	Tb, Ix := h.up(table), h.upI(idx)
	// angle_gather_fwd and gather_rows against model.AngleForward on gathered rows.
	gathered := make([]float32, rows*d)
	for r, id := range idx {
		copy(gathered[r*d:(r+1)*d], table[int(id)*d:int(id+1)*d])
	}
	theta := make([]float32, rows*d)
	model.AngleForward(theta, gathered, float32(R))
	T, G := h.zeros(rows*d), h.zeros(rows*d)
	h.ok(h.d.AngleGather(T, Tb, Ix, d, R))
	h.ok(h.d.GatherRows(G, Tb, Ix, d))
	compare(h.t, "angle gather", theta, h.down(T))
	compare(h.t, "gather", gathered, h.down(G))
	// angle_scatter_bwd and scatter_add_rows.
	dTheta := h.uniform(rows*d, -1, 1)
	dTable, dTable2 := h.uniform(tableRows*d, -1, 1), h.uniform(tableRows*d, -1, 1)
	DT, DT2 := h.up(dTable), h.up(dTable2)
	for r, id := range idx {
		model.AngleBackward(dTable[int(id)*d:int(id+1)*d], dTheta[r*d:(r+1)*d], theta[r*d:(r+1)*d], float32(R))
		for j := 0; j < d; j++ {
			dTable2[int(id)*d+j] += dTheta[r*d+j]
		}
	}
	DTheta := h.up(dTheta)
	h.ok(h.d.AngleScatterBackward(DT, DTheta, T, Ix, d, R))
	h.ok(h.d.ScatterAddRows(DT2, DTheta, Ix, d))
	compare(h.t, "angle scatter", dTable, h.down(DT))
	compare(h.t, "scatter add", dTable2, h.down(DT2))
	F := h.zeros(37)
	h.ok(h.d.Fill(F, 1.5))
	for i, v := range h.down(F) {
		if v != 1.5 {
			h.t.Fatalf("fill[%d] = %g", i, v)
		}
	}
}

func TestRowCSR(t *testing.T) {
	count := make([]int32, 6)
	ix := RowCSR([]int32{4, 1, 4, 0, 1, 4}, 5, count)
	if got := fmt.Sprint(ix.Rows, ix.Start, ix.Pairs); got != "[4 1 0] [0 3 5 6] [0 2 5 1 4 3]" {
		t.Fatalf("RowCSR = %v", got)
	}
	if got := fmt.Sprint(count); got != "[0 0 0 0 0 0]" {
		t.Fatalf("RowCSR left its scratch %v, want it zeroed", got)
	}
	// Into an index that holds a longer one: the same result, in its storage.
	big := RowCSR([]int32{3, 2, 2, 0, 1, 4, 4, 3, 1}, 5, count)
	RowCSRInto(&big, []int32{4, 1, 4, 0, 1, 4}, 5, count)
	if got := fmt.Sprint(big.Rows, big.Start, big.Pairs); got != "[4 1 0] [0 3 5 6] [0 2 5 1 4 3]" {
		t.Fatalf("RowCSRInto over a longer index = %v", got)
	}
	RowCSRInto(&big, nil, 5, count)
	if got := fmt.Sprint(big.Rows, big.Start, big.Pairs); got != "[] [0] []" {
		t.Fatalf("RowCSRInto of no ids = %v", got)
	}
}

// ScatterAddRows adds src[r] into table[idx[r]] (atomically): the first version of the
// row sum, kept for the parity test and the kernel bench (scatter_add_rows) only; the
// model sums rows with RowsSum, whose order is fixed.
func (d *Device) ScatterAddRows(table, src *F32, idx *I32, dim int) error {
	rows := idx.Len()
	c := check{op: "ScatterAddRows"}
	c.f("src", src, rows*dim)
	if c.err != nil {
		return c.err
	}
	// Reads the index and src, reads and writes the touched table rows; one add each.
	w := Work{Bytes: words(rows, rows*dim, 2*gathered(rows, tableRows(table, dim))*dim), FLOPs: flops(rows*dim, 1)}
	return d.each("scatter_add_rows", rows*dim, w, ptr(table), ptr(src), ptr(idx), i32(rows), i32(dim))
}
