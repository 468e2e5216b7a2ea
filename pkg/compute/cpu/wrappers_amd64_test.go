package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// panics reports whether f panics.
func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}

// operandCase is one call of an assembly wrapper with operands of exactly the length it
// needs (short = -1), or with operand short one element shorter: the wrapper must
// accept the first and panic on the second, before the assembly reads or writes outside
// the slices.
type operandCase struct {
	name string
	lens []int                 // the exact length of each operand
	call func(ops [][]float32) // calls the wrapper with the operands
}

// checkOperandLengths runs every case with exact operands (no panic) and with each
// operand in turn one element short (panic).
func checkOperandLengths(t *testing.T, cases []operandCase) {
	t.Helper()
	rng := rand.New(rand.NewPCG(6, 6))
	for _, c := range cases {
		for short := -1; short < len(c.lens); short++ {
			ops := make([][]float32, len(c.lens))
			for i, n := range c.lens {
				if i == short {
					n--
				}
				// Cut from a longer slice: a wrapper that checks len, not cap, is what
				// the assembly needs (it would read on into the capacity).
				ops[i] = randF32(rng, n+64, -1, 1)[:n]
			}
			got := panics(func() { c.call(ops) })
			if want := short >= 0; got != want {
				what := "exact operands"
				if want {
					what = fmt.Sprintf("operand %d one short", short)
				}
				t.Errorf("%s, %s: panicked %v, want %v", c.name, what, got, want)
			}
		}
	}
}

// TestAsmWrapperOperandLengths: each Go wrapper of an assembly kernel checks the lengths
// of its operands against exactly what the kernel touches (kernels_amd64.go): neither
// looser (an overrun), nor stricter (a panic on valid operands).
func TestAsmWrapperOperandLengths(t *testing.T) {
	var cases []operandCase
	type gemmAsm struct {
		kern      gemmKernel
		supported bool
	}
	for _, g := range []gemmAsm{{avx512GEMM, hasAVX512}, {avx2GEMM, hasAVX2FMA}} {
		if !g.supported {
			continue
		}
		mr, nr, fn := g.kern.mr, g.kern.nr, g.kern.fn
		for _, k := range []int{1, 5} {
			const lda, ldb, ldc = 40, 45, 50 // wider than every tile and k
			cases = append(cases,
				operandCase{
					name: fmt.Sprintf("%s col-major A, k=%d", g.kern.name, k),
					lens: []int{(k-1)*lda + mr, (k-1)*ldb + nr, (mr-1)*ldc + nr},
					call: func(o [][]float32) { fn(k, o[0], lda, false, o[1], ldb, o[2], ldc) },
				},
				operandCase{
					name: fmt.Sprintf("%s row-major A, k=%d", g.kern.name, k),
					lens: []int{(mr-1)*lda + k, (k-1)*ldb + nr, (mr-1)*ldc + nr},
					call: func(o [][]float32) { fn(k, o[0], lda, true, o[1], ldb, o[2], ldc) },
				})
		}
	}
	if hasAVX512 {
		for _, n := range []int{1, 3} {
			const lds = 70
			cases = append(cases, operandCase{
				name: fmt.Sprintf("transpose16 n=%d", n),
				lens: []int{15*lds + 16*n, (16*n-1)*32 + 16},
				call: func(o [][]float32) { transpose16Asm(o[0], lds, o[1], n) },
			})
		}
	}
	for _, kk := range asmDistKernels() {
		k := kk.k
		for _, nblk := range []int{1, 3} {
			const stride = 48
			cases = append(cases, operandCase{
				name: fmt.Sprintf("%s sincos nblk=%d", k.name, nblk),
				lens: []int{nblk * lanes, (nblk-1)*stride + 2*lanes},
				call: func(o [][]float32) { k.sincos(o[0], nblk, o[1], stride, nil) },
			})
			cases = append(cases, operandCase{
				name: fmt.Sprintf("%s fwd4 nblk=%d", k.name, nblk),
				lens: []int{nblk * qBlock, nblk * eBlock, nblk * eBlock, nblk * eBlock, nblk * eBlock},
				call: func(o [][]float32) {
					var out [8]float32
					k.fwd4(o[0], &[4][]float32{o[1], o[2], o[3], o[4]}, nblk, &out)
				},
			})
			for _, tail := range []int{1, 9, lanes} {
				n := (nblk-1)*lanes + tail
				cases = append(cases, operandCase{
					name: fmt.Sprintf("%s bwd nblk=%d tail=%d", k.name, nblk, tail),
					lens: []int{nblk * qBlock, nblk * eBlock, n, n, n},
					call: func(o [][]float32) { k.bwd(o[0], o[1], nblk, tail, 0.5, 0.02, o[2], o[3], o[4], nil) },
				})
			}
		}
	}
	if len(cases) == 0 {
		t.Skip("no assembly kernel runs on this CPU")
	}
	checkOperandLengths(t, cases)
}

// TestDistKernelsEmpty: with no block, every distance kernel (Go and assembly) leaves its
// outputs alone, except fwd4's sums, which are zero; empty operands are then valid.
func TestDistKernelsEmpty(t *testing.T) {
	ks := []distKernels{genericDist}
	for _, kk := range asmDistKernels() {
		ks = append(ks, kk.k)
	}
	for _, k := range ks {
		out := [8]float32{1, 2, 3, 4, 5, 6, 7, 8}
		k.fwd4(nil, &[4][]float32{}, 0, &out)
		if out != [8]float32{} {
			t.Errorf("%s: fwd4 of no block: %v, want zeros", k.name, out)
		}
		s := []float32{3}
		k.sincos(nil, 0, s, eBlock, nil)
		k.bwd(nil, nil, 0, 1, 0.5, 0.02, s, s, s, nil)
		if s[0] != 3 {
			t.Errorf("%s: sincos or bwd of no block wrote %g", k.name, s[0])
		}
	}
}

// TestAsmBwdBadTail: the assembly backward takes a tail of 1 … 16 lanes only.
func TestAsmBwdBadTail(t *testing.T) {
	ks := asmDistKernels()
	if len(ks) == 0 {
		t.Skip("no AVX-512 and no AVX2+FMA")
	}
	for _, kk := range ks {
		for _, c := range []struct {
			tail int
			ok   bool
		}{{-1, false}, {0, false}, {1, true}, {lanes, true}, {lanes + 1, false}} {
			q, e, g := make([]float32, qBlock), make([]float32, eBlock), make([]float32, 3*lanes)
			got := panics(func() { kk.k.bwd(q, e, 1, c.tail, 0.5, 0.02, g[:lanes], g[lanes:2*lanes], g[2*lanes:], nil) })
			if got == c.ok {
				t.Errorf("%s: bwd with tail %d: panicked %v", kk.k.name, c.tail, got)
			}
		}
	}
}
