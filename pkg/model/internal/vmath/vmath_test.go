package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// both runs f with the assembly loops, then with the pure-Go ones.
func both(t *testing.T, f func(t *testing.T)) {
	t.Run("asm", f)
	t.Run("purego", func(t *testing.T) {
		PureGo = true
		defer func() { PureGo = false }()
		f(t)
	})
}

// TestTanhErrorBound bounds the approximation against float64 math.Tanh over the whole
// float32 range that matters (a dense sweep of ±10, the tiny-argument cut-off, the
// clamp, huge values), with the scalings the model uses.
func TestTanhErrorBound(t *testing.T) {
	both(t, func(t *testing.T) {
		var xs []float32
		for i := 0; i <= 1<<20; i++ {
			xs = append(xs, float32(-10+20*float64(i)/(1<<20)))
		}
		xs = append(xs, 0, tanhTiny, -tanhTiny, math.Nextafter32(tanhTiny, 0), tanhClamp, -tanhClamp,
			math.Nextafter32(tanhClamp, 10), 1e-30, -1e-30, 1e-45, 30, -30, 1e30, -1e30, float32(math.Inf(1)), float32(math.Inf(-1)))
		for _, sc := range []struct{ div, mul, add float32 }{{1, 1, 0}, {0.0275, math.Pi, 0}, {0.5, math.Pi / 2, math.Pi / 2}, {3.7, -2, 1}} {
			out := make([]float32, len(xs))
			Tanh(out, xs, sc.div, sc.mul, sc.add)
			for i, x := range xs {
				exact := math.Tanh(float64(x / sc.div))
				want := float64(sc.mul)*exact + float64(sc.add)
				// 5e-7 relative on tanh, plus the rounding of the scaling.
				tol := 5e-7*math.Abs(float64(sc.mul)*exact) + 2.4e-7*(math.Abs(want)+math.Abs(float64(sc.add))) + 1e-44 // subnormal spacing
				if d := math.Abs(float64(out[i]) - want); !(d <= tol) {
					t.Fatalf("%v·tanh(%v/%v)+%v = %v, exact %v (|Δ| %.3g > %.3g)", sc.mul, x, sc.div, sc.add, out[i], want, d, tol)
				}
			}
		}
		nan := []float32{float32(math.NaN()), 1}
		Tanh(nan, nan, 1, 1, 0)
		if !math.IsNaN(float64(nan[0])) {
			t.Fatalf("tanh(NaN) = %v", nan[0])
		}
	})
}

// TestTanhLengths checks every tail length, in place and not, against the scalar
// functions: the assembly's approximation without FMA (to a few ulp) where there is an
// assembly loop (AVX-512, or AVX2 and FMA), the exactly rounded tanh (bit for bit) without.
func TestTanhLengths(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for n := 0; n < 70; n++ {
		src := make([]float32, n+3)
		for i := range src {
			src[i] = float32(rng.NormFloat64() * 3)
		}
		dst := make([]float32, n+3)
		for i := range dst {
			dst[i] = 42
		}
		Tanh(dst[:n], src[:n], 1.5, 2, 0.25)
		for i := 0; i < n+3; i++ {
			want := float32(42)
			if i < n {
				want = 2*tanhRounded(src[i]/1.5) + 0.25
				if hasAsm {
					want = 2*tanhEigen(src[i]/1.5) + 0.25
				}
			}
			if d := math.Abs(float64(dst[i] - want)); !(d <= 1e-6) || (!hasAsm && d != 0) {
				t.Fatalf("n=%d: [%d] = %v, want %v", n, i, dst[i], want)
			}
		}
		in := append([]float32(nil), src[:n]...)
		Tanh(in, in, 1.5, 2, 0.25)
		for i := range in {
			if in[i] != dst[i] {
				t.Fatalf("n=%d: in place [%d] = %v, not %v", n, i, in[i], dst[i])
			}
		}
	}
}

