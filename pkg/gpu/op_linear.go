package gpu

import (
	"fmt"
	"math"

	"github.com/rocone/rocone/pkg/compute"
)

// SetMatmul sets the precision of the matrix products of LinearForward and LinearBackward
// (and so of every operator built on them: ConE's projection MLP, the attention
// intersection) from then on: compute.MatmulFP32 (the default) runs linear.cu's FP32
// GEMMs, compute.MatmulTF32 tf32.cu's tensor-core GEMMs, which round both factors to TF32
// and accumulate in float32. It is the device's setting, not a buffer's or a model's: the
// stages set it once from the checkpoint's configuration before they compute (package
// gpumodel does, for the model it puts on the device). Call it while no operation is
// being enqueued from another goroutine.
func (d *Device) SetMatmul(m compute.Matmul) error {
	m, err := compute.ParseMatmul(string(m))
	if err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	d.tf32 = m.TF32()
	return nil
}

// Matmul returns the precision SetMatmul set.
func (d *Device) Matmul() compute.Matmul {
	if d.tf32 {
		return compute.MatmulTF32
	}
	return compute.MatmulFP32
}

// LinearForward computes y = x·Wᵀ + b with x [rows][in], w [out][in], b [out] (nil: no
// bias), y [rows][out].
func (d *Device) LinearForward(y, x, w, b *F32, rows, in, out int) error {
	return d.linearForward("LinearForward", dense(y, out), dense(x, in), w, b, rows, in, out, false)
}

// LinearReLUForward computes y = ReLU(x·Wᵀ + b), LinearForward and ReLUForward in one
// launch (the GEMM's epilogue), with the same bits.
func (d *Device) LinearReLUForward(y, x, w, b *F32, rows, in, out int) error {
	return d.linearForward("LinearReLUForward", dense(y, out), dense(x, in), w, b, rows, in, out, true)
}

// mat is a row-major matrix on the device whose rows lie ld elements apart (ld at least
// its columns): a dense tensor (dense), or a block of columns of a wider one, as the
// intersection's first layers write theirs (op_intersect.go).
type mat struct {
	b  *F32
	ld int
}

// dense is b as a matrix of rows cols long.
func dense(b *F32, cols int) mat { return mat{b, cols} }

// matLen is the elements a rows × cols matrix with rows ld apart spans.
func matLen(rows, cols, ld int) int {
	if rows == 0 || cols == 0 {
		return 0
	}
	return (rows-1)*ld + cols
}

// m checks that m holds a rows × cols matrix (optional: m.b may be nil).
func (c *check) m(name string, m mat, rows, cols int, optional bool) {
	if c.err == nil && m.ld < cols {
		c.err = fmt.Errorf("cuda: %s: %s has rows %d apart, fewer than its %d columns", c.op, name, m.ld, cols)
	}
	c.len(name, m.b.Len(), matLen(rows, cols, m.ld), optional, m.b != nil)
}

func (d *Device) linearForward(op string, y, x mat, w, b *F32, rows, in, out int, relu bool) error {
	c := check{op: op}
	c.nonneg(rows, in, out)
	c.m("y", y, rows, out, false)
	c.m("x", x, rows, in, false)
	c.f("w", w, out*in)
	c.opt("b", b, out)
	if c.err != nil || rows == 0 || out == 0 {
		return c.err
	}
	return d.gemm("gemm_nt", rows, out, in, x.b, x.ld, w, in, y.b, y.ld, gemmEnd{bias: b, relu: relu})
}

// LinearBackward accumulates dx += dy·W (dx may be nil), dw += dyᵀ·x (dw may be nil) and
// db += Σ_r dy (db may be nil).
func (d *Device) LinearBackward(dx, dw, db, dy, x, w *F32, rows, in, out int) error {
	return d.linearBackward("LinearBackward", dense(dx, in), dw, db, dense(dy, out), dense(x, in), w, rows, in, out, false)
}

// LinearBackwardAfterReLU is LinearBackward for a layer whose input x is a ReLU's output,
// taking dx back through that ReLU as well: dx = (dx + dy·W) where x > 0, else 0 (x is
// needed even when dw is nil). LinearBackward and ReLUBackward(dx, x) in one launch less
// (the dx GEMM's epilogue), with the same bits.
func (d *Device) LinearBackwardAfterReLU(dx, dw, db, dy, x, w *F32, rows, in, out int) error {
	return d.linearBackward("LinearBackwardAfterReLU", dense(dx, in), dw, db, dense(dy, out), dense(x, in), w, rows, in, out, true)
}

