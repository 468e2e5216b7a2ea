package gpu

import (
	"fmt"
	"slices"
)

// GatherRows sets out[r] = table[idx[r]] for rows of width dim.
func (d *Device) GatherRows(out, table *F32, idx *I32, dim int) error {
	rows := idx.Len()
	c := check{op: "GatherRows"}
	c.f("out", out, rows*dim)
	if c.err != nil {
		return c.err
	}
	// Reads the index and the gathered rows, writes out.
	w := Work{Bytes: words(rows, gathered(rows, tableRows(table, dim))*dim, rows*dim)}
	if d.quads(dim, out, table) && rows > 0 {
		d4 := dim / 4
		return d.launch("gather_rows4", w, [3]int{ceilDiv(d4, rowsThreads), min(rows, d.gridY), 1}, [3]int{rowsThreads, 1, 1},
			ptr(out), ptr(table), ptr(idx), i32(rows), i32(d4))
	}
	return d.each("gather_rows", rows*dim, w, ptr(out), ptr(table), ptr(idx), i32(rows), i32(dim))
}

// quads reports whether rows of width dim of every buffer can be read as float4: dim a
// multiple of 4 and every buffer 16-byte aligned (and the row kernels' float4 versions
// not switched off, Device.noFloat4).
func (d *Device) quads(dim int, bufs ...*F32) bool {
	if d.noFloat4 || dim%4 != 0 {
		return false
	}
	for _, b := range bufs {
		if b == nil || b.Ptr()%16 != 0 {
			return false
		}
	}
	return true
}

// Fill sets every element of x to v.
func (d *Device) Fill(x *F32, v float32) error {
	return d.each("fill_f32", x.Len(), Work{Bytes: words(x.Len())}, ptr(x), f32(v), i32(x.Len()))
}

// RowIndex is a CSR grouping of the positions of an id list by id, built on the host
// (RowCSR): the distinct ids in order of first appearance, and for the u-th one its
// positions Pairs[Start[u]:Start[u+1]] in increasing order. It makes the sum over
// repeated rows deterministic (RowsSum), unlike an atomic scatter: each row's sum has a
// fixed order, and rows are independent of each other.
type RowIndex struct {
	Rows, Start, Pairs []int32
}

// RowCSR groups the positions of ids by id, for ids in [0, tableRows). count is scratch
// of at least tableRows zeros, returned zeroed (pass nil to allocate). It is the one
// CSR index of the package: gradients of gathered rows (RowsSum) and of the candidates
// of a distance (DistanceBackward) are summed through it.
func RowCSR(ids []int32, tableRows int, count []int32) RowIndex {
	var ix RowIndex
	RowCSRInto(&ix, ids, tableRows, count)
	return ix
}

// RowCSRInto is RowCSR into ix, reusing its arrays' storage.
func RowCSRInto(ix *RowIndex, ids []int32, tableRows int, count []int32) {
	if len(count) < tableRows {
		count = make([]int32, tableRows)
	}
	ix.Rows = ix.Rows[:0]
	for _, id := range ids {
		if count[id] == 0 {
			ix.Rows = append(ix.Rows, id)
		}
		count[id]++
	}
	ix.Start = slices.Grow(ix.Start[:0], len(ix.Rows)+1)[:len(ix.Rows)+1]
	ix.Start[0] = 0
	for u, r := range ix.Rows {
		ix.Start[u+1] = ix.Start[u] + count[r]
		count[r] = ix.Start[u] // now the next free slot of row r
	}
	ix.Pairs = slices.Grow(ix.Pairs[:0], len(ids))[:len(ids)]
	for p, id := range ids {
		ix.Pairs[count[id]] = int32(p)
		count[id]++
	}
	for _, r := range ix.Rows {
		count[r] = 0
	}
}

// DeviceRowIndex is a RowIndex on the device.
type DeviceRowIndex struct {
	Rows, Start, Pairs *I32
	N                  int // distinct rows
}

// RowsSum adds, for every distinct row u of ix, the sum of src's rows at its positions
// into dst's row ix.Rows[u]: dst[Rows[u]] += Σ src[Pairs[i]], rows of width dim, summed
// in increasing position (deterministic).
func (d *Device) RowsSum(dst, src *F32, ix DeviceRowIndex, dim int) error {
	c := check{op: "RowsSum"}
	c.f("src", src, ix.Pairs.Len()*dim)
	c.i("start", ix.Start, ix.N+1)
	c.i("rows", ix.Rows, ix.N)
	if c.err != nil || ix.N == 0 || dim == 0 {
		return c.err
	}
	if dst == nil {
		return fmt.Errorf("cuda: RowsSum: dst is nil")
	}
	// Reads the index (rows, start, pairs) and src's rows, reads and writes dst's rows;
	// one add per source element.
	np := ix.Pairs.Len()
	w := Work{Bytes: words(ix.N, ix.N+1, np, np*dim, 2*ix.N*dim), FLOPs: flops(np*dim, 1)}
	if d.quads(dim, dst, src) {
		d4 := dim / 4
		return d.launch("rows_sum_csr4", w, [3]int{ceilDiv(d4, rowsThreads), min(ix.N, d.gridY), 1}, [3]int{rowsThreads, 1, 1},
			ptr(dst), ptr(src), ptr(ix.Rows), ptr(ix.Start), ptr(ix.Pairs), i32(ix.N), i32(d4))
	}
	return d.launch("rows_sum_csr", w, [3]int{ceilDiv(dim, rowsThreads), min(ix.N, d.gridY), 1}, [3]int{rowsThreads, 1, 1},
		ptr(dst), ptr(src), ptr(ix.Rows), ptr(ix.Start), ptr(ix.Pairs), i32(ix.N), i32(dim))
}

const rowsThreads = 128

// Add sets dst += src (same length).
func (d *Device) Add(dst, src *F32) error {
	c := check{op: "Add"}
	c.f("dst", dst, src.Len())
	if c.err != nil {
		return c.err
	}
	return d.each("add_f32", src.Len(), Work{Bytes: words(3 * src.Len()), FLOPs: flops(src.Len(), 1)}, ptr(dst), ptr(src), i32(src.Len()))
}