// TestOverAsm checks the vector test of which lanes may saturate against tanhFixSaturated's
// scalar rule (the sign of lim − |bits|), for random bit patterns (NaNs, infinities, ±0
// and subnormals among them) and the values lim takes (below 2³¹ − 1, or 2³² − 1 when
// div is 0), at every length.
func TestOverAsm(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(7, 7))
	special := []uint32{0, 1 << 31, 0x7f800000, 0xff800000, 0x7fc00000, 0xffffffff, 1, 0x80000001, 0x7f7fffff}
	for _, lim := range []uint32{0, 1, 0x40dfae13, 0x7f7fffff, 0x7f800000, 0x7ffffffe, 0xffffffff} {
		for n := 0; n < 70; n++ {
			src := make([]float32, n)
			for i := range src {
				b := rng.Uint32()
				switch rng.IntN(4) {
				case 0:
					b = special[rng.IntN(len(special))]
				case 1: // near lim, either sign
					b = lim + uint32(rng.IntN(5)) - 2
					b = b&^(1<<31) | rng.Uint32()&(1<<31)
				}
				src[i] = math.Float32frombits(b)
			}
			masks := make([]uint8, n/8+1)
			masks[n/8] = 0xa5 // past the whole blocks: untouched
			if got := overAsm(masks, src, lim); got != n/8 {
				t.Fatalf("lim %#x, n=%d: %d blocks, want %d", lim, n, got, n/8)
			}
			for b := 0; b < n/8; b++ {
				var want uint8
				for j := 0; j < 8; j++ {
					if int32(lim-math.Float32bits(src[8*b+j])&^(1<<31)) < 0 {
						want |= 1 << j
					}
				}
				if masks[b] != want {
					t.Fatalf("lim %#x, n=%d, block %d: mask %08b, want %08b", lim, n, b, masks[b], want)
				}
			}
			if masks[n/8] != 0xa5 {
				t.Fatalf("lim %#x, n=%d: wrote past the whole blocks", lim, n)
			}
		}
	}
}

// TestTanhSaturatedLanes puts arguments at and around ±7 and Sleef's saturation point in
// every lane of every length, in place and not: where |x| ≥ 7 the result is tanhTorch's,
// bit for bit, whichever loop ran (both paths pick the lanes by the same division).
func TestTanhSaturatedLanes(t *testing.T) {
	both(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 9))
		const div, mul, add = 0.0275, math.Pi, 0.5
		edges := []float32{tanhExactFrom, math.Nextafter32(tanhExactFrom, 0), 7.5, sleefTanhSat,
			math.Nextafter32(sleefTanhSat, 10), 9, 100, float32(math.Inf(1))}
		for n := 1; n < 40; n++ {
			for lane := 0; lane < n; lane++ {
				src := make([]float32, n)
				for i := range src {
					src[i] = float32(rng.NormFloat64()) * div
				}
				x := edges[rng.IntN(len(edges))]
				if rng.IntN(2) == 0 {
					x = -x
				}
				src[lane] = x * div
				dst := make([]float32, n)
				Tanh(dst, src, div, mul, add)
				in := append([]float32(nil), src...)
				Tanh(in, in, div, mul, add)
				for i := range src {
					if math.Float32bits(in[i]) != math.Float32bits(dst[i]) {
						t.Fatalf("n=%d: in place [%d] = %v, not %v", n, i, in[i], dst[i])
					}
					q := src[i] / div
					if q >= tanhExactFrom || q <= -tanhExactFrom {
						if want := float32(mul*tanhTorch(q)) + add; math.Float32bits(dst[i]) != math.Float32bits(want) {
							t.Fatalf("n=%d: [%d] = %v (x=%v), want %v", n, i, dst[i], q, want)
						}
					} else if i == lane && !(math.Abs(float64(dst[i])-(mul*math.Tanh(float64(q))+add)) <= 1e-5) {
						t.Fatalf("n=%d: [%d] = %v (x=%v), want about %v", n, i, dst[i], q, mul*math.Tanh(float64(q))+add)
					}
				}
			}
		}
	})
}

// BenchmarkTanhRow: a row of d=200 (the demo's angles and cones), arguments well inside
// ±7 ("small", as most of a trained table) or a third of them beyond ("mixed").
func BenchmarkTanhRow(b *testing.B) {
	for _, c := range []struct {
		name   string
		spread float32
	}{{"small", 1}, {"mixed", 10}} {
		rng := rand.New(rand.NewPCG(1, 1))
		src, dst := make([]float32, 200), make([]float32, 200)
		for i := range src {
			src[i] = (2*rng.Float32() - 1) * c.spread
		}
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				Tanh(dst, src, 1, math.Pi, 0)
			}
		})
	}
}