// linearBackward is LinearBackward (afterReLU: LinearBackwardAfterReLU) for strided dx, dy
// and x; after a ReLU, dx and x have the same row spacing (the mask is laid out as dx).
func (d *Device) linearBackward(op string, dx mat, dw, db *F32, dy, x mat, w *F32, rows, in, out int, afterReLU bool) error {
	c := check{op: op}
	c.nonneg(rows, in, out)
	c.m("dy", dy, rows, out, false)
	c.m("dx", dx, rows, in, true)
	c.opt("dw", dw, out*in)
	c.opt("db", db, out)
	if dx.b != nil {
		c.f("w", w, out*in)
	}
	if dw != nil || (afterReLU && dx.b != nil) {
		c.m("x", x, rows, in, false)
	}
	if c.err == nil && afterReLU && dx.b != nil && dx.ld != x.ld {
		c.err = fmt.Errorf("cuda: %s: dx's rows are %d apart and x's %d: the ReLU's mask is read as dx is laid out", op, dx.ld, x.ld)
	}
	if c.err != nil || rows == 0 {
		return c.err
	}
	if out == 0 {
		if afterReLU && dx.b != nil && in > 0 { // no product: the ReLU alone
			if dx.ld != in {
				return fmt.Errorf("cuda: %s: a ReLU's gradient alone on rows %d apart for %d columns", op, dx.ld, in)
			}
			return d.ReLUBackward(dx.b.Slice(0, rows*in), x.b.Slice(0, rows*in))
		}
		return nil
	}
	if dx.b != nil && in > 0 {
		end := gemmEnd{acc: true}
		if afterReLU {
			end.mask = x.b
		}
		if err := d.gemm("gemm_nn", rows, in, out, dy.b, dy.ld, w, in, dx.b, dx.ld, end); err != nil {
			return err
		}
	}
	if dw != nil && in > 0 {
		if err := d.gemm("gemm_tn", out, in, rows, dy.b, dy.ld, x.b, x.ld, dw, in, gemmEnd{acc: true}); err != nil {
			return err
		}
	}
	if db != nil {
		// Reads dy, reads and writes db; one add per element of dy.
		w := Work{Bytes: words(rows*out, 2*out), FLOPs: flops(rows*out, 1)}
		return d.launch("col_sum", w, [3]int{ceilDiv(out, colSumColumns), 1, 1}, [3]int{colSumThreads, 1, 1},
			ptr(db), ptr(dy.b), i32(dy.ld), i32(rows), i32(out))
	}
	return nil
}

