// The cone distance of docs/model.md §7 (compute.Kernels.DistanceForward / Backward), per
// dimension, for an entity angle θ and a query cone (axis a, HALF-aperture h):
//
//	t  = |sin((θ − a)/2)|,  β = |sin(h/2)|
//	lo = |sin((θ − a + h)/2)|,  hi = |sin((θ − a − h)/2)|
//	d_o = 0 if t < β else min(lo, hi),  d_i = min(t, β)
//	dist[q][k] = Σ_j d_o + λ·Σ_j d_i
//
// With u = (θ − a)/2 and v = h/2, lo and hi come from sin(u ± v) = sin u cos v ± cos u
// sin v: two sincosf per element instead of four sinf. Subgradients are pkg/compute's:
// sign(0) = 0, min splits evenly on a tie, the inside test is strict.
//
// Candidates: row c = cand[q·cands + k] of ent, or c = k when cand is NULL (every query
// against the first cands rows, as in evaluation).
//
// Backward: dAxis/dHalf are owned per (query, dimension) by one thread that loops over
// the candidates (no atomics, deterministic). dEnt needs a scatter-add; three ways:
//   - distance_bwd_q with entAtomic = 1: atomicAdd into dEnt as the candidates are
//     visited (fastest; the float summation order varies from run to run);
//   - distance_bwd_ent_csr: deterministic two-pass. The host first groups the (q, k)
//     pairs by entity row (a CSR index: rowIds, start, pairs, in increasing q·cands + k);
//     then one thread per (row, dimension) sums its pairs in that order;
//   - distance_bwd_ent_all (cand == NULL): one thread per (row, dimension) loops over
//     the queries; deterministic, and it avoids the contention of every query adding
//     into every row.
#include "common.h"

#define DIST_CANDS 8     // candidates per block in distance_fwd (one per 32-lane group)
#define DIST_QB 4        // queries per block in distance_fwd
#define DIST_THREADS 256 // = 32·DIST_CANDS
#define DIST_BWD_THREADS 128

// inside_cone reports t = |sin u| < β = |sin v| (u = (θ − a)/2, v = h/2). Near the top of
// the sine both round to 1 in float, and a tie there would send a candidate opposite the
// axis of a cone of half-aperture π (which Trunc produces exactly) a spurious outside
// gradient where the float64 reference finds it inside; so there the cosines, which keep
// their precision, decide: |sin u| < |sin v| ⟺ |cos u| > |cos v|.
__device__ __forceinline__ bool inside_cone(float t, float beta, float cu, float cv) {
	return beta < 1.f ? t < beta : fabsf(cu) > fabsf(cv);
}

__device__ __forceinline__ float dim_distance(float theta, float a, float h, float lambda) {
	float su, cu, sv, cv;
	sincosf((theta - a) * 0.5f, &su, &cu);
	sincosf(h * 0.5f, &sv, &cv);
	float t = fabsf(su), beta = fabsf(sv);
	float dIn = fminf(t, beta);
	if (inside_cone(t, beta, cu, cv)) return lambda * dIn;
	float lo = fabsf(su * cv + cu * sv), hi = fabsf(su * cv - cu * sv);
	return fminf(lo, hi) + lambda * dIn;
}

// Partial derivatives of dim_distance with respect to θ, a and h.
__device__ __forceinline__ void dim_distance_grad(float theta, float a, float h, float lambda, float* gTheta, float* gA,
                                                  float* gH) {
	float su, cu, sv, cv;
	sincosf((theta - a) * 0.5f, &su, &cu);
	sincosf(h * 0.5f, &sv, &cv);
	// d|sin(x/2)|/dx = sign(sin(x/2))·cos(x/2)/2
	float t = fabsf(su), gt = sgnf(su) * cu * 0.5f; // ∂t/∂θ = gt, ∂t/∂a = −gt
	float beta = fabsf(sv), gb = sgnf(sv) * cv * 0.5f; // ∂β/∂h = gb
	float gth = 0.f, ga = 0.f, gh = 0.f;
	if (!inside_cone(t, beta, cu, cv)) {
		float sl = su * cv + cu * sv, cl = cu * cv - su * sv; // sin, cos of u + v
		float sh = su * cv - cu * sv, ch = cu * cv + su * sv; // sin, cos of u − v
		float lo = fabsf(sl), gl = sgnf(sl) * cl * 0.5f;      // ∂/∂(θ, a, h) = (gl, −gl, +gl)
		float hi = fabsf(sh), ghi = sgnf(sh) * ch * 0.5f;     // ∂/∂(θ, a, h) = (ghi, −ghi, −ghi)
		float wl, wh;
		min_weights(lo, hi, &wl, &wh);
		gth += wl * gl + wh * ghi;
		ga += -wl * gl - wh * ghi;
		gh += wl * gl - wh * ghi;
	}
	float wt, wb;
	min_weights(t, beta, &wt, &wb);
	gth += lambda * (wt * gt);
	ga -= lambda * (wt * gt);
	gh += lambda * (wb * gb);
	*gTheta = gth;
	*gA = ga;
	*gH = gh;
}