// TestReLU checks the vector ReLU and its backward bit for bit against the scalar rules,
// NaN, ±0 and ±Inf included, at every tail length.
func TestReLU(t *testing.T) { both(t, testReLU) }

func testReLU(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	special := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)), float32(math.Inf(-1)), -1e-45}
	for n := 0; n < 70; n++ {
		x := make([]float32, n+2)
		for i := range x {
			if rng.IntN(4) == 0 {
				x[i] = special[rng.IntN(len(special))]
			} else {
				x[i] = float32(rng.NormFloat64())
			}
		}
		dx := make([]float32, n+2)
		for i := range dx {
			dx[i] = float32(rng.NormFloat64())
		}
		want, wantD := append([]float32(nil), x...), append([]float32(nil), dx...)
		for i := 0; i < n; i++ {
			if want[i] < 0 {
				want[i] = 0
			}
			if !(x[i] > 0) {
				wantD[i] = 0
			}
		}
		got, gotD := append([]float32(nil), x...), append([]float32(nil), dx...)
		ReLU(got[:n])
		ReLUBackward(gotD[:n], x[:n])
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(gotD[i]) != math.Float32bits(wantD[i]) {
				t.Fatalf("n=%d [%d]: relu(%v) = %v want %v; backward %v want %v", n, i, x[i], got[i], want[i], gotD[i], wantD[i])
			}
		}
	}
}

// TestAngleBackward checks the vector loop against the scalar one (to rounding: a
// compiler may fuse the scalar products) at every tail length.
func TestAngleBackward(t *testing.T) { both(t, testAngleBackward) }

func testAngleBackward(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for n := 0; n < 70; n++ {
		theta, dTheta, dRaw := make([]float32, n+2), make([]float32, n+2), make([]float32, n+2)
		for i := range theta {
			theta[i] = float32((2*rng.Float64() - 1) * math.Pi)
			dTheta[i] = float32(rng.NormFloat64())
			dRaw[i] = float32(rng.NormFloat64())
		}
		want := append([]float32(nil), dRaw...)
		R := float32(0.37)
		c := float32(math.Pi) / R
		for i := 0; i < n; i++ {
			tt := float64(theta[i]) / math.Pi
			want[i] += float32(float64(dTheta[i]) * float64(c) * (1 - tt*tt))
		}
		AngleBackward(dRaw[:n], dTheta[:n], theta[:n], R)
		for i := range want {
			if d := math.Abs(float64(dRaw[i] - want[i])); !(d <= 1e-5*(1+math.Abs(float64(want[i])))) || (i >= n && dRaw[i] != want[i]) {
				t.Fatalf("n=%d [%d]: %v, want %v", n, i, dRaw[i], want[i])
			}
		}
	}
}

// TestSinCos bounds SinCos against math.Sincos: a dense sweep of ±2π, larger angles,
// values beyond the reduction's range and NaN, at every tail length.
func TestSinCos(t *testing.T) { both(t, testSinCos) }

func testSinCos(t *testing.T) {
	var xs []float32
	for i := 0; i <= 1<<18; i++ {
		xs = append(xs, float32(-2*math.Pi+4*math.Pi*float64(i)/(1<<18)))
	}
	xs = append(xs, 0, float32(math.Copysign(0, -1)), 100, -1000.5, 8191, 9000, -1e6, float32(math.Inf(1)))
	for n := len(xs) - 40; n <= len(xs); n++ {
		s, c := make([]float32, n), make([]float32, n)
		SinCos(s, c, xs[:n])
		for i, x := range xs[:n] {
			ws, wc := math.Sincos(float64(x))
			tol := 2.5e-7 * max(1, math.Abs(float64(x))/8) // the reduction loses ~|x|·ulp(π/2)
			if math.IsInf(float64(x), 0) {
				if !math.IsNaN(float64(s[i])) || !math.IsNaN(float64(c[i])) {
					t.Fatalf("sincos(%v) = %v, %v", x, s[i], c[i])
				}
				continue
			}
			if !(math.Abs(float64(s[i])-ws) <= tol) || !(math.Abs(float64(c[i])-wc) <= tol) {
				t.Fatalf("sincos(%v) = %v, %v; exact %v, %v", x, s[i], c[i], ws, wc)
			}
		}
	}
	nan := []float32{float32(math.NaN())}
	s, c := make([]float32, 1), make([]float32, 1)
	SinCos(s, c, nan)
	if !math.IsNaN(float64(s[0])) || !math.IsNaN(float64(c[0])) {
		t.Fatalf("sincos(NaN) = %v, %v", s[0], c[0])
	}
}