// gemm launches one of the GEMM kernels for C [M][N] (name: gemm_nt, gemm_nn or gemm_tn):
// the register-tiled kernel of that name, linear.cu's (FP32) or, with TF32 products
// (SetMatmul), tf32.cu's gemm_tf32_pipe_* (its operands' rows 16-byte aligned, as the
// model's are) or gemm_tf32_*, and for FP32 dW and dX gemm_pipe_* where aligned, with 128×128
// tiles; or, when those tiles would not give every SM a block, the same kernel with K
// split S ways into a workspace whose partial sums gemm_splitk_sum adds up in order
// (gemmShape), or its 64×64 twin (_64) when K is too short to split.
// Without a split every output's sum runs over k in order, so the tile does not change a
// bit; a split sums S partial sums in order, deterministic for a given shape and SM
// count. end says how each output ends (bias, accumulation, ReLU). The work stated to a
// profiler is 2·M·N·K FLOPs (gemmWork), the split's writes and reads of its workspace
// added. The first versions
// (gemm64_*, gemm64_tf32_*) run only when a test or the bench fixes gemmTileFirst, and
// the register-staged kernels on aligned operands only when one sets regStaged.
func (d *Device) gemm(name string, M, N, K int, A *F32, lda int, B *F32, ldb int, C *F32, ldc int, end gemmEnd) error {
	w := gemmWork(M, N, K, end)
	bias, acc := end.bias, end.acc
	args := []arg{i32(M), i32(N), i32(K), ptr(A), i32(lda), ptr(B), i32(ldb), ptr(C), i32(ldc), ptr(bias), boolArg(acc),
		boolArg(end.relu), ptr(end.mask)}
	layout := name[len("gemm_"):] // nt, nn or tn
	if (end.relu && layout != "nt") || (end.mask != nil && layout != "nn") {
		// The kernels compile the ReLU into the forward product's epilogue only, the
		// mask into dX's (gemm_end_for).
		return fmt.Errorf("cuda: %s: a ReLU ends only gemm_nt, a ReLU's gradient only gemm_nn", name)
	}
	tile, splits := d.gemmTile, d.gemmSplit
	if tile == gemmTileAuto {
		tile, splits = d.gemmShape(M, N, K)
	}
	if tile == gemmTileFirst {
		name = "gemm64_" + layout
		if d.tf32 {
			name = "gemm64_tf32_" + layout
		}
		grid := [3]int{ceilDiv(N, tileN), min(ceilDiv(M, tileM), d.gridY), 1}
		return d.launch(name, w, grid, [3]int{tileThreads, 1, 1}, args...)
	}
	// 16-byte loads need 16-byte aligned rows: an aligned base and a leading dimension
	// that is a multiple of 4.
	aligned := func(b *F32, ld int) bool { return b.Ptr()%16 == 0 && ld%4 == 0 }
	vec := func(b *F32, ld int) arg { return boolArg(aligned(b, ld)) }
	// Aligned operands: the pipelined kernels (cp.async), which copy only whole 16-byte
	// chunks (FP32: dW and dX, which have k-major operands to copy; TF32: all three).
	pipe := !d.regStaged && aligned(A, lda) && aligned(B, ldb)
	switch {
	case d.tf32 && pipe:
		name = "gemm_tf32_pipe_" + layout
	case d.tf32:
		name = "gemm_tf32_" + layout
	case pipe && layout != "nt":
		name = "gemm_pipe_" + layout
	}
	if tile == 64 {
		name += "_64"
	}
	block := [3]int{d.gemmTileThreads(tile), 1, 1}
	grid := [3]int{ceilDiv(N, tile), min(ceilDiv(M, tile), d.gridY), 1}
	// Split-K: slices of kSplit (a multiple of the kernels' 8), one grid layer each, into
	// the workspace W [S][M][N]; gemm_splitk_sum adds them up into C, or each tile's last
	// block does (gemm_split_fixup, splitFixup): the same bits, but on an H200 the fixup's
	// tail, a few blocks each summing a whole tile's S partials after the rest have ended,
	// made the kernel bench's linear step 4.32 ms against 3.32 with the pass.
	kSplit := K
	if splits > 1 && K > 0 {
		kSplit = ceilDiv(ceilDiv(K, splits), 8) * 8
		splits = ceilDiv(K, kSplit)
	}
	if splits <= 1 || K == 0 || splits*M*N > math.MaxInt32 || ceilDiv(M, tile)*grid[0] > maxSplitTiles {
		return d.launch(name, w, grid, block, append(args, vec(A, lda), vec(B, ldb), i32(max(K, 1)),
			ptr[float32](nil), ptr[int32](nil))...)
	}
	W, err := d.workspace(workSplit, splits*M*N)
	if err != nil {
		return err
	}
	grid[2] = splits
	// Each split writes its M×N partial sums; the sum reads them all, adds S − 1 of them
	// and ends as the unsplit GEMM does.
	sum := Work{Bytes: words(splits * M * N), FLOPs: flops(M*N, splits-1)}.Add(gemmEndWork(M, N, end))
	ws := gemmWork(M, N, K, gemmEnd{})
	ws.Bytes += words(splits*M*N) - words(M*N)
	if d.splitFixup {
		tickets, err := d.splitTickets()
		if err != nil {
			return err
		}
		wargs := append(args, vec(A, lda), vec(B, ldb), i32(kSplit), ptr(W), ptr(tickets))
		return d.launch(name, ws.Add(sum), grid, block, wargs...)
	}
	wargs := append(args, vec(A, lda), vec(B, ldb), i32(kSplit), ptr(W), ptr[int32](nil))
	if err := d.launch(name, ws, grid, block, wargs...); err != nil {
		return err
	}
	return d.each("gemm_splitk_sum", M*N, sum, ptr(C), i32(ldc), ptr(W), i32(splits), i32(M), i32(N), ptr(bias), boolArg(acc),
		boolArg(end.relu), ptr(end.mask))
}

// maxSplitTiles is the most tiles a split GEMM may have: the length of the tickets that
// gemm_split_fixup counts its tiles' blocks with. A split is for GEMMs of fewer tiles
// than the device has SMs.
const maxSplitTiles = 4096