// dist [queries][cands]. Block: DIST_THREADS = DIST_CANDS groups of 32 lanes; group ty
// takes candidate blockIdx.x·DIST_CANDS + ty, its lanes stride over the dimensions
// (coalesced rows), for DIST_QB queries at a time (rows shared through L1 when cand is
// NULL). The 32 lane partials are summed in a fixed order through shared memory.
// Grid: (ceil(cands/DIST_CANDS), min(ceil(queries/DIST_QB), 65535)), y grid-strided.
KERNEL distance_fwd(float* dist, const float* axis, const float* half, const float* ent, const int* cand, int queries,
                    int cands, int dim, float lambda) {
	__shared__ float red[DIST_QB * DIST_CANDS][33];
	const int t = threadIdx.x, lane = t & 31, ty = t >> 5;
	const int k = blockIdx.x * DIST_CANDS + ty;
	for (int q0 = blockIdx.y * DIST_QB; q0 < queries; q0 += gridDim.y * DIST_QB) {
		for (int qi = 0; qi < DIST_QB; qi++) {
			int q = q0 + qi;
			float acc = 0.f;
			if (q < queries && k < cands) {
				long long c = cand ? (long long)cand[(long long)q * cands + k] : (long long)k;
				const float* th = ent + c * dim;
				const float* a = axis + (long long)q * dim;
				const float* h = half + (long long)q * dim;
				for (int j = lane; j < dim; j += 32) acc += dim_distance(th[j], a[j], h[j], lambda);
			}
			red[qi * DIST_CANDS + ty][lane] = acc;
		}
		__syncthreads();
		if (t < DIST_QB * DIST_CANDS) {
			int qi = t / DIST_CANDS, kk = t % DIST_CANDS;
			int q = q0 + qi, kc = blockIdx.x * DIST_CANDS + kk;
			if (q < queries && kc < cands) {
				float s = 0.f;
				for (int l = 0; l < 32; l++) s += red[t][l];
				dist[(long long)q * cands + kc] = s;
			}
		}
		__syncthreads();
	}
}

// One thread per (query q, dimension j): block DIST_BWD_THREADS over j, grid
// (ceil(dim/DIST_BWD_THREADS), min(queries, 65535)), y grid-strided. Adds Σ_k g·∂/∂a
// into dAxis and Σ_k g·∂/∂h into dHalf (either may be NULL); when entAtomic ≠ 0 (cand
// must then be non-NULL or the rows distinct) also atomically adds g·∂/∂θ into dEnt.
KERNEL distance_bwd_q(float* dAxis, float* dHalf, float* dEnt, const float* dDist, const float* axis, const float* half,
                      const float* ent, const int* cand, int queries, int cands, int dim, float lambda, int entAtomic) {
	const int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= dim) return;
	for (int q = blockIdx.y; q < queries; q += gridDim.y) {
		const float a = axis[(long long)q * dim + j], h = half[(long long)q * dim + j];
		float accA = 0.f, accH = 0.f;
		for (int k = 0; k < cands; k++) {
			float g = dDist[(long long)q * cands + k];
			if (g == 0.f) continue;
			long long c = cand ? (long long)cand[(long long)q * cands + k] : (long long)k;
			float gT, gA, gH;
			dim_distance_grad(ent[c * dim + j], a, h, lambda, &gT, &gA, &gH);
			accA += g * gA;
			accH += g * gH;
			if (entAtomic && dEnt) atomicAdd(&dEnt[c * dim + j], g * gT);
		}
		if (dAxis) dAxis[(long long)q * dim + j] += accA;
		if (dHalf) dHalf[(long long)q * dim + j] += accH;
	}
}

// cand == NULL: dEnt[c][j] += Σ_q dDist[q][c]·∂/∂θ for c < cands. One thread per
// (row c, dimension j): grid (ceil(dim/DIST_BWD_THREADS), min(cands, 65535)), y
// grid-strided.
KERNEL distance_bwd_ent_all(float* dEnt, const float* dDist, const float* axis, const float* half, const float* ent, int queries,
                            int cands, int dim, float lambda) {
	const int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= dim) return;
	for (int c = blockIdx.y; c < cands; c += gridDim.y) {
		const float th = ent[(long long)c * dim + j];
		float acc = 0.f;
		for (int q = 0; q < queries; q++) {
			float g = dDist[(long long)q * cands + c];
			if (g == 0.f) continue;
			float gT, gA, gH;
			dim_distance_grad(th, axis[(long long)q * dim + j], half[(long long)q * dim + j], lambda, &gT, &gA, &gH);
			acc += g * gT;
		}
		dEnt[(long long)c * dim + j] += acc;
	}
}

// Deterministic scatter through a CSR index of the candidates: for u < nrows, entity
// row rowIds[u] is candidate pairs[start[u]] … pairs[start[u+1]−1], each pair being
// p = q·cands + k. One thread per (u, j); grid (ceil(dim/DIST_BWD_THREADS),
// min(nrows, 65535)), y grid-strided.
KERNEL distance_bwd_ent_csr(float* dEnt, const float* dDist, const float* axis, const float* half, const float* ent,
                            const int* rowIds, const int* start, const int* pairs, int nrows, int cands, int dim, float lambda) {
	const int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= dim) return;
	for (int u = blockIdx.y; u < nrows; u += gridDim.y) {
		const long long c = rowIds[u];
		const float th = ent[c * dim + j];
		float acc = 0.f;
		for (int i = start[u]; i < start[u + 1]; i++) {
			int p = pairs[i];
			float g = dDist[p];
			if (g == 0.f) continue;
			int q = p / cands;
			float gT, gA, gH;
			dim_distance_grad(th, axis[(long long)q * dim + j], half[(long long)q * dim + j], lambda, &gT, &gA, &gH);
			acc += g * gT;
		}
		dEnt[c * dim + j] += acc;
	}
}
