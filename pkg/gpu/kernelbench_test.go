//go:build cgo

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rocone/rocone/pkg/adam"
	"github.com/rocone/rocone/pkg/compute"
)

// Kernel benches in the manner of llm.c's dev/cuda: for each hot kernel of the training
// step (the profile's distance/loss head, the gathers and scatters of entity rows, Adam
// over the entity table, the SGEMM), a CPU reference, the versions the package has, a
// validation of each against the reference, and a timing. TestKernelBenches validates
// them on the launch emulator (go test); BenchmarkKernels validates at a small size, then
// times at the paper's FB15k-237 size on a GPU (go test -tags cuda -bench Kernels, see
// benchDevice) and reports the achieved GB/s and TFLOP/s of the work model (Work).

// benchSize is one problem size: queries × candidates for the distance head, dim, the
// entity table's rows and the rows a gather or scatter moves (and the GEMM's rows).
type benchSize struct{ queries, cands, dim, entities, rows int }

var (
	// checkSizes: the small sizes every version is validated at, one with a dim that is
	// not a multiple of 4 (the scalar paths of the kernels that load 16 bytes where rows
	// allow) and one with (the 16-byte and cp.async paths the paper's size runs).
	checkSizes = []benchSize{checkSize, {queries: 13, cands: 9, dim: 72, entities: 50, rows: 37}}
	checkSize  = benchSize{queries: 13, cands: 9, dim: 70, entities: 50, rows: 37}
)

// benchVersion is one way of computing a kernel's result: run launches it on the
// device's buffers; check compares the device's result of one run from the initial
// buffers with the CPU reference.
type benchVersion struct {
	name  string
	reset func() error // restores the output buffers before a checked run
	run   func() error
	check func() error
}

type benchCase struct {
	name  string
	setup func(d *Device, rng *rand.Rand, s benchSize) ([]benchVersion, func(), error)
}

// closeTo reports the first element of got farther from want than tol times want's
// largest magnitude (at least 1).
func closeTo(what string, want, got []float32, tol float64) error {
	if len(want) != len(got) {
		return fmt.Errorf("%s: %d elements, want %d", what, len(got), len(want))
	}
	scale := math.Max(maxAbs(want), 1)
	for i := range want {
		if d := math.Abs(float64(want[i]) - float64(got[i])); !(d <= tol*scale) {
			return fmt.Errorf("%s[%d] = %g, want %g (|Δ| %.3g > %.3g)", what, i, got[i], want[i], d, tol*scale)
		}
	}
	return nil
}

func randF32(rng *rand.Rand, n int, lo, hi float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(lo + (hi-lo)*rng.Float64())
	}
	return x
}

func randIDs(rng *rand.Rand, n, rows int) []int32 {
	x := make([]int32, n)
	for i := range x {
		x[i] = int32(rng.IntN(rows))
	}
	return x
}

// benchBuffers uploads host slices, remembering them for Free.
type benchBuffers struct {
	d    *Device
	bufs []interface{ Free() error }
	err  error
}

func (b *benchBuffers) f(x []float32) *F32 { return benchUpload(b, x) }

func (b *benchBuffers) i(x []int32) *I32 { return benchUpload(b, x) }

// benchUpload copies x to the device, remembered for free; after an error, nothing.
func benchUpload[T Elem](b *benchBuffers, x []T) *Buffer[T] {
	if b.err != nil {
		return nil
	}
	buf, err := FromHost(b.d, x)
	b.err = err
	b.bufs = append(b.bufs, buf)
	return buf
}

func (b *benchBuffers) free() {
	for _, x := range b.bufs {
		if x != nil {
			x.Free()
		}
	}
}

func download(x *F32) ([]float32, error) { return x.ToHost() }