// splitTickets returns the device's tickets for the split GEMMs (maxSplitTiles ints,
// zeroed when allocated; gemm_split_fixup leaves them zero), allocating them on first use.
func (d *Device) splitTickets() (*I32, error) {
	d.workMu.Lock()
	defer d.workMu.Unlock()
	t, err := grow(d, &d.tickets, maxSplitTiles)
	if err != nil {
		return nil, fmt.Errorf("cuda: the split GEMMs' tickets: %w", err)
	}
	return t, nil
}

// gemmPolicy is how gemmShape picks a GEMM's tile and K splits (Device.gemmPolicy).
type gemmPolicy int

const (
	// policyCost, the default: the tile and split of least gemmCost.
	policyCost gemmPolicy = iota
	// policyWaves, the default until the cost model (kept for the kernel bench to measure
	// against it): 128×128 tiles, unsplit when they give every SM a block; otherwise K
	// split into as many slices as keep all the blocks resident at once (two per SM:
	// splits·blocks ≤ 2·SMs), with at least 256 of K per split; 64×64 tiles when that
	// allows no two splits.
	policyWaves
	// policyTiles64: as policyWaves, but a GEMM whose 128×128 tiles are too few takes
	// 64×64 tiles unsplit when those give every SM a block: no workspace and no
	// gemm_splitk_sum pass, for half the arithmetic per byte loaded. For the bench.
	policyTiles64
)

// gemmShape picks the GEMM's tile and K splits for a shape, FP32 and TF32 alike, by the
// device's policy.
func (d *Device) gemmShape(M, N, K int) (tile, splits int) {
	sms := d.multiprocessors()
	if d.gemmPolicy == policyCost {
		return d.gemmShapeByCost(M, N, K, sms)
	}
	blocks := ceilDiv(M, 128) * ceilDiv(N, 128)
	if blocks >= sms {
		return 128, 1
	}
	if d.gemmPolicy == policyTiles64 && ceilDiv(M, 64)*ceilDiv(N, 64) >= sms {
		return 64, 1
	}
	if s := min(2*sms/blocks, K/256); s >= 2 {
		return 128, s
	}
	return 64, 1
}

// gemmShapeByCost is the tile and split of least gemmCost: 128×128 tiles split S ways
// (S ≤ maxCostSplits, at least 256 of K a split), or 64×64 tiles unsplit; on a tie the
// fewer splits, then the larger tile.
func (d *Device) gemmShapeByCost(M, N, K, sms int) (tile, splits int) {
	tile, splits = 128, 1
	best := d.gemmCost(M, N, K, sms, 128, 1)
	splittable := ceilDiv(M, 128)*ceilDiv(N, 128) <= maxSplitTiles
	for s := 2; splittable && s <= maxCostSplits && K/s >= 256 && s*M*N <= math.MaxInt32; s++ {
		if c := d.gemmCost(M, N, K, sms, 128, s); c < best {
			tile, splits, best = 128, s, c
		}
	}
	if c := d.gemmCost(M, N, K, sms, 64, 1); c < best {
		tile, splits = 64, 1
	}
	return tile, splits
}

// maxCostSplits bounds policyCost's K splits.
const maxCostSplits = 16

// gemmCost estimates a GEMM's time in seconds with tile×tile tiles and K split S ways on
// sms SMs, the model behind policyCost. The blocks are dealt to the SMs, so the busiest
// SM runs n = ceil(tiles·S / sms) of them, each 2·tile²·⌈K/S⌉ FLOPs; a split adds
// gemm_splitk_sum's pass (the S partial sums written and read back and the output written)
// and its launch. The rates are an H200's, fitted to the kernel bench's runs at `7174404`:
// 128×128 tiles at 40 TFLOP/s over 132 SMs in FP32 and 80 in TF32 (the per-SM rate of a
// tile's main loop), 64×64 tiles 19 % and 17 % slower a FLOP (pipe64 against pipe128 at
// linear's shape), the split's pass at 1.4 TB/s and 5 µs. So fitted, the model gives
// linear's pipe128 1,024 µs (measured 1,024) and by-shape 1,053 (1,013), linear_step's
// policyWaves 3,343 µs (3,334) and in TF32 1,906 (2,027).
//
// An SM reaches those rates only with enough warps resident to cover the main loop's
// latencies: the rate is scaled by min(1, n·warps/8) for a tile of that many warps a
// block (gemmTileThreads/32). The fit above had 8 or more (one 128×128 block; four 64×64
// ones); a lone 64×64 block has 2 warps in FP32 and 4 in TF32, and the step's profiles
// at `bf5d4b1` timed such launches at 4.4 TFLOP/s (FP32, `cone`'s 800-wide layers, a
// quarter of the rate the model gave them) and 23–25 (TF32), where 128×128 tiles, split,
// ran at 25–27 and 60–64 in the same steps. Turned back (Reverts.GemmWarps), the model
// leaves that scale out, as before.
func (d *Device) gemmCost(M, N, K, sms, tile, S int) float64 {
	perSM, slower := 40e12/132, 1.19
	if d.tf32 {
		perSM, slower = 80e12/132, 1.17
	}
	if tile != 128 {
		perSM /= slower
	}
	blocks := ceilDiv(M, tile) * ceilDiv(N, tile) * S
	n := ceilDiv(blocks, sms)
	if !d.reverts.GemmWarps {
		perSM *= min(1, float64(n*d.gemmTileThreads(tile)/32)/8)
	}
	t := float64(n) * 2 * float64(tile*tile) * float64(ceilDiv(K, S)) / perSM
	if S > 1 {
		t += float64((2*S+1)*M*N*4)/1.4e12 + 5e-6
	}
	return t
}

