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
// Two sets of kernels: the first ones, here, which compute both sincosf per (pair,
// dimension) in each kernel, kept for the kernel bench (op_distance.go: Device.distFirst);
// and the table kernels below (distance_qtab, distance_*_tab), the production path, which
// take the query's half-angles from a table made once per call and rotate the entity's:
// one half_sincos per entity value. What follows about the backward's three ways holds for
// both.
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
	float dIn = fmin_nan(t, beta);
	if (inside_cone(t, beta, cu, cv)) return lambda * dIn;
	float lo = fabsf(su * cv + cu * sv), hi = fabsf(su * cv - cu * sv);
	return fmin_nan(lo, hi) + lambda * dIn;
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
	SHARED(float, red, [DIST_QB * DIST_CANDS][33]);
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

// ---------------------------------------------------------------------------------------
// The production kernels: the same distance and subgradients from a query table, with one
// half_sincos (common.h: polynomials, no range reduction) per entity value and none per
// (query, candidate) pair.
//
// With u = θ/2, α = a/2 and v = h/2, the table holds per (query, dimension) the float4
// (sin α, cos α, sin v, cos v) (distance_qtab: two half_sincos per (query, dimension),
// once per call instead of once per candidate). Per element, from sin u and cos u:
//
//	st = sin(u − α) = sin u·cos α − cos u·sin α,  ct = cos(u − α) = cos u·cos α + sin u·sin α
//	sl = sin(u − α + v) = st·cos v + ct·sin v     (the lower boundary a − h: lo = |sl|)
//	sh = sin(u − α − v) = st·cos v − ct·sin v     (the upper boundary a + h: hi = |sh|)
//
// so t = |st|, β = |sin v|, and the pair's trigonometry is multiply-adds. st's two
// products are rounded separately, so that st is exactly 0 where θ = a (both sides then
// hold the same half_sincos of the same float) and sign(0) = 0 picks the reference's
// subgradient; with h = 0, sin v = 0 and sl = sh exactly, so lo and hi tie and the
// gradient splits as in the reference.
//
// Every product that meets a sum here is an explicit fmaf or rounded on its own
// (__fmul_rn, __fadd_rn), never left to the compiler: whether nvcc, or the driver's JIT
// from PTX's unrounded mul and add, fuses `a·b + c` depends on the code around it, so the
// same expression inlined into two kernels gave different bits on an H200 (the CSR
// entity gradient against the per-pair rows', the query gradient from the entity table
// against the angles', by an ulp). Written out, each kernel's arithmetic is the same
// sequence of correctly rounded operations wherever it is inlined, and the emulator's
// (glibc's fmaf, correctly rounded) is the device's.
//
// The inside test is sl·sh < 0 (t² − β² = sin(x + y)·sin(x − y) = −sl·sh with x = u − α,
// y = v), the CPU backend's (pkg/compute/cpu): the two boundary sines are small where the
// test is decided, so it is well conditioned everywhere, where t < β in float flips on
// rounding wherever the sine is flat (β near 1: a wide cone and an entity near the
// antipode of its axis). For h = π it reduces to |ct| > |cos v|, the cosine tie-break
// of inside_cone. The same sign decides the inside term's min(t, β) split (t < β ⟺
// sl·sh < 0; a tie splits), as in the CPU backend.
//
// Where the entity's sin u, cos u come from: in the forward and the query-side backward
// each (pair, dimension) reads a different entity value, so it costs one half_sincos
// there, or, from a table of the entity half-angles made once (ent_src<true>), 8 bytes
// gathered per value instead of 4 and no half_sincos: the query-side backward, issue-
// bound, takes the table in training (distance_bwd_q_etab); the forward, lighter, the
// angles; in the CSR entity-side backward a thread owns (row, dimension), so one
// half_sincos serves all the row's pairs, and the table's float4 of each pair's query
// is read instead (16 bytes from L2 where the old kernel computed two sincosf).
//
// Gradients are computed doubled (G = 2·∂d/∂x: the halves of d|sin(x/2)|/dx fold into one
// final multiply by 0.5, exact), and ∂d/∂a = −∂d/∂θ, so a pair's element yields two
// numbers, Gθ and Gh.

