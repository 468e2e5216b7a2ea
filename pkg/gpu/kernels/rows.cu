// Rows and buffers: gathers and scatter-adds of embedding rows by id, the deterministic
// row sums below, and whole-buffer fill and add.
//
// A batch gathers table rows by id (anchors, relations); ids repeat, and the gradient of
// a row is the sum over its occurrences. Atomic adds would make that sum's order, and so
// its last bits, vary from run to run. Instead the host groups the occurrences by id (a
// CSR index: rowIds, start, pairs, each row's occurrences in increasing position) and one
// thread per (row, dimension) adds them up in that order.
#include "common.h"

#define ROWS_THREADS 128

// dst[rowIds[u]][j] += Σ_{i ∈ [start[u], start[u+1])} src[pairs[i]][j], for u < nrows,
// j < d. Grid: x covers d in blocks of ROWS_THREADS, y strides over the rows.
KERNEL rows_sum_csr(float* dst, const float* src, const int* rowIds, const int* start, const int* pairs, int nrows, int d) {
	const int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= d) return;
	for (int u = blockIdx.y; u < nrows; u += gridDim.y) {
		float acc = 0.f;
		for (int i = start[u]; i < start[u + 1]; i++) acc += src[(long long)pairs[i] * d + j];
		dst[(long long)rowIds[u] * d + j] += acc;
	}
}

// rows_sum_csr4 is rows_sum_csr four dimensions at a time (float4, d4 = d/4: every row
// 16-byte aligned, which the host checks): a quarter of the threads and instructions for
// the same bytes, and each component summed in the same order, so the same bits.
KERNEL rows_sum_csr4(float4* dst, const float4* src, const int* rowIds, const int* start, const int* pairs, int nrows,
                     int d4) {
	const int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= d4) return;
	for (int u = blockIdx.y; u < nrows; u += gridDim.y) {
		float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
		for (int i = start[u]; i < start[u + 1]; i++) {
			float4 x = src[(long long)pairs[i] * d4 + j];
			acc.x += x.x;
			acc.y += x.y;
			acc.z += x.z;
			acc.w += x.w;
		}
		float4* o = &dst[(long long)rowIds[u] * d4 + j];
		float4 y = *o;
		y.x += acc.x;
		y.y += acc.y;
		y.z += acc.z;
		y.w += acc.w;
		*o = y;
	}
}

// dst[i] += src[i] for i < n.
KERNEL add_f32(float* dst, const float* src, int n) {
	GRID_STRIDE(i, n) { dst[i] += src[i]; }
}

// out[r][j] = table[idx[r]][j] (a plain row gather, e.g. the raw S.E. shifts).
KERNEL gather_rows(float* out, const float* table, const int* idx, int rows, int d) {
	GRID_STRIDE(i, (long long)rows * d) {
		long long r = i / d, j = i - r * d;
		out[i] = table[(long long)idx[r] * d + j];
	}
}

// gather_rows4 is gather_rows four dimensions at a time (float4, d4 = d/4, rows 16-byte
// aligned): x covers a row's quads, y strides over the rows, so no 64-bit division per
// element.
KERNEL gather_rows4(float4* out, const float4* table, const int* idx, int rows, int d4) {
	const int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= d4) return;
	for (int r = blockIdx.y; r < rows; r += gridDim.y) out[(long long)r * d4 + j] = table[(long long)idx[r] * d4 + j];
}

// table[idx[r]][j] += src[r][j], atomically (rows may repeat).
KERNEL scatter_add_rows(float* table, const float* src, const int* idx, int rows, int d) {
	GRID_STRIDE(i, (long long)rows * d) {
		long long r = i / d, j = i - r * d;
		atomicAdd(&table[(long long)idx[r] * d + j], src[i]);
	}
}

// x[i] = value for i < n (fills, e.g. clearing gradients of a non-float32 view).
KERNEL fill_f32(float* x, float value, int n) {
	GRID_STRIDE(i, n) { x[i] = value; }
}
