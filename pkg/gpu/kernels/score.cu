// Evaluation scoring: the cone distance (distance.cu) of every query against every row of
// the entity table, rank's hot loop, without a transcendental call in the inner loop.
//
// The identities are the fast CPU backend's (pkg/compute/cpu/distance.go). With u = θ/2
// for the entity angle θ and the query's half-angles α = a/2, α₋ = (a − h)/2,
// α₊ = (a + h)/2 (a the axis, h the half-aperture):
//
//	t  = |sin(u − α)|,  lo = |sin(u − α₋)|,  hi = |sin(u − α₊)|,  β = |sin(h/2)|
//
// and each sine of a difference is sin u·cos v − cos u·sin v over two tables made once:
// the entity table's sin/cos of u (per entity and dimension; once per scorer) and the
// query table's sin/cos of α, α₋, α₊ and β (per query and dimension; once per call). The
// inside test t < β is made as sin(u − α₋)·sin(u − α₊) < 0 (t² − β² is that product),
// which stays well conditioned where the sine is flat (a wide cone, an entity opposite
// its axis), where t < β itself flips on rounding. So each (query, entity, dimension)
// costs six multiply-adds, a product, a compare and a few min/abs/selects: about a
// sixth of the sincos-based distance_fwd, and the tables are read from shared memory.
//
// Tiling: a block scores SCORE_TQ queries against SCORE_TE entity rows, staging
// SCORE_TD dimensions of both tables at a time in shared memory; each thread holds 4 × 4
// (query, entity) pairs, so every entity value read from shared memory serves four
// queries and every (broadcast) query value four entities. Each pair's sums run over the
// dimensions in order in one thread: the result does not depend on the launch geometry.
#include "common.h"

#define SCORE_TQ 32       // queries per block tile (8 thread rows × 4)
#define SCORE_TE 128      // entity rows per block tile (32 thread columns × 4)
#define SCORE_TD 16       // dimensions per shared-memory stage
#define SCORE_THREADS 256 // 32 × 8
#define SCORE_QF 8        // floats per (query, dimension) in the query table

// Entity table: tab[2i] = sin(ent[i]/2), tab[2i+1] = cos(ent[i]/2).
KERNEL ent_halfangles(float* tab, const float* ent, int n) {
	GRID_STRIDE(i, n) {
		float s, c;
		sincosf(ent[i] * 0.5f, &s, &c);
		tab[2 * i] = s;
		tab[2 * i + 1] = c;
	}
}

// Query table, SCORE_QF floats per (query, dimension) i < n: sin α, cos α, sin α₋,
// cos α₋, sin α₊, cos α₊, β, 0. The boundaries a ∓ h are rounded to float first, as
// the CPU backend does.
KERNEL query_halfangles(float* tab, const float* axis, const float* half, int n) {
	GRID_STRIDE(i, n) {
		float a = axis[i], h = half[i];
		float* p = tab + i * SCORE_QF;
		sincosf(a * 0.5f, &p[0], &p[1]);
		sincosf((a - h) * 0.5f, &p[2], &p[3]);
		sincosf((a + h) * 0.5f, &p[4], &p[5]);
		p[6] = fabsf(sinf(h * 0.5f));
		p[7] = 0.f;
	}
}

// The staging of one SCORE_TD-dimension slice, 16 bytes at a time: each thread's
// SCORE_LOADS float4s of the query tile (a query's slice is 32 contiguous float4s) and
// SCORE_LOADS of the entity tile (a row's slice is 8 float4s: sin, cos of two dimensions),
// consecutive threads on consecutive float4s. Needs an even dim (a row's slice then
// starts 16-byte aligned) and a full slice.
#define SCORE_LOADS 4 // SCORE_TQ·SCORE_TD·SCORE_QF / 4 / SCORE_THREADS, and the same for the entities

__device__ __forceinline__ void score_load(float4* pq, float4* pe, const float* qtab, const float* etab, int q0, int e0,
                                           int j0, int queries, int cands, int dim, int t) {
	const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
	for (int r = 0; r < SCORE_LOADS; r++) {
		const int f = t + SCORE_THREADS * r;
		const int q = q0 + (f >> 5), e = e0 + (f >> 3);
		pq[r] = q < queries ? ((const float4*)(qtab + ((long long)q * dim + j0) * SCORE_QF))[f & 31] : zero;
		pe[r] = e < cands ? ((const float4*)(etab + ((long long)e * dim + j0) * 2))[f & 7] : zero;
	}
}