#define DTAB_WARPS 8                      // distance_fwd_tab: warps per block
#define DTAB_CW 4                         // candidates per warp
#define DTAB_CANDS (DTAB_WARPS * DTAB_CW) // candidates per block
#define DTAB_THREADS (32 * DTAB_WARPS)
#define DBQ_GROUP 4                       // distance_bwd_q_tab: candidates whose loads issue together

// ent_src is where the table kernels take an entity value's half-angle sines from: the
// angle θ, mapped by half_sincos per (pair, dimension) (ent_src<false>), or an entity
// table of (sin θ/2, cos θ/2) made once (ent_src<true>: ent_half_sincos, the same
// function, so the same bits), twice the gathered bytes for no half_sincos
// (distance_fwd_etab and distance_bwd_q_etab: the training step's).
template <bool ETAB>
struct ent_src {
	typedef float T;
	static __device__ __forceinline__ void sc(T v, float* s, float* c) { half_sincos(v * 0.5f, s, c); }
};
template <>
struct ent_src<true> {
	typedef float2 T;
	static __device__ __forceinline__ void sc(T v, float* s, float* c) {
		*s = v.x;
		*c = v.y;
	}
};

// The entity half-angle table: tab[i] = (sin θ/2, cos θ/2) of θ = ent[i] by half_sincos,
// i < n (ent_src<true>).
KERNEL ent_half_sincos(float2* tab, const float* ent, int n) {
	GRID_STRIDE(i, n) {
		float s, c;
		half_sincos(ent[i] * 0.5f, &s, &c);
		tab[i] = make_float2(s, c);
	}
}

// Query table: tab[i] = (sin(a/2), cos(a/2), sin(h/2), cos(h/2)) for a = axis[i],
// h = half[i], i < n.
KERNEL distance_qtab(float4* tab, const float* axis, const float* half, int n) {
	GRID_STRIDE(i, n) {
		float sa, ca, sv, cv;
		half_sincos(axis[i] * 0.5f, &sa, &ca);
		half_sincos(half[i] * 0.5f, &sv, &cv);
		tab[i] = make_float4(sa, ca, sv, cv);
	}
}

// The rotated sines of one (pair, dimension): st, ct, sl, sh above.
struct dim_rot {
	float st, ct, sl, sh;
};

__device__ __forceinline__ dim_rot rotate_half(float su, float cu, float4 Q) {
	dim_rot r;
	r.st = __fsub_rn(__fmul_rn(su, Q.y), __fmul_rn(cu, Q.x));
	r.ct = fmaf(cu, Q.y, __fmul_rn(su, Q.x));
	const float a = __fmul_rn(r.st, Q.w);
	r.sl = fmaf(r.ct, Q.z, a);
	r.sh = fmaf(-r.ct, Q.z, a);
	return r;
}

// d_o and d_i of one (pair, dimension).
__device__ __forceinline__ void dim_distance_tab(float su, float cu, float4 Q, float* dOut, float* dIn) {
	dim_rot r = rotate_half(su, cu, Q);
	*dIn = fmin_nan(fabsf(r.st), fabsf(Q.z));
	*dOut = r.sl * r.sh < 0.f ? 0.f : fmin_nan(fabsf(r.sl), fabsf(r.sh));
}

// Gθ = 2·∂d/∂θ and Gh = 2·∂d/∂h of one (pair, dimension) (∂d/∂a = −∂d/∂θ); the
// subgradients of dim_distance_grad, with the inside test above.
__device__ __forceinline__ void dim_grad_tab(float su, float cu, float4 Q, float lambda, float* gTheta, float* gH) {
	dim_rot r = rotate_half(su, cu, Q);
	const float p = r.sl * r.sh; // < 0: inside (t < β); 0: t = β
	float gt = 0.f, gh = 0.f;
	if (!(p < 0.f)) {
		const float b = __fmul_rn(r.st, Q.z);
		float cl = fmaf(r.ct, Q.w, -b), ch = fmaf(r.ct, Q.w, b); // cosines of u − α ± v
		float gl = sgn_mul(r.sl, cl), gu = sgn_mul(r.sh, ch);             // ∂(θ, h): lo (gl, gl), hi (gu, −gu)
		float lo = fabsf(r.sl), hi = fabsf(r.sh);
		if (lo < hi) {
			gt = gl;
			gh = gl;
		} else if (lo > hi) {
			gt = gu;
			gh = -gu;
		} else {
			gt = 0.5f * (gl + gu);
			gh = 0.5f * (gl - gu);
		}
	}
	// λ·2∂t/∂θ, λ·2∂β/∂h
	const float gIn = __fmul_rn(lambda, sgn_mul(r.st, r.ct)), gB = __fmul_rn(lambda, sgnf(Q.z) * Q.w);
	if (p < 0.f) {
		gt = __fadd_rn(gt, gIn);
	} else if (p > 0.f) {
		gh = __fadd_rn(gh, gB);
	} else {
		gt = __fadd_rn(gt, __fmul_rn(0.5f, gIn));
		gh = __fadd_rn(gh, __fmul_rn(0.5f, gB));
	}
	*gTheta = gt;
	*gH = gh;
}