var kernelBenches = []benchCase{
	{"distance_fwd", func(d *Device, rng *rand.Rand, s benchSize) ([]benchVersion, func(), error) {
		const lambda = 0.1
		b := &benchBuffers{d: d}
		axis, half := randF32(rng, s.queries*s.dim, -math.Pi, math.Pi), randF32(rng, s.queries*s.dim, 0, math.Pi)
		ent, cand := randF32(rng, s.entities*s.dim, -math.Pi, math.Pi), randIDs(rng, s.queries*s.cands, s.entities)
		A, H, E, C, D := b.f(axis), b.f(half), b.f(ent), b.i(cand), b.f(make([]float32, s.queries*s.cands))
		check := func() error {
			want := make([]float32, s.queries*s.cands)
			compute.Reference[float32]{}.DistanceForward(want, axis, half, ent, cand, s.queries, s.cands, s.dim, lambda)
			got, err := download(D)
			if err != nil {
				return err
			}
			return closeTo("dist", want, got, 1e-5)
		}
		// first: distance_fwd, two sincosf per (pair, dim); table: distance_qtab and
		// distance_fwd_tab (ranking's and embedding's); etab: distance_fwd_etab, from the
		// entity half-angle table (the training step's; made here once, untimed:
		// ent_half_sincos times its making).
		ar := NewArena(d)
		ET := b.f(make([]float32, 2*s.entities*s.dim))
		if b.err == nil {
			b.err = d.EntHalfSinCos(ET, E)
		}
		run := func(first bool, etab *F32) func() error {
			return func() error {
				restore, err := distBenchMode(d, ar, first)
				defer restore()
				if err != nil {
					return err
				}
				return d.distanceForward(D, A, H, E, etab, C, s.queries, s.cands, s.dim, lambda)
			}
		}
		reset := func() error { return nil }
		free := func() { ar.Free(); b.free() }
		return []benchVersion{{"first", reset, run(true, nil), check}, {"table", reset, run(false, nil), check},
			{"etab", reset, run(false, ET), check}}, free, b.err
	}},
	{"distance_bwd", func(d *Device, rng *rand.Rand, s benchSize) ([]benchVersion, func(), error) {
		// The whole backward of the training step: dAxis, dHalf and the entity gradient,
		// deterministic (the CSR sum the trainer uses) or atomic, with the first kernels
		// (distance_bwd_q, distance_bwd_ent_csr) and the table kernels (distance_qtab,
		// distance_bwd_q_tab, distance_bwd_ent_csr_tab); table_pairs: the CSR sum as
		// distance_bwd_q_tab's per-pair rows added up by rows_sum_csr (the same bits).
		const lambda = 0.1
		b := &benchBuffers{d: d}
		axis, half := randF32(rng, s.queries*s.dim, -math.Pi, math.Pi), randF32(rng, s.queries*s.dim, 0, math.Pi)
		ent, cand := randF32(rng, s.entities*s.dim, -math.Pi, math.Pi), randIDs(rng, s.queries*s.cands, s.entities)
		dDist := randF32(rng, s.queries*s.cands, -1, 1)
		A, H, E, C, DD := b.f(axis), b.f(half), b.f(ent), b.i(cand), b.f(dDist)
		DA, DH, DE := b.f(make([]float32, s.queries*s.dim)), b.f(make([]float32, s.queries*s.dim)), b.f(make([]float32, s.entities*s.dim))
		ix := RowCSR(cand, s.entities, nil)
		IR, IS, IP := b.i(ix.Rows), b.i(ix.Start), b.i(ix.Pairs)
		index := &DeviceRowIndex{Rows: IR, Start: IS, Pairs: IP, N: len(ix.Rows)}
		check := func() error {
			da, dh, de := make([]float32, s.queries*s.dim), make([]float32, s.queries*s.dim), make([]float32, s.entities*s.dim)
			compute.Reference[float32]{}.DistanceBackward(da, dh, de, dDist, axis, half, ent, cand, s.queries, s.cands, s.dim, lambda)
			for _, o := range []struct {
				name string
				want []float32
				buf  *F32
			}{{"dAxis", da, DA}, {"dHalf", dh, DH}, {"dEnt", de, DE}} {
				got, err := download(o.buf)
				if err != nil {
					return err
				}
				if err := closeTo(o.name, o.want, got, 1e-5); err != nil {
					return err
				}
			}
			return nil
		}
		reset := func() error {
			for _, z := range []*F32{DA, DH, DE} {
				if err := z.Zero(); err != nil {
					return err
				}
			}
			return nil
		}
		ar := NewArena(d)
		ET := b.f(make([]float32, 2*s.entities*s.dim)) // etab_pairs: table_pairs from the entity half-angle table
		if b.err == nil {
			b.err = d.EntHalfSinCos(ET, E)
		}
		run := func(first bool, ix *DeviceRowIndex, pairs bool, etab *F32) func() error {
			return func() error {
				restore, err := distBenchMode(d, ar, first)
				defer restore()
				if err != nil {
					return err
				}
				d.distCSR = !pairs
				defer func() { d.distCSR = false }()
				return d.distanceBackward(DA, DH, DE, DD, A, H, E, etab, C, ix, s.queries, s.cands, s.dim, lambda)
			}
		}
		free := func() { ar.Free(); b.free() }
		return []benchVersion{
			{"first_csr", reset, run(true, index, false, nil), check},
			{"first_atomic", reset, run(true, nil, false, nil), check},
			{"table_csr", reset, run(false, index, false, nil), check},
			{"table_pairs", reset, run(false, index, true, nil), check},
			{"etab_pairs", reset, run(false, index, true, ET), check},
			{"table_atomic", reset, run(false, nil, false, nil), check},
		}, free, b.err
	}},
	// The entity half-angle table that distance_fwd_etab and distance_bwd_q_etab read: its
	// making, a pass over the entity table (in the training step it would come with
	// Adam's, which writes the angles already).
	{"ent_half_sincos", func(d *Device, rng *rand.Rand, s benchSize) ([]benchVersion, func(), error) {
		b := &benchBuffers{d: d}
		ent := randF32(rng, s.entities*s.dim, -math.Pi, math.Pi)
		E, ET := b.f(ent), b.f(make([]float32, 2*s.entities*s.dim))
		check := func() error {
			got, err := download(ET)
			if err != nil {
				return err
			}
			want := make([]float32, len(got))
			for i, v := range ent {
				sn, cs := math.Sincos(float64(v) / 2)
				want[2*i], want[2*i+1] = float32(sn), float32(cs)
			}
			return closeTo("tab", want, got, 1e-6)
		}
		reset := func() error { return nil }
		return []benchVersion{{"half_sincos", reset, func() error { return d.EntHalfSinCos(ET, E) }, check}}, b.free, b.err
	}},
	{"score_all", func(d *Device, rng *rand.Rand, s benchSize) ([]benchVersion, func(), error) {
		// rank's hot loop: the queries against every entity, from the two half-angle
		// tables (made once per call here; rank makes the entity table once per batch).
		const lambda = 0.1
		b := &benchBuffers{d: d}
		axis, half := randF32(rng, s.queries*s.dim, -math.Pi, math.Pi), randF32(rng, s.queries*s.dim, 0, math.Pi)
		ent := randF32(rng, s.entities*s.dim, -math.Pi, math.Pi)
		A, H, E := b.f(axis), b.f(half), b.f(ent)
		Et, Qt := b.f(make([]float32, 2*s.entities*s.dim)), b.f(make([]float32, s.queries*s.dim*QueryTableWidth))
		D := b.f(make([]float32, s.queries*s.entities))
		check := func() error {
			want := make([]float32, s.queries*s.entities)
			compute.Reference[float32]{}.DistanceForward(want, axis, half, ent, nil, s.queries, s.entities, s.dim, lambda)
			got, err := download(D)
			if err != nil {
				return err
			}
			return closeTo("dist", want, got, 1e-4)
		}
		run := func() error {
			if err := d.EntityHalfAngles(Et, E); err != nil {
				return err
			}
			if err := d.QueryHalfAngles(Qt, A, H); err != nil {
				return err
			}
			return d.DistanceAll(D, Qt, Et, s.queries, s.entities, s.dim, lambda)
		}
		return []benchVersion{{"tables", func() error { return D.Zero() }, run, check}}, b.free, b.err
	}},
	{"angle_fwd", func(d *Device, rng *rand.Rand, s benchSize) ([]benchVersion, func(), error) {
		// The entity table mapped to angles, every update.
		const R = 0.02
		b := &benchBuffers{d: d}
		n := s.entities * s.dim
		raw := randF32(rng, n, -3*R, 3*R)
		X, T := b.f(raw), b.f(make([]float32, n))
		check := func() error {
			want := make([]float32, n)
			for i, x := range raw {
				want[i] = float32(math.Pi * math.Tanh(float64(x)/R))
			}
			got, err := download(T)
			if err != nil {
				return err
			}
			return closeTo("theta", want, got, 1e-6)
		}
		angle := func(scalar bool) func() error {
			return func() error {
				defer func() { d.noFloat4 = false }()
				d.noFloat4 = scalar
				return d.AngleForward(T, X, R)
			}
		}
		reset := func() error { return T.Zero() }
		return []benchVersion{{"angle_fwd", reset, angle(true), check}, {"angle_fwd4", reset, angle(false), check}}, b.free, b.err
	}},
	{"gather_rows", func(d *Device, rng *rand.Rand, s benchSize) ([]benchVersion, func(), error) {
		b := &benchBuffers{d: d}
		table, idx := randF32(rng, s.entities*s.dim, -1, 1), randIDs(rng, s.rows, s.entities)
		T, I, O := b.f(table), b.i(idx), b.f(make([]float32, s.rows*s.dim))
		check := func() error {
			want := make([]float32, s.rows*s.dim)
			for r, id := range idx {
				copy(want[r*s.dim:(r+1)*s.dim], table[int(id)*s.dim:])
			}
			got, err := download(O)
			if err != nil {
				return err
			}
			return closeTo("out", want, got, 0)
		}
		gather := func(scalar bool) func() error {
			return func() error {
				defer func() { d.noFloat4 = false }()
				d.noFloat4 = scalar
				return d.GatherRows(O, T, I, s.dim)
			}
		}
		reset := func() error { return O.Zero() }
		return []benchVersion{{"gather_rows", reset, gather(true), check}, {"gather_rows4", reset, gather(false), check}}, b.free, b.err
	}},
	{"scatter_rows", func(d *Device, rng *rand.Rand, s benchSize) ([]benchVersion, func(), error) {
		b := &benchBuffers{d: d}
		src, idx := randF32(rng, s.rows*s.dim, -1, 1), randIDs(rng, s.rows, s.entities)
		S, I, T := b.f(src), b.i(idx), b.f(make([]float32, s.entities*s.dim))
		ix := RowCSR(idx, s.entities, nil)
		index := DeviceRowIndex{Rows: b.i(ix.Rows), Start: b.i(ix.Start), Pairs: b.i(ix.Pairs), N: len(ix.Rows)}
		check := func() error {
			want := make([]float32, s.entities*s.dim)
			for r, id := range idx {
				for j := 0; j < s.dim; j++ {
					want[int(id)*s.dim+j] += src[r*s.dim+j]
				}
			}
			got, err := download(T)
			if err != nil {
				return err
			}
			return closeTo("table", want, got, 1e-6)
		}
		reset := func() error { return T.Zero() }
		return []benchVersion{
			{"scatter_add_rows", reset, func() error { return d.ScatterAddRows(T, S, I, s.dim) }, check},
			{"rows_sum_csr", reset, func() error {
				defer func() { d.noFloat4 = false }()
				d.noFloat4 = true
				return d.RowsSum(T, S, index, s.dim)
			}, check},
			{"rows_sum_csr4", reset, func() error { return d.RowsSum(T, S, index, s.dim) }, check},
		}, b.free, b.err
	}},
	{"adam_step", func(d *Device, rng *rand.Rand, s benchSize) ([]benchVersion, func(), error) {
		b := &benchBuffers{d: d}
		n := s.entities * s.dim
		p, g := randF32(rng, n, -1, 1), randF32(rng, n, -1, 1)
		P, G, M, V := b.f(p), b.f(g), b.f(make([]float32, n)), b.f(make([]float32, n))
		cfg := adam.Default(1e-3)
		reset := func() error {
			if err := P.Upload(p); err != nil {
				return err
			}
			if err := M.Zero(); err != nil {
				return err
			}
			return V.Zero()
		}
		return []benchVersion{{"adam_step", reset, func() error { return d.AdamStep(P, G, M, V, 1, cfg, false) }, func() error {
			p64, g64, m64, v64 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
			for i := range p {
				p64[i], g64[i] = float64(p[i]), float64(g[i])
			}
			adamReference(p64, g64, m64, v64, 1, cfg)
			want := make([]float32, n)
			for i := range want {
				want[i] = float32(p64[i])
			}
			got, err := download(P)
			if err != nil {
				return err
			}
			return closeTo("p", want, got, 1e-6)
		}}}, b.free, b.err
	}},
	{"adam_multi", func(d *Device, rng *rand.Rand, s benchSize) ([]benchVersion, func(), error) {
		// One Adam step over a model's tensors: the entity table, a relation table, and
		// small ones whose sizes leave a partial quad.
		b := &benchBuffers{d: d}
		sizes := []int{s.entities * s.dim, (s.entities/30+1)*s.dim + 3, 2*s.dim + 1, 5}
		var ps, gs [][]float32
		var P, G []*F32
		for _, n := range sizes {
			p, g := randF32(rng, n, -1, 1), randF32(rng, n, -1, 1)
			ps, gs = append(ps, p), append(gs, g)
			P, G = append(P, b.f(p)), append(G, b.f(g))
		}
		cfg := adam.Default(1e-3)
		opt, err := NewAdam(d, cfg, P, G)
		if err != nil {
			b.free()
			return nil, nil, err
		}
		free := func() { opt.Free(); b.free() }
		reset := func() error {
			for i := range P {
				if err := P[i].Upload(ps[i]); err != nil {
					return err
				}
			}
			return opt.Reset()
		}
		check := func() error {
			for i, n := range sizes {
				p64, g64, m64, v64 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
				for k := range p64 {
					p64[k], g64[k] = float64(ps[i][k]), float64(gs[i][k])
				}
				adamReference(p64, g64, m64, v64, 1, cfg)
				want := make([]float32, n)
				for k := range want {
					want[k] = float32(p64[k])
				}
				got, err := download(P[i])
				if err != nil {
					return err
				}
				if err := closeTo(fmt.Sprintf("tensor %d", i), want, got, 1e-6); err != nil {
					return err
				}
			}
			return nil
		}
		run := func(scalar bool) func() error {
			return func() error { opt.scalarOnly = scalar; return opt.Step(false) }
		}
		return []benchVersion{
			{"adam_multi", reset, run(true), check},
			{"adam_multi_vec4", reset, run(false), check},
		}, free, b.err
	}},
	// The intersection's first layer, rows × 2d inputs into d outputs: forward (gemm_nt)
	// and backward (gemm_nn for dx, gemm_tn for dW, col_sum), through each GEMM tile, FP32
	// and TF32 (tf32-*: SetMatmul(tf32)); the version's name is the tile (first: gemm64_*
	// or gemm64_tf32_*; by-shape: the production choice, K split where the tiles are too
	// few).
	{"linear", linearBench(func(s benchSize) []linearLayer { return []linearLayer{{s.rows, 2 * s.dim, s.dim}} },
		everyTile, everyTile)},
	// The GEMMs of one other-pool update, as the step runs them: the attention
	// intersection's four layers at each of the plan levels that intersect, forward and
	// backward. At FB15k-237 d=1600, b=512 those levels have 587, 280 and 78 branch rows
	// and 274, 120 and 39 intersections (the gate layer's rows); W1 and W3 take 2d inputs,
	// W2 and W4 d, all give d. Small layers, where "linear" has 1,024 rows: the shape set
	// the kernels have to be good at (34.5 GFLOP a GEMM kind a step). As the step ran them
	// up to 2026-11-27: W1 and W3 apart.
	{"linear_step", linearBench(func(s benchSize) []linearLayer {
		var ls []linearLayer
		for _, lv := range stepLevels {
			r, n := max(1, s.rows*lv[0]/1024), max(1, s.rows*lv[1]/1024)
			ls = append(ls, linearLayer{r, 2 * s.dim, s.dim}, linearLayer{r, s.dim, s.dim}, linearLayer{r, 2 * s.dim, s.dim},
				linearLayer{n, s.dim, s.dim})
		}
		return ls
	}, stepChoices, stepChoices)},
	// The same GEMMs as the step runs them now: W1 and W3 stacked into one layer of 2d
	// outputs (gpu.IntersectWeights), 9 layers where linear_step has 12, the same FLOPs.
	{"linear_step_stacked", linearBench(func(s benchSize) []linearLayer {
		var ls []linearLayer
		for _, lv := range stepLevels {
			r, n := max(1, s.rows*lv[0]/1024), max(1, s.rows*lv[1]/1024)
			ls = append(ls, linearLayer{r, 2 * s.dim, 2 * s.dim}, linearLayer{r, s.dim, s.dim}, linearLayer{n, s.dim, s.dim})
		}
		return ls
	}, stepChoices, stepChoices)},
	// The GEMMs of ConE's projection MLP in one path update of `cone` at FB15k-237 d=800,
	// b=512 (2d = H = 1,600): three layers at each of three levels of 512, ~340 and ~170
	// projections (every query projects at the first level, 2p and 3p at the second, 3p
	// at the third). With the intersection's, these are 8.1 of a cone step's 12.3 kernel-ms
	// on an H200, their split-K sums 0.63 ms more: the shapes by-shape-64 is for.
	{"mlp_step", linearBench(func(s benchSize) []linearLayer {
		var ls []linearLayer
		for _, rows := range []int{512, 340, 170} {
			r := max(1, s.rows*rows/1024)
			ls = append(ls, linearLayer{r, s.dim, s.dim}, linearLayer{r, s.dim, s.dim}, linearLayer{r, s.dim, s.dim})
		}
		return ls
	}, stepChoices, stepChoices)},
}