// TestAVX2MatchesAVX512: the AVX2 loops run the AVX-512 loops' lane arithmetic, so they
// give the same bits, for every tail length (on a CPU with both).
func TestAVX2MatchesAVX512(t *testing.T) {
	if !hasAVX512 || !hasAVX2FMA {
		t.Skip("needs AVX-512 and AVX2+FMA")
	}
	rng := rand.New(rand.NewPCG(5, 5))
	type outs struct{ tanh, sin, cos, dRaw []float32 }
	run := func(x, dTheta, dRaw0 []float32) outs {
		o := outs{make([]float32, len(x)), make([]float32, len(x)), make([]float32, len(x)), append([]float32(nil), dRaw0...)}
		Tanh(o.tanh, x, 0.7, math.Pi, 0.1)
		SinCos(o.sin, o.cos, x)
		AngleBackward(o.dRaw, dTheta, x, 1.3)
		return o
	}
	for n := 0; n < 70; n++ {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 4)
		}
		if n > 3 {
			x[1], x[2] = 1e-5, 0 // the tiny-argument branch
		}
		dTheta, dRaw := make([]float32, n), make([]float32, n)
		for i := range dTheta {
			dTheta[i], dRaw[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		a := run(x, dTheta, dRaw)
		avx512Loops = false
		b := run(x, dTheta, dRaw)
		avx512Loops = true
		for _, p := range []struct {
			what string
			a, b []float32
		}{{"tanh", a.tanh, b.tanh}, {"sin", a.sin, b.sin}, {"cos", a.cos, b.cos}, {"angle backward", a.dRaw, b.dRaw}} {
			for i := range p.a {
				if math.Float32bits(p.a[i]) != math.Float32bits(p.b[i]) {
					t.Fatalf("n=%d: %s[%d]: AVX-512 %g, AVX2 %g", n, p.what, i, p.a[i], p.b[i])
				}
			}
		}
	}
}

// FuzzTanh: any float32 bit patterns and divisor. Where the assembly runs, Tanh is the
// assembly loop's result but in the lanes with |x| ≥ 7, which are PyTorch's saturated
// value (tanhTorch), bit for bit; the pure-Go path is the scalar rule; in place gives the
// same bits as not.
func FuzzTanh(f *testing.F) {
	f.Add([]byte{0, 0, 0xe0, 0x40, 0, 0, 0x80, 0x3f}, float32(1))
	f.Add(make([]byte, 4*37), float32(0.0275))
	f.Fuzz(func(t *testing.T, raw []byte, div float32) {
		src := make([]float32, len(raw)/4)
		for i := range src {
			src[i] = math.Float32frombits(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24)
		}
		const mul, add = math.Pi, 0.25
		check := func(t *testing.T) {
			dst := make([]float32, len(src))
			Tanh(dst, src, div, mul, add)
			in := append([]float32(nil), src...)
			Tanh(in, in, div, mul, add)
			var loop []float32
			if hasAsm && !PureGo {
				loop = make([]float32, len(src))
				tanhAsm(loop, src, div, mul, add)
			}
			for i, s := range src {
				if math.Float32bits(in[i]) != math.Float32bits(dst[i]) && !(isNaN32(in[i]) && isNaN32(dst[i])) {
					t.Fatalf("[%d] in place %v, not %v", i, in[i], dst[i])
				}
				x := s / div
				var want float32
				switch {
				case x >= tanhExactFrom || x <= -tanhExactFrom:
					want = float32(mul*tanhTorch(x)) + add
				case loop != nil:
					want = loop[i]
				default:
					want = mul*tanhRounded(x) + add
				}
				if math.Float32bits(dst[i]) != math.Float32bits(want) && !(isNaN32(dst[i]) && isNaN32(want)) {
					t.Fatalf("[%d] %v·tanh(%v/%v)+%v = %v, want %v", i, float32(mul), s, div, float32(add), dst[i], want)
				}
			}
		}
		both(t, check)
	})
}

func isNaN32(x float32) bool { return x != x }