// dist [queries][cands] from the query table qtab [queries][dim] (distance_qtab). Block
// DTAB_THREADS; the work is cut into warp tasks, task T of queries·G (G = ceil(cands /
// DTAB_CW)) being query T / G's candidates (T mod G)·DTAB_CW + c, c < DTAB_CW, and a block
// takes DTAB_WARPS consecutive tasks: so only a query's last task can be short (blocks
// of one query's candidates would idle 7 of 8 warps on a training batch's 129th). The warp's lanes stride over the dimensions (each load
// of a row coalesced); a lane reads its (query, dimension) float4 once for the warp's
// DTAB_CW candidates (the block's other warps on the same query find it in L1), and
// issues its next dimension's loads before the current one is computed, so that the
// gathers' latency overlaps the arithmetic. Each lane sums its dimensions in order, then
// the 32 lane sums are added in order through shared memory: deterministic, and
// independent of the grid. Grid x: ceil(queries·G / DTAB_WARPS) blocks or fewer,
// grid-strided.
template <bool ETAB>
__device__ __forceinline__ void distance_fwd_tab_impl(float* dist, const float4* qtab, const typename ent_src<ETAB>::T* ent,
                                                      const int* cand, int queries, int cands, int dim, float lambda) {
	typedef ent_src<ETAB> E;
	typedef typename E::T V;
	SHARED(float, red, [DTAB_CANDS][33]);
	const int t = threadIdx.x, lane = t & 31, w = t >> 5;
	const long long G = (cands + DTAB_CW - 1) / DTAB_CW, tasks = (long long)queries * G;
	for (long long b0 = (long long)blockIdx.x * DTAB_WARPS; b0 < tasks; b0 += (long long)gridDim.x * DTAB_WARPS) {
		const long long T = b0 + w;
		int q = 0, k0 = 0, nc = 0; // this warp's query, first candidate and candidates
		if (T < tasks) {
			q = (int)(T / G);
			k0 = (int)(T % G) * DTAB_CW;
			nc = cands - k0 < DTAB_CW ? cands - k0 : DTAB_CW;
		}
		const V* row[DTAB_CW];
		for (int c = 0; c < DTAB_CW; c++) {
			long long r = 0;
			if (c < nc) r = cand ? (long long)cand[(long long)q * cands + k0 + c] : (long long)(k0 + c);
			row[c] = ent + r * dim;
		}
		const float4* qt = qtab + (long long)q * dim;
		float accO[DTAB_CW], accI[DTAB_CW];
		for (int c = 0; c < DTAB_CW; c++) accO[c] = accI[c] = 0.f;
		if (nc == DTAB_CW) {
			float4 Q = make_float4(0.f, 1.f, 0.f, 1.f);
			V th[DTAB_CW] = {};
			if (lane < dim) {
				Q = qt[lane];
				for (int c = 0; c < DTAB_CW; c++) th[c] = row[c][lane];
			}
			// The next round's loads step each pointer by 32 dimensions (one offset added,
			// where indexing each row by j recomputed four 64-bit addresses a round).
			const float4* qn = qt + lane;
			const V* rn[DTAB_CW];
			for (int c = 0; c < DTAB_CW; c++) rn[c] = row[c] + lane;
			for (int j = lane; j < dim; j += 32) {
				const int step = j + 32 < dim ? 32 : 0; // the last round reloads its own
				qn += step;
				const float4 Qn = *qn;
				V thn[DTAB_CW];
				for (int c = 0; c < DTAB_CW; c++) {
					rn[c] += step;
					thn[c] = *rn[c];
				}
				for (int c = 0; c < DTAB_CW; c++) {
					float su, cu, o, i;
					E::sc(th[c], &su, &cu);
					dim_distance_tab(su, cu, Q, &o, &i);
					accO[c] += o;
					accI[c] += i;
				}
				Q = Qn;
				for (int c = 0; c < DTAB_CW; c++) th[c] = thn[c];
			}
		} else {
			for (int c = 0; c < DTAB_CW; c++) // constant indices: the arrays stay in registers
				for (int j = lane; c < nc && j < dim; j += 32) {
					float su, cu, o, i;
					E::sc(row[c][j], &su, &cu);
					dim_distance_tab(su, cu, qt[j], &o, &i);
					accO[c] += o;
					accI[c] += i;
				}
		}
		for (int c = 0; c < DTAB_CW; c++) red[w * DTAB_CW + c][lane] = fmaf(lambda, accI[c], accO[c]);
		__syncthreads();
		if (t < DTAB_CANDS) {
			const long long Tt = b0 + t / DTAB_CW;
			const int k = (int)(Tt % G) * DTAB_CW + t % DTAB_CW;
			if (Tt < tasks && k < cands) {
				float s = 0.f;
				for (int l = 0; l < 32; l++) s += red[t][l];
				dist[(Tt / G) * cands + k] = s;
			}
		}
		__syncthreads();
	}
}