// dist[q][e] for q < queries, e < cands (≤ the table's rows): Σ_j d_o + λ·Σ_j d_i.
// qtab is [queries][dim][SCORE_QF], etab [rows][dim][2]. Block SCORE_THREADS; grid
// (ceil(cands/SCORE_TE), min(ceil(queries/SCORE_TQ), 65535)), y grid-strided. With an
// even dim, full slices are staged through registers (score_load): the next slice's loads
// are issued before the current one is scored, so their latency hides behind its
// arithmetic; a last partial slice, and every slice of an odd dim, is staged a float at a
// time. The sums are the same either way.
extern "C" __global__ void __launch_bounds__(SCORE_THREADS, 2)
    score_all(float* dist, const float* qtab, const float* etab, int queries, int cands, int dim, float lambda) {
	SHARED(__align__(16) float, qs, [SCORE_TD][SCORE_TQ][SCORE_QF]); // query values, broadcast within a warp
	SHARED(float, es, [SCORE_TD][SCORE_TE]);                          // sin u
	SHARED(float, ec, [SCORE_TD][SCORE_TE]);                          // cos u
	const int t = threadIdx.x, tx = t & 31, ty = t >> 5;
	const int e0 = blockIdx.x * SCORE_TE;
	const bool vec = (dim & 1) == 0;
	for (int q0 = blockIdx.y * SCORE_TQ; q0 < queries; q0 += gridDim.y * SCORE_TQ) {
		float accOut[4][4], accIn[4][4];
		for (int a = 0; a < 4; a++)
			for (int b = 0; b < 4; b++) accOut[a][b] = accIn[a][b] = 0.f;
		float4 pq[SCORE_LOADS], pe[SCORE_LOADS];
		if (vec && SCORE_TD <= dim) score_load(pq, pe, qtab, etab, q0, e0, 0, queries, cands, dim, t);
		for (int j0 = 0; j0 < dim; j0 += SCORE_TD) {
			const int nd = dim - j0 < SCORE_TD ? dim - j0 : SCORE_TD;
			if (vec && nd == SCORE_TD) {
				for (int r = 0; r < SCORE_LOADS; r++) {
					const int f = t + SCORE_THREADS * r, w = f & 31, ee = f >> 3, jj = (f & 7) * 2;
					*(float4*)&qs[w >> 1][f >> 5][(w & 1) * 4] = pq[r];
					es[jj][ee] = pe[r].x;
					ec[jj][ee] = pe[r].y;
					es[jj + 1][ee] = pe[r].z;
					ec[jj + 1][ee] = pe[r].w;
				}
			} else {
				// Each query's nd·SCORE_QF floats and each row's 2·nd are contiguous.
				for (int i = t; i < SCORE_TQ * SCORE_TD * SCORE_QF; i += SCORE_THREADS) {
					int qq = i / (SCORE_TD * SCORE_QF), r = i % (SCORE_TD * SCORE_QF), jj = r / SCORE_QF, f = r % SCORE_QF;
					int q = q0 + qq;
					qs[jj][qq][f] = (q < queries && jj < nd) ? qtab[((long long)q * dim + j0 + jj) * SCORE_QF + f] : 0.f;
				}
				for (int i = t; i < SCORE_TE * SCORE_TD * 2; i += SCORE_THREADS) {
					int ee = i / (SCORE_TD * 2), r = i % (SCORE_TD * 2), jj = r >> 1;
					int e = e0 + ee;
					float v = (e < cands && jj < nd) ? etab[((long long)e * dim + j0 + jj) * 2 + (r & 1)] : 0.f;
					if (r & 1)
						ec[jj][ee] = v;
					else
						es[jj][ee] = v;
				}
			}
			__syncthreads();
			if (vec && j0 + 2 * SCORE_TD <= dim)
				score_load(pq, pe, qtab, etab, q0, e0, j0 + SCORE_TD, queries, cands, dim, t); // the next slice
			for (int jj = 0; jj < nd; jj++) {
				float su[4], cu[4];
				for (int b = 0; b < 4; b++) {
					su[b] = es[jj][tx + 32 * b];
					cu[b] = ec[jj][tx + 32 * b];
				}
				for (int a = 0; a < 4; a++) {
					const float* p = qs[jj][ty + 8 * a];
					const float sA = p[0], cA = p[1], sL = p[2], cL = p[3], sH = p[4], cH = p[5], beta = p[6];
					for (int b = 0; b < 4; b++) {
						float tt = fabsf(su[b] * cA - cu[b] * sA);
						float lo = su[b] * cL - cu[b] * sL, hi = su[b] * cH - cu[b] * sH;
						accIn[a][b] += fmin_nan(tt, beta);
						accOut[a][b] += lo * hi < 0.f ? 0.f : fmin_nan(fabsf(lo), fabsf(hi));
					}
				}
			}
			__syncthreads();
		}
		for (int a = 0; a < 4; a++) {
			int q = q0 + ty + 8 * a;
			if (q >= queries) continue;
			for (int b = 0; b < 4; b++) {
				int e = e0 + tx + 32 * b;
				if (e < cands) dist[(long long)q * cands + e] = accOut[a][b] + lambda * accIn[a][b];
			}
		}
	}
}

// Filtered ranks (docs/queries.md §5; pkg/eval.Ranker, whose semantics these are): for query
// q with scores row s = scores[q][0 … cands−1], hard answers hard[hardStart[q] …
// hardStart[q+1]−1] and all its answers (easy and hard) ans[ansStart[q] …
// ansStart[q+1]−1], the rank of hard answer h is
//
//	1 + #{v ∉ answers : s[v] > s[h] or (s[v] == s[h] and v < h)}
//
// computed as the count over every entity minus the count over the answers (h is not
// ranked above itself). ranks[hardStart[q] + i] receives it, or 0 when the row holds a
// NaN (the host reports the error). A block per query (grid-strided), a thread per hard
// answer: a warp's threads read the same score at a time (a broadcast), so the row
// streams through L1 once per warp. The answer lists are checked by the host.
KERNEL filtered_ranks(int* ranks, const float* scores, const int* hardStart, const int* hard, const int* ansStart,
                      const int* ans, int queries, int cands) {
	for (int q = blockIdx.x; q < queries; q += gridDim.x) {
		const float* s = scores + (long long)q * cands;
		for (int i = hardStart[q] + threadIdx.x; i < hardStart[q + 1]; i += blockDim.x) {
			const int h = hard[i];
			const float sh = s[h];
			int above = 0, nan = sh != sh;
			for (int v = 0; v < cands; v++) {
				float sv = s[v];
				above += (sv > sh) | ((sv == sh) & (v < h));
				nan |= sv != sv;
			}
			for (int j = ansStart[q]; j < ansStart[q + 1]; j++) {
				int a = ans[j];
				float sa = s[a];
				above -= (sa > sh) | ((sa == sh) & (a < h));
			}
			ranks[i] = nan ? 0 : above + 1;
		}
	}
}