// gemmTileThreads is the threads of one block of the register-tiled GEMM kernels with
// tile×tile tiles: FP32, tile²/64 threads of 8×8 outputs (linear.cu); TF32, 2·tile: 8
// warps of 64×32 outputs for 128×128 tiles, 4 of 32×32 for 64×64 (tf32.cu).
func (d *Device) gemmTileThreads(tile int) int {
	if d.tf32 {
		return 2 * tile
	}
	return tile * tile / 64
}

// The GEMM tiles (Device.gemmTile): chosen by shape, the register-tiled kernels' two, or
// the first versions' (linear.cu's gemm64_*, tf32.cu's gemm64_tf32_*).
const (
	gemmTileAuto  = 0
	gemmTileFirst = -1
)

// multiprocessors is the device's SM count where the driver states it (the real one),
// else 132 (an H100 SXM's or H200's).
func (d *Device) multiprocessors() int {
	if m, ok := d.drv.(interface{ Multiprocessors() int }); ok && m.Multiprocessors() > 0 {
		return m.Multiprocessors()
	}
	return 132
}

// ReLUForward applies x ← max(x, 0) in place.
func (d *Device) ReLUForward(x *F32) error {
	n := x.Len()
	return d.each("relu_fwd", n, Work{Bytes: words(2 * n), FLOPs: flops(n, 1)}, ptr(x), i32(n))
}

// ReLUBackward zeroes dx where the ReLU's output out is not positive (in place).
func (d *Device) ReLUBackward(dx, out *F32) error {
	c := check{op: "ReLUBackward"}
	c.f("out", out, dx.Len())
	if c.err != nil {
		return c.err
	}
	// Reads out, reads and writes dx; one comparison each.
	return d.each("relu_bwd", dx.Len(), Work{Bytes: words(3 * dx.Len()), FLOPs: flops(dx.Len(), 1)}, ptr(dx), ptr(out), i32(dx.Len()))
}

// gemmEnd is how a GEMM ends each output (gemm_epilogue): the bias added, C accumulated
// into, and then the ReLU applied (relu; gemm_nt only) or the gradient taken through a
// ReLU whose output is mask (a tensor laid out as C: 0 where mask ≤ 0; gemm_nn only).
type gemmEnd struct {
	bias *F32
	acc  bool
	relu bool
	mask *F32
}

// gemmWork is a GEMM's least work: A, B (and the bias, the mask) read once, C written
// once (read too when accumulating); 2·M·N·K FLOPs (a multiply and an add per term; the
// bias and accumulation adds, M·N, are not counted).
func gemmWork(M, N, K int, end gemmEnd) Work {
	return Work{Bytes: words(M*K, K*N), FLOPs: 2 * int64(M) * int64(N) * int64(K)}.Add(gemmEndWork(M, N, end))
}

// gemmEndWork is the work of the epilogue of M×N outputs: C written (and read when
// accumulating), the bias and the mask read.
func gemmEndWork(M, N int, end gemmEnd) Work {
	b := words(M * N)
	if end.bias != nil {
		b += words(N)
	}
	if end.acc {
		b += words(M * N)
	}
	if end.mask != nil {
		b += words(M * N)
	}
	return Work{Bytes: b}
}