KERNEL distance_fwd_tab(float* dist, const float4* qtab, const float* ent, const int* cand, int queries, int cands, int dim,
                        float lambda) {
	distance_fwd_tab_impl<false>(dist, qtab, ent, cand, queries, cands, dim, lambda);
}

// distance_fwd_etab is distance_fwd_tab from the entity half-angle table etab
// (ent_half_sincos): the same bits.
KERNEL distance_fwd_etab(float* dist, const float4* qtab, const float2* etab, const int* cand, int queries, int cands,
                         int dim, float lambda) {
	distance_fwd_tab_impl<true>(dist, qtab, etab, cand, queries, cands, dim, lambda);
}

// dbq_slice is distance_bwd_q_tab's walk over one staged slice of n candidates (their
// gradients sg and entity row offsets srow) for dimension j: it adds g·Gθ and g·Gh into
// accT and accH, in the candidates' order, and with PAIRS writes each pair's row of dPair
// from offset pair on (a row apart); a template, so that the loop does not test dPair
// per candidate. The entity values of DBQ_GROUP candidates are loaded together, and the
// next group's before this one is computed, so that up to 2·DBQ_GROUP gathers are in
// flight.
template <bool PAIRS, bool ETAB>
__device__ __forceinline__ void dbq_slice(float* dPair, long long pair, float* dEnt, bool atomic, const float* sg,
                                          const long long* srow, int n, int j, int dim,
                                          const typename ent_src<ETAB>::T* ent, float4 Q, float lambda, float& accT,
                                          float& accH) {
	typedef ent_src<ETAB> E;
	typedef typename E::T V;
	V th[DBQ_GROUP], thn[DBQ_GROUP];
	for (int u = 0; u < DBQ_GROUP; u++) th[u] = u < n && sg[u] != 0.f ? ent[srow[u] + j] : V();
	for (int i0 = 0; i0 < n; i0 += DBQ_GROUP) {
		for (int u = 0; u < DBQ_GROUP; u++) {
			const int i = i0 + DBQ_GROUP + u;
			thn[u] = i < n && sg[i] != 0.f ? ent[srow[i] + j] : V();
		}
		for (int u = 0; u < DBQ_GROUP; u++, pair += dim) {
			const int i = i0 + u;
			if (i >= n) continue;
			const float g = sg[i];
			if (g == 0.f) {
				if (PAIRS) dPair[pair] = 0.f;
				continue;
			}
			float su, cu, gT, gH;
			E::sc(th[u], &su, &cu);
			dim_grad_tab(su, cu, Q, lambda, &gT, &gH);
			accT = fmaf(g, gT, accT);
			accH = fmaf(g, gH, accH);
			const float e = 0.5f * __fmul_rn(g, gT); // the pair's share of the entity's gradient
			if (PAIRS) dPair[pair] = e;
			if (atomic && dEnt) atomicAdd(&dEnt[srow[i] + j], e);
		}
		for (int u = 0; u < DBQ_GROUP; u++) th[u] = thn[u];
	}
}

