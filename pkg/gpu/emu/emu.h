// emu.h: the CUDA built-ins the kernels in ../kernels use, for compiling them as C++ on
// the CPU (no cuda.h, no CUDA installation needed).
//
//   - threadIdx, blockIdx, blockDim, gridDim are thread_local variables that the
//     scheduler (emu.cc) sets before it switches to a CUDA thread;
//   - each CUDA thread of a block is a cooperative fiber on one OS thread (started from a
//     ucontext, switched with _setjmp/_longjmp); __syncthreads() suspends the fiber
//     until every thread of the block has arrived, so shared-memory tiling runs exactly
//     as on the device (a thread that exits while others wait at a barrier is reported
//     as an error);
//   - warp-level operations are emulated with block barriers (tf32.cu's mma_tf32: the
//     lanes pool their fragment registers), so every thread of the block must reach them;
//   - cp.async copies (common.h's cp_async16) land at once, or as late as their waits
//     allow (emu_cp_async below);
//   - a shared array (common.h's SHARED) is `static thread_local`: one copy per OS
//     thread, i.e. per block in flight, shared by that block's fibers, and filled with
//     0xFF bytes at each block's start (emu_poison_shared), so that a read before any
//     write shows. __shared__ itself is left undefined here, so a kernel that declares
//     an array with it rather than SHARED does not compile for the emulator;
//   - blocks run in parallel on a few OS threads, so atomicAdd is a real atomic;
//   - the math functions are <math.h>'s (glibc), within a few ulp of CUDA's.
#ifndef ROCONE_EMU_H
#define ROCONE_EMU_H

#include <math.h>
#include <stdint.h>
#include <string.h>

struct dim3 {
	unsigned int x, y, z;
};

extern thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...) // occupancy hints for nvcc only

void __syncthreads();

// emu_block_serial numbers the blocks each OS thread runs, from 1. emu_poison_shared (the
// emulator's side of common.h's SHARED) fills a shared array with 0xFF bytes the first
// time a thread of a block reaches its declaration, *stamp remembering the block, as the
// device leaves an SM's shared memory holding its previous block's data.
extern thread_local unsigned long long emu_block_serial;
inline void emu_poison_shared(unsigned long long* stamp, void* array, size_t bytes) {
	if (*stamp != emu_block_serial) {
		*stamp = emu_block_serial;
		memset(array, 0xff, bytes);
	}
}

// __threadfence: blocks run on several OS threads, so a real fence.
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// emu_lane_phase: per thread of the running block, a byte that emulated warp-collective
// operations may keep their state in, a bit each (tf32.cu: bit 0, which of two scratch
// buffers mma_tf32's next call uses; bit 1, ldsm_x4's); zero when each block starts.
extern thread_local unsigned char emu_lane_phase[1024];

// cp.async (common.h's cp_async16, cp_async_commit, cp_async_wait): emu_cp_async starts a
// 16-byte copy of which the first `bytes` are read and the rest zeroed; emu_cp_commit
// closes the thread's group of copies; emu_cp_wait(n) lands every copy of the thread's
// groups but the n most recent (n < 0: every copy). By default a copy lands at once
// (emu_cp_async), which shows a copy into memory still being read; in the late mode of a
// launch (Device.SetLateCopies) it lands only when a wait requires it, which shows a read
// that no wait covered.
void emu_cp_async(float* dst, const float* src, int bytes);

// emu_fault ends the calling CUDA thread with a device fault: the launch fails with msg,
// as a device's would (emu.cc). emu_require_aligned faults unless p is a multiple of n
// bytes: for the instructions the device requires aligned that the compiler's alignment
// checks do not see (cp.async's 16 bytes, ldmatrix's rows, emu_cp_async and ldsm_x4).
// emu_require_inside faults unless the `bytes` bytes at p (none if bytes ≤ 0) lie inside
// one live device allocation: the reads of a GEMM operand's chunks (cp.async's source,
// common.h's rt_load4), whose values past an operand's edge go only into outputs that
// are never written, so that a read past the end shows nowhere else (the guard zones'
// NaNs do not reach a result); on the device such a read may fault.
[[noreturn]] void emu_fault(const char* msg);
void emu_require_aligned(const void* p, unsigned n, const char* what);
void emu_require_inside(const void* p, long long bytes, const char* what);
void emu_cp_commit();
void emu_cp_wait(int n);

// The round-to-nearest arithmetic intrinsics: on the CPU, plain float operations (the
// emulator's C++ is compiled without FMA contraction on amd64's baseline).
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }

// float4 and make_float4, for 16-byte loads and stores (the kernels use them only where
// the host has checked the alignment; a misaligned one fails the launch, as on the
// device: emu.cc's __ubsan_handle_type_mismatch_v1).
struct alignas(16) float4 {
	float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }

// float2, for the 8-byte shared loads of tf32.cu's fragments and distance.cu's entity
// half-angle table.
struct alignas(8) float2 {
	float x, y;
};
inline float2 make_float2(float x, float y) { return float2{x, y}; }

// The bit casts between float and its 32-bit pattern.
inline unsigned __float_as_uint(float x) {
	unsigned u;
	memcpy(&u, &x, 4);
	return u;
}
inline float __uint_as_float(unsigned u) {
	float x;
	memcpy(&x, &u, 4);
	return x;
}

float atomicAdd(float* address, float val);
double atomicAdd(double* address, double val);
int atomicAdd(int* address, int val);

#endif
