package gpu

// AngleForward sets theta = π·tanh(raw/R), element-wise over len(raw).
func (d *Device) AngleForward(theta, raw *F32, R float32) error {
	c := check{op: "AngleForward"}
	c.f("theta", theta, raw.Len())
	if c.err != nil {
		return c.err
	}
	// Reads raw, writes theta; a division, tanhf and a multiply each.
	n := raw.Len()
	w := Work{Bytes: words(2 * n), FLOPs: flops(n, 3)}
	if d.quads(n, theta, raw) {
		return d.each("angle_fwd4", n/4, w, ptr(theta), ptr(raw), i32(n/4), f32(R))
	}
	return d.each("angle_fwd", n, w, ptr(theta), ptr(raw), i32(n), f32(R))
}

// AngleBackward adds to dRaw the gradient through AngleForward, from its output theta.
func (d *Device) AngleBackward(dRaw, dTheta, theta *F32, R float32) error {
	n := dTheta.Len()
	c := check{op: "AngleBackward"}
	c.f("dRaw", dRaw, n)
	c.f("theta", theta, n)
	if c.err != nil {
		return c.err
	}
	// Reads dTheta and theta, reads and writes dRaw; 6 FLOPs each.
	return d.each("angle_bwd", n, Work{Bytes: words(4 * n), FLOPs: flops(n, 6)}, ptr(dRaw), ptr(dTheta), ptr(theta), i32(n), f32(R))
}

// AngleGather sets theta[r] = π·tanh(table[idx[r]]/R) for rows r < len(idx) of width dim.
func (d *Device) AngleGather(theta, table *F32, idx *I32, dim int, R float32) error {
	rows := idx.Len()
	c := check{op: "AngleGather"}
	c.f("theta", theta, rows*dim)
	if c.err != nil {
		return c.err
	}
	// Reads the index and the gathered rows, writes theta; as angle_fwd.
	w := Work{Bytes: words(rows, gathered(rows, tableRows(table, dim))*dim, rows*dim), FLOPs: flops(rows*dim, 3)}
	return d.each("angle_gather_fwd", rows*dim, w, ptr(theta), ptr(table), ptr(idx), i32(rows), i32(dim), f32(R))
}

// AngleScatterBackward adds the gradient through AngleGather into the table's rows
// (atomically: indices may repeat).
func (d *Device) AngleScatterBackward(dTable, dTheta, theta *F32, idx *I32, dim int, R float32) error {
	rows := idx.Len()
	c := check{op: "AngleScatterBackward"}
	c.f("dTheta", dTheta, rows*dim)
	c.f("theta", theta, rows*dim)
	if c.err != nil {
		return c.err
	}
	// Reads the index, dTheta and theta, reads and writes the touched rows of dTable; as
	// angle_bwd.
	w := Work{Bytes: words(rows, 2*rows*dim, 2*gathered(rows, tableRows(dTable, dim))*dim), FLOPs: flops(rows*dim, 6)}
	return d.each("angle_scatter_bwd", rows*dim, w, ptr(dTable), ptr(dTheta), ptr(theta), ptr(idx), i32(rows), i32(dim), f32(R))
}