// The query side of the backward from the query table: one thread per (query q,
// dimension j) adds −½Σ_k g·Gθ into dAxis and ½Σ_k g·Gh into dHalf (either may be NULL),
// g = dDist[q][k], skipping g = 0; with entAtomic ≠ 0 it also atomically adds ½g·Gθ into
// dEnt (not deterministic; cand non-NULL or the rows distinct); with dPair non-NULL it
// writes each pair's ½g·Gθ (0 where g = 0) into dPair [queries·cands][dim], row q·cands + k,
// for rows_sum_csr to add up per entity (deterministic: the CSR's order, the sums of
// distance_bwd_ent_csr_tab, each term and partial sum halved, which is exact above
// 2⁻¹²⁵). The block stages the
// query's candidate rows and gradients in shared memory, DIST_BWD_THREADS at a time, so
// the candidate loop reads only the entity values from global memory. Block
// DIST_BWD_THREADS over j, grid (ceil(dim/DIST_BWD_THREADS), min(queries, 65535)), y
// grid-strided.
template <bool ETAB>
__device__ __forceinline__ void distance_bwd_q_tab_impl(float* dAxis, float* dHalf, float* dEnt, float* dPair,
                                                        const float* dDist, const float4* qtab,
                                                        const typename ent_src<ETAB>::T* ent, const int* cand,
                                                        int queries, int cands, int dim, float lambda, int entAtomic) {
	SHARED(long long, srow, [DIST_BWD_THREADS]);
	SHARED(float, sg, [DIST_BWD_THREADS]);
	const int t = threadIdx.x, j = blockIdx.x * DIST_BWD_THREADS + t;
	const bool on = j < dim;
	for (int q = blockIdx.y; q < queries; q += gridDim.y) {
		const float4 Q = on ? qtab[(long long)q * dim + j] : make_float4(0.f, 1.f, 0.f, 1.f);
		float accT = 0.f, accH = 0.f;
		for (int k0 = 0; k0 < cands; k0 += DIST_BWD_THREADS) {
			const int n = cands - k0 < DIST_BWD_THREADS ? cands - k0 : DIST_BWD_THREADS;
			if (t < n) {
				const long long p = (long long)q * cands + k0 + t;
				sg[t] = dDist[p];
				srow[t] = (cand ? (long long)cand[p] : (long long)(k0 + t)) * dim;
			}
			__syncthreads();
			if (on) {
				const long long pair = ((long long)q * cands + k0) * dim + j;
				if (dPair)
					dbq_slice<true, ETAB>(dPair, pair, dEnt, entAtomic != 0, sg, srow, n, j, dim, ent, Q, lambda, accT,
					                      accH);
				else
					dbq_slice<false, ETAB>(dPair, pair, dEnt, entAtomic != 0, sg, srow, n, j, dim, ent, Q, lambda, accT,
					                       accH);
			}
			__syncthreads();
		}
		if (on && dAxis) dAxis[(long long)q * dim + j] = __fsub_rn(dAxis[(long long)q * dim + j], __fmul_rn(0.5f, accT));
		if (on && dHalf) dHalf[(long long)q * dim + j] = __fadd_rn(dHalf[(long long)q * dim + j], __fmul_rn(0.5f, accH));
	}
}

KERNEL distance_bwd_q_tab(float* dAxis, float* dHalf, float* dEnt, float* dPair, const float* dDist, const float4* qtab,
                          const float* ent, const int* cand, int queries, int cands, int dim, float lambda, int entAtomic) {
	distance_bwd_q_tab_impl<false>(dAxis, dHalf, dEnt, dPair, dDist, qtab, ent, cand, queries, cands, dim, lambda,
	                               entAtomic);
}

// distance_bwd_q_etab is distance_bwd_q_tab from the entity half-angle table etab
// (ent_half_sincos): the same bits.
KERNEL distance_bwd_q_etab(float* dAxis, float* dHalf, float* dEnt, float* dPair, const float* dDist, const float4* qtab,
                           const float2* etab, const int* cand, int queries, int cands, int dim, float lambda,
                           int entAtomic) {
	distance_bwd_q_tab_impl<true>(dAxis, dHalf, dEnt, dPair, dDist, qtab, etab, cand, queries, cands, dim, lambda,
	                              entAtomic);
}