// linearLayer is one linear layer of a GEMM bench: rows × in inputs into out outputs.
type linearLayer struct{ rows, in, out int }

// stepLevels are the plan levels that intersect in an other-pool update at FB15k-237
// d=1600, b=512: (branch rows, intersections) at 1,024 bench rows.
var stepLevels = [][2]int{{587, 274}, {280, 120}, {78, 39}}

// gemmChoice is a bench version's GEMM tile and K splits (Device.gemmTile, gemmSplit);
// whether it runs the register-staged kernels where the pipelined ones could run
// (Device.regStaged); and whether a split GEMM is summed by its own last blocks rather than
// by gemm_splitk_sum (Device.splitFixup).
type gemmChoice struct {
	name         string
	tile, splits int
	reg, fixup   bool
	policy       gemmPolicy // Device.gemmPolicy: how the tile and split are chosen by shape
}

// everyTile: the first version's tiles, the register-staged kernels' two, the pipelined
// kernels' two (FP32: dW only; the rest register-staged) and the production choice by
// shape.
var everyTile = []gemmChoice{{"first", gemmTileFirst, 1, false, false, policyCost}, {"reg64", 64, 1, true, false, policyCost},
	{"reg128", 128, 1, true, false, policyCost}, {"pipe64", 64, 1, false, false, policyCost},
	{"pipe128", 128, 1, false, false, policyCost}, {"by-shape", gemmTileAuto, 0, false, false, policyCost}}

