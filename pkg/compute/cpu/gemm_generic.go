package cpu

// genericGEMM is the portable micro-kernel, 4×4: sixteen scalar accumulators. Go does
// not vectorise, so this is about one multiply and one add per cycle; it exists for
// CPUs without AVX2+FMA and other architectures.
var genericGEMM = gemmKernel{name: "go 4x4", mr: 4, nr: 4, fn: gemmKernelGo4x4}

func gemmKernelGo4x4(k int, a []float32, lda int, rowA bool, b []float32, ldb int, c []float32, ldc int) {
	var c00, c01, c02, c03, c10, c11, c12, c13 float32
	var c20, c21, c22, c23, c30, c31, c32, c33 float32
	var buf [4 * 128]float32
	for p0 := 0; p0 < k; p0 += 128 {
		kb := min(128, k-p0)
		// The A panel for steps p0 … p0+kb−1, contiguous [kb][4]: in place when packed
		// (lda = 4), else gathered.
		var ap []float32
		if !rowA && lda == 4 {
			ap = a[4*p0 : 4*(p0+kb)]
		} else {
			ap = buf[:4*kb]
			for i := 0; i < 4; i++ {
				for p := 0; p < kb; p++ {
					if rowA {
						ap[p*4+i] = a[i*lda+p0+p]
					} else {
						ap[p*4+i] = a[(p0+p)*lda+i]
					}
				}
			}
		}
		for p := 0; p < kb; p++ {
			av, bv := ap[4*p:4*p+4:4*p+4], b[(p0+p)*ldb:(p0+p)*ldb+4:(p0+p)*ldb+4]
			b0, b1, b2, b3 := bv[0], bv[1], bv[2], bv[3]
			a0 := av[0]
			c00 += a0 * b0
			c01 += a0 * b1
			c02 += a0 * b2
			c03 += a0 * b3
			a1 := av[1]
			c10 += a1 * b0
			c11 += a1 * b1
			c12 += a1 * b2
			c13 += a1 * b3
			a2 := av[2]
			c20 += a2 * b0
			c21 += a2 * b1
			c22 += a2 * b2
			c23 += a2 * b3
			a3 := av[3]
			c30 += a3 * b0
			c31 += a3 * b1
			c32 += a3 * b2
			c33 += a3 * b3
		}
	}
	r := c[0:4:4]
	r[0] += c00
	r[1] += c01
	r[2] += c02
	r[3] += c03
	r = c[ldc : ldc+4 : ldc+4]
	r[0] += c10
	r[1] += c11
	r[2] += c12
	r[3] += c13
	r = c[2*ldc : 2*ldc+4 : 2*ldc+4]
	r[0] += c20
	r[1] += c21
	r[2] += c22
	r[3] += c23
	r = c[3*ldc : 3*ldc+4 : 3*ldc+4]
	r[0] += c30
	r[1] += c31
	r[2] += c32
	r[3] += c33
}