// sgn_mul_f32: out[i] = sgn_mul(s[i], y[i]), for the tests of sgn_mul against sgnf(s)·y.
KERNEL sgn_mul_f32(float* out, const float* s, const float* y, int n) {
	GRID_STRIDE(i, n) { out[i] = sgn_mul(s[i], y[i]); }
}

// minmax_nan_f32: mn[i] = fmin_nan(x[i], y[i]), mx[i] = fmax_nan(x[i], y[i]), for the tests
// of fmin_nan and fmax_nan (common.h) against Go's min and max.
KERNEL minmax_nan_f32(float* mn, float* mx, const float* x, const float* y, int n) {
	GRID_STRIDE(i, n) {
		mn[i] = fmin_nan(x[i], y[i]);
		mx[i] = fmax_nan(x[i], y[i]);
	}
}

// cand == NULL: dEnt[c][j] += ½Σ_q dDist[q][c]·Gθ for c < cands, from the query table.
// One thread per (row c, dimension j), which computes its half_sincos once: grid
// (ceil(dim/DIST_BWD_THREADS), min(cands, 65535)), y grid-strided.
KERNEL distance_bwd_ent_all_tab(float* dEnt, const float* dDist, const float4* qtab, const float* ent, int queries, int cands,
                                int dim, float lambda) {
	const int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= dim) return;
	for (int c = blockIdx.y; c < cands; c += gridDim.y) {
		float su, cu;
		half_sincos(ent[(long long)c * dim + j] * 0.5f, &su, &cu);
		float acc = 0.f;
		for (int q = 0; q < queries; q++) {
			const float g = dDist[(long long)q * cands + c];
			if (g == 0.f) continue;
			float gT, gH;
			dim_grad_tab(su, cu, qtab[(long long)q * dim + j], lambda, &gT, &gH);
			acc = fmaf(g, gT, acc);
		}
		dEnt[(long long)c * dim + j] = __fadd_rn(dEnt[(long long)c * dim + j], __fmul_rn(0.5f, acc));
	}
}

// The deterministic CSR entity gradient from the query table: for u < nrows, row
// rowIds[u] of ent is candidate pairs[start[u]] … pairs[start[u+1]−1] (p = q·cands + k,
// in increasing order). One thread per (u, dimension j) computes its half_sincos once and
// sums ½g·Gθ over the pairs in order, each product rounded before it is added (no FMA:
// the emulator's bits, and those of distance_bwd_q_tab's per-pair rows summed by
// rows_sum_csr); the block stages each pair's query and gradient in
// shared memory (the division by cands once per pair and block, not per thread). Grid
// (ceil(dim/DIST_BWD_THREADS), min(nrows, 65535)), y grid-strided.
KERNEL distance_bwd_ent_csr_tab(float* dEnt, const float* dDist, const float4* qtab, const float* ent, const int* rowIds,
                                const int* start, const int* pairs, int nrows, int cands, int dim, float lambda) {
	SHARED(long long, sq, [DIST_BWD_THREADS]);
	SHARED(float, sg, [DIST_BWD_THREADS]);
	const int t = threadIdx.x, j = blockIdx.x * DIST_BWD_THREADS + t;
	const bool on = j < dim;
	for (int u = blockIdx.y; u < nrows; u += gridDim.y) {
		const long long e = (long long)rowIds[u] * dim + j;
		float su = 0.f, cu = 1.f;
		if (on) half_sincos(ent[e] * 0.5f, &su, &cu);
		float acc = 0.f;
		const int s0 = start[u], s1 = start[u + 1];
		for (int i0 = s0; i0 < s1; i0 += DIST_BWD_THREADS) {
			const int n = s1 - i0 < DIST_BWD_THREADS ? s1 - i0 : DIST_BWD_THREADS;
			if (t < n) {
				const int p = pairs[i0 + t];
				sg[t] = dDist[p];
				sq[t] = (long long)(p / cands) * dim;
			}
			__syncthreads();
			if (on)
				for (int i = 0; i < n; i++) {
					const float g = sg[i];
					if (g == 0.f) continue;
					float gT, gH;
					dim_grad_tab(su, cu, qtab[sq[i] + j], lambda, &gT, &gH);
					acc = __fadd_rn(acc, __fmul_rn(g, gT)); // not fused: the per-pair rows' sum
				}
			__syncthreads();
		}
		if (on) dEnt[e] = __fadd_rn(dEnt[e], __fmul_rn(0.5f, acc));
	}
}