// stepChoices: the production choice by shape (policyCost), with the register-staged
// kernels only, with the splits summed by the GEMMs' own last blocks, the policies to
// measure it against (by-waves, the default before it; by-shape-64), and as it is.
var stepChoices = []gemmChoice{{"reg-by-shape", gemmTileAuto, 0, true, false, policyCost},
	{"by-shape-fixup", gemmTileAuto, 0, false, true, policyCost}, {"by-waves", gemmTileAuto, 0, false, false, policyWaves},
	{"by-shape-64", gemmTileAuto, 0, false, false, policyTiles64}, {"by-shape", gemmTileAuto, 0, false, false, policyCost}}

// linearBench is a bench case of the linear layers that layers gives, forward and
// backward, one version per FP32 choice and per TF32 choice (named tf32-*). TF32 versions
// are checked against the reference with TF32 products, within 1e-5 of the largest
// output: the accumulation order's error, well below TF32's own (≈1e-4 of it at
// checkSize), so that a kernel that did not round its factors fails too.
func linearBench(layers func(benchSize) []linearLayer, fp32, tf32 []gemmChoice) func(*Device, *rand.Rand, benchSize) ([]benchVersion, func(), error) {
	return func(d *Device, rng *rand.Rand, s benchSize) ([]benchVersion, func(), error) {
		b := &benchBuffers{d: d}
		ls := layers(s)
		type bufs struct {
			x, w, bias, dy             []float32
			X, W, B, Y, DY, DX, DW, DB *F32
		}
		bs := make([]bufs, len(ls))
		for i, l := range ls {
			c, out := &bs[i], l.out
			c.x, c.w, c.bias = randF32(rng, l.rows*l.in, -1, 1), randF32(rng, out*l.in, -0.1, 0.1), randF32(rng, out, -1, 1)
			c.dy = randF32(rng, l.rows*out, -1, 1)
			c.X, c.W, c.B, c.Y = b.f(c.x), b.f(c.w), b.f(c.bias), b.f(make([]float32, l.rows*out))
			c.DY, c.DX = b.f(c.dy), b.f(make([]float32, l.rows*l.in))
			c.DW, c.DB = b.f(make([]float32, out*l.in)), b.f(make([]float32, out))
		}
		reset := func() error {
			for i := range bs {
				for _, z := range []*F32{bs[i].DX, bs[i].DW, bs[i].DB} {
					if err := z.Zero(); err != nil {
						return err
					}
				}
			}
			return nil
		}
		check := func(tf32 bool) error {
			var ref compute.Kernels[float32] = compute.Reference[float32]{}
			tol := 1e-4
			if tf32 {
				ref, tol = compute.WithMatmul(ref, compute.MatmulTF32), 1e-5
			}
			for i, l := range ls {
				c, out := &bs[i], l.out
				y, dx, dw, db := make([]float32, l.rows*out), make([]float32, l.rows*l.in), make([]float32, out*l.in), make([]float32, out)
				ref.LinearForward(y, c.x, c.w, c.bias, l.rows, l.in, out)
				ref.LinearBackward(dx, dw, db, c.dy, c.x, c.w, l.rows, l.in, out)
				for _, o := range []struct {
					name string
					want []float32
					buf  *F32
				}{{"y", y, c.Y}, {"dx", dx, c.DX}, {"dw", dw, c.DW}, {"db", db, c.DB}} {
					got, err := download(o.buf)
					if err != nil {
						return err
					}
					if err := closeTo(fmt.Sprintf("layer %d (%d×%d): %s", i, l.rows, l.in, o.name), o.want, got, tol); err != nil {
						return err
					}
				}
			}
			return nil
		}
		version := func(g gemmChoice, tf32 bool) benchVersion {
			name, m := g.name, compute.MatmulFP32
			if tf32 {
				name, m = "tf32-"+name, compute.MatmulTF32
			}
			return benchVersion{name, reset, func() error {
				d.gemmTile, d.gemmSplit, d.regStaged, d.splitFixup, d.gemmPolicy = g.tile, g.splits, g.reg, g.fixup, g.policy
				if err := d.SetMatmul(m); err != nil {
					return err
				}
				defer func() {
					d.gemmTile, d.gemmSplit, d.regStaged, d.splitFixup, d.gemmPolicy = gemmTileAuto, 0, false, false, policyCost
					_ = d.SetMatmul(compute.MatmulFP32) // a known precision: cannot fail
				}()
				for i, l := range ls {
					c := &bs[i]
					if err := d.LinearForward(c.Y, c.X, c.W, c.B, l.rows, l.in, l.out); err != nil {
						return err
					}
					if err := d.LinearBackward(c.DX, c.DW, c.DB, c.DY, c.X, c.W, l.rows, l.in, l.out); err != nil {
						return err
					}
				}
				return nil
			}, func() error { return check(tf32) }}
		}
		var vs []benchVersion
		for _, g := range fp32 {
			vs = append(vs, version(g, false))
		}
		for _, g := range tf32 {
			vs = append(vs, version(g, true))
		}
		return vs, b.free, b.err
	}
}

