// Package compute is the seam between the model's operators and the hardware that runs
// its two hot kernels:
//
//   - the linear layer y = x·Wᵀ + b (a GEMM), forward and backward;
//   - the cone distance over (query, candidate, dimension) (docs/model.md §7), forward and
//     backward.
//
// Everything else in the model is element-wise or small and stays in pkg/model.
//
// The kernels are written once, generically over Float, in Reference. The model's
// gradient checks run Reference[float64]; training runs Reference[float32] or a faster
// Backend. A fast CPU or CUDA backend implements Backend (float32 only) and is tested
// against Reference[float32] on the same inputs.
//
// Conventions shared by every kernel:
//   - all tensors are flat, row-major slices; shapes are given by the int arguments;
//   - weights are stored PyTorch style, W[out][in];
//   - backward kernels ADD into their gradient outputs (+=), never overwrite, so a tensor
//     used twice accumulates both contributions; a nil gradient output is skipped.
package compute

// Float is the element type of every tensor: float32 for training, float64 for the
// finite-difference gradient checks of the very same code.
type Float interface{ ~float32 | ~float64 }

// Kernels is the set of hot kernels a backend provides for element type T.
type Kernels[T Float] interface {
	// LinearForward computes y[r][o] = b[o] + Σ_i x[r][i]·w[o][i] for r < rows, i.e.
	// y = x·Wᵀ + b with x [rows][in], w [out][in], b [out] (nil: no bias), y [rows][out].
	LinearForward(y, x, w, b []T, rows, in, out int)

	// LinearBackward accumulates the gradients of y = x·Wᵀ + b given dy [rows][out]:
	//   dx += dy·W     [rows][in]  (skipped when dx is nil)
	//   dw += dyᵀ·x    [out][in]
	//   db += Σ_r dy   [out]       (skipped when db is nil)
	LinearBackward(dx, dw, db, dy, x, w []T, rows, in, out int)

	// DistanceForward computes the cone distance of docs/model.md §7,
	//   dist[q][k] = Σ_j d_o(θ, a_qj, h_qj) + λ·Σ_j d_i(θ, a_qj, h_qj),  θ = ent[c][j],
	// for q < queries, k < cands, j < dim, where the candidate row is c = cand[q·cands+k],
	// or c = k when cand is nil (every query against the first cands rows of ent, as in
	// evaluation). axis and half are the queries' cones [queries][dim] (half is the
	// HALF-aperture), ent holds entity angles [*][dim], dist is [queries][cands].
	DistanceForward(dist, axis, half, ent []T, cand []int32, queries, cands, dim int, lambda T)

	// DistanceBackward accumulates, given dDist [queries][cands], the gradients of
	// DistanceForward's output into dAxis, dHalf [queries][dim] and dEnt (rows of ent,
	// scatter-added through cand). Any of the three may be nil to skip it.
	DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent []T, cand []int32, queries, cands, dim int, lambda T)
}

// Backend is what a fast backend implements: the kernels in float32.
type Backend = Kernels[float32]

// Reference is the plain, loop-by-loop implementation of Kernels. It defines the
// semantics every other backend is tested against.
type Reference[T Float] struct{}

var (
	_ Kernels[float64] = Reference[float64]{}
	_ Backend          = Reference[float32]{}
)
