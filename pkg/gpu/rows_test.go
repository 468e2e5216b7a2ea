package gpu

import (
	"fmt"
	"math"
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

// testRowsQuads runs GatherRows and RowsSum at a width of 20 (their float4 kernels), 19
// and on views 4 bytes off alignment (the scalar ones), against the plain loops, and
// checks that both kernels give the same bits.
func testRowsQuads(h *harness) {
	const tableRows, rows = 11, 40
	for _, c := range []struct {
		d, off int
	}{{20, 0}, {19, 0}, {20, 1}} {
		table := h.uniform(tableRows*c.d+c.off, -1, 1)
		idx := make([]int32, rows)
		for i := range idx {
			idx[i] = int32(h.rng.IntN(tableRows))
		}
		tb := table[c.off:]
		Tb, Ix := h.up(table).Slice(c.off, tableRows*c.d), h.upI(idx)
		want := make([]float32, rows*c.d)
		for r, id := range idx {
			copy(want[r*c.d:(r+1)*c.d], tb[int(id)*c.d:int(id+1)*c.d])
		}
		var got [2][]float32
		for k, scalar := range []bool{false, true} {
			h.d.noFloat4 = scalar
			G := h.zeros(rows*c.d+c.off).Slice(c.off, rows*c.d)
			h.ok(h.d.GatherRows(G, Tb, Ix, c.d))
			got[k] = h.down(G)
			compare(h.t, fmt.Sprintf("gather d=%d off=%d scalar=%v", c.d, c.off, scalar), want, got[k])
		}
		h.d.noFloat4 = false
		src := h.uniform(rows*c.d, -1, 1)
		dst := h.uniform(tableRows*c.d+c.off, -1, 1)
		sum := clone(dst[c.off:])
		for r, id := range idx {
			for j := range c.d {
				sum[int(id)*c.d+j] += src[r*c.d+j] // in increasing position, as RowsSum
			}
		}
		ix := RowCSR(idx, tableRows, nil)
		dix := DeviceRowIndex{Rows: h.upI(ix.Rows), Start: h.upI(ix.Start), Pairs: h.upI(ix.Pairs), N: len(ix.Rows)}
		for k, scalar := range []bool{false, true} {
			h.d.noFloat4 = scalar
			D := h.up(dst).Slice(c.off, tableRows*c.d)
			h.ok(h.d.RowsSum(D, h.up(src), dix, c.d))
			got[k] = h.down(D)
			compare(h.t, fmt.Sprintf("rows sum d=%d off=%d scalar=%v", c.d, c.off, scalar), sum, got[k])
		}
		h.d.noFloat4 = false
		for i := range got[0] {
			if math.Float32bits(got[0][i]) != math.Float32bits(got[1][i]) {
				h.t.Fatalf("rows sum d=%d off=%d: element %d is %g by float4, %g by float", c.d, c.off, i, got[0][i], got[1][i])
			}
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