// distBenchMode selects the distance kernels (first or table) and gives the device an
// arena, reset, for the query table, as the trainer does (a separate allocation would
// cost a cuMemAlloc and a synchronising cuMemFree a call); restore undoes both.
func distBenchMode(d *Device, ar *Arena, first bool) (restore func(), err error) {
	d.distFirst = first
	d.UseArena(ar)
	return func() { d.distFirst = false; d.UseArena(nil) }, ar.Reset()
}

// checkVersions runs every version of c once from its initial buffers at size s and
// validates it against the CPU reference.
func checkVersions(d *Device, c benchCase, s benchSize) error {
	vs, free, err := c.setup(d, rand.New(rand.NewPCG(1, 2)), s)
	defer free()
	if err != nil {
		return err
	}
	for _, v := range vs {
		if err := v.reset(); err != nil {
			return err
		}
		if err := v.run(); err != nil {
			return fmt.Errorf("%s/%s: %w", c.name, v.name, err)
		}
		if err := v.check(); err != nil {
			return fmt.Errorf("%s/%s: %w", c.name, v.name, err)
		}
	}
	return nil
}

// TestKernelBenches validates every bench's versions against the CPU reference on the
// launch emulator, at both check sizes.
func TestKernelBenches(t *testing.T) {
	d := emuDevice(t, nil)
	for _, c := range kernelBenches {
		t.Run(c.name, func(t *testing.T) {
			for _, s := range checkSizes {
				if err := checkVersions(d, c, s); err != nil {
					t.Fatalf("dim %d: %v", s.dim, err)
				}
			}
		})
	}
}

