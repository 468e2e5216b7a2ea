package compute

// LinearForward implements Kernels.LinearForward: y = x·Wᵀ + b.
func (Reference[T]) LinearForward(y, x, w, b []T, rows, in, out int) {
	checkLen("linear y", y, rows*out)
	checkLen("linear x", x, rows*in)
	checkLen("linear w", w, out*in)
	if b != nil {
		checkLen("linear b", b, out)
	}
	for r := 0; r < rows; r++ {
		xr := x[r*in : (r+1)*in]
		yr := y[r*out : (r+1)*out]
		for o := 0; o < out; o++ {
			wo := w[o*in : (o+1)*in]
			var s T
			if b != nil {
				s = b[o]
			}
			for i, xi := range xr {
				s += xi * wo[i]
			}
			yr[o] = s
		}
	}
}

// LinearBackward implements Kernels.LinearBackward: dx += dy·W, dW += dyᵀ·x, db += Σ dy.
func (Reference[T]) LinearBackward(dx, dw, db, dy, x, w []T, rows, in, out int) {
	checkLen("linear dy", dy, rows*out)
	checkLen("linear x", x, rows*in)
	checkLen("linear w", w, out*in)
	checkLen("linear dw", dw, out*in)
	if dx != nil {
		checkLen("linear dx", dx, rows*in)
	}
	if db != nil {
		checkLen("linear db", db, out)
	}
	for r := 0; r < rows; r++ {
		xr := x[r*in : (r+1)*in]
		for o := 0; o < out; o++ {
			g := dy[r*out+o]
			if g == 0 {
				continue
			}
			if db != nil {
				db[o] += g
			}
			dwo := dw[o*in : (o+1)*in]
			for i, xi := range xr {
				dwo[i] += g * xi
			}
			if dx != nil {
				wo := w[o*in : (o+1)*in]
				dxr := dx[r*in : (r+1)*in]
				for i, wi := range wo {
					dxr[i] += g * wi
				}
			}
		}
	}
}

func checkLen[T any](name string, s []T, n int) {
	if len(s) < n {
		panic("compute: " + name + ": slice too short")
	}
}