// BenchmarkKernels validates each version at the check sizes, then times it at the bench size
// (benchDevice: paperSize on a GPU) and reports the achieved rates of its stated work.
func BenchmarkKernels(b *testing.B) {
	d, s := benchDevice(b)
	for _, c := range kernelBenches {
		for _, s := range checkSizes {
			if err := checkVersions(d, c, s); err != nil {
				b.Fatalf("dim %d: %v", s.dim, err)
			}
		}
		vs, free, err := c.setup(d, rand.New(rand.NewPCG(3, 4)), s)
		if err != nil {
			free()
			b.Fatal(err)
		}
		for _, v := range vs {
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				p := NewProfiler(d, false) // the work of one run
				d.Profile(p)
				err := v.run()
				d.Profile(nil)
				recs, rerr := p.Records()
				if err == nil {
					err = rerr
				}
				if err == nil {
					err = d.Sync()
				}
				if err != nil {
					b.Fatal(err)
				}
				var w Work
				for _, r := range recs {
					if !r.HostCopy() { // the kernels' work alone
						w = w.Add(r.Work)
					}
				}
				b.ResetTimer()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					if err := v.run(); err != nil {
						b.Fatal(err)
					}
				}
				if err := d.Sync(); err != nil {
					b.Fatal(err)
				}
				sec := time.Since(start).Seconds() / float64(b.N)
				b.ReportMetric(float64(w.Bytes)/sec/1e9, "GB/s")
				b.ReportMetric(float64(w.FLOPs)/sec/1e12, "TFLOP/s")
			})
		}
		free()
	}
}
