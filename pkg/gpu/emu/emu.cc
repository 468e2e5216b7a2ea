// The launch emulator: compiles the kernel sources of ../kernels as C++ with emu.h's
// built-ins and runs a launch block by block, each block's threads as fibers.

// The fibers switch stacks with _longjmp, which a fortified glibc would refuse to do
// ("longjmp causes uninitialized stack frame"): no fortification in this file.
#undef _FORTIFY_SOURCE
#include "emu.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "emu_api.h"

thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;
thread_local unsigned long long emu_block_serial;

// ---------------------------------------------------------------------------------------
// The kernels, compiled from the very sources nvcc compiles.
#include "../kernels/adam.cu"
#include "../kernels/angle.cu"
#include "../kernels/distance.cu"
#include "../kernels/intersect.cu"
#include "../kernels/linear.cu"
#include "../kernels/loss.cu"
#include "../kernels/mlp.cu"
#include "../kernels/negate.cu"
#include "../kernels/rotate.cu"
#include "../kernels/rows.cu"
#include "../kernels/score.cu"
#include "../kernels/tf32.cu"

thread_local unsigned char emu_lane_phase[1024];

// emu_selftest_shared is the emulator's own kernel, not the device's (its name's prefix
// keeps it out of TestKernelsMatchPTX): thread 0 of each block stores into out[blockIdx.x]
// what its shared word holds before any thread of the block has written it, then writes
// the block's index there. A correct kernel never reads shared memory it has not written,
// so the kernels cannot show that SHARED poisons each block's arrays; TestSharedPoisoned
// does with this one: every block must read 0xFFFFFFFF, not 0 or the last block's index.
KERNEL emu_selftest_shared(unsigned* out) {
	SHARED(unsigned, word, [1]);
	if (threadIdx.x == 0) {
		out[blockIdx.x] = word[0];
		word[0] = blockIdx.x;
	}
}

// ---------------------------------------------------------------------------------------
// cp.async: each thread's copies not landed yet, in the order they were started, each
// with its group (the number of groups the thread had committed before it).

namespace {

struct PendingCopy {
	float* dst;
	const float* src;
	int bytes;
	int group;
};

struct LaneCopies {
	std::vector<PendingCopy> q;
	int committed = 0;
};

thread_local LaneCopies lane_copies[1024];
bool g_copies_late = false; // this launch's mode (emu_launch; launches run one at a time)
bool g_threads_reversed = false; // this launch's thread order (emu_launch): see run_block
const uint64_t* g_ranges = nullptr; // this launch's live allocations: [start, end) pairs, by start (emu_launch)
int g_nranges = 0;

int linear_tid() { return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); }

void land(const PendingCopy& c) {
	memcpy(c.dst, c.src, c.bytes);
	memset((char*)c.dst + c.bytes, 0, 16 - c.bytes);
}

} // namespace

void emu_cp_async(float* dst, const float* src, int bytes) {
	emu_require_aligned(dst, 16, "cp.async's shared destination");
	emu_require_aligned(src, 16, "cp.async's global source");
	emu_require_inside(src, bytes, "cp.async's global source");
	if (!g_copies_late) {
		land(PendingCopy{dst, src, bytes, 0});
		return;
	}
	LaneCopies& l = lane_copies[linear_tid()];
	l.q.push_back(PendingCopy{dst, src, bytes, l.committed});
}

void emu_cp_commit() {
	if (g_copies_late) lane_copies[linear_tid()].committed++;
}

void emu_cp_wait(int n) {
	if (!g_copies_late) return;
	LaneCopies& l = lane_copies[linear_tid()];
	const int upto = n < 0 ? 1 << 30 : l.committed - n; // groups before it land
	size_t keep = 0;
	for (const PendingCopy& c : l.q) {
		if (c.group < upto)
			land(c);
		else
			l.q[keep++] = c;
	}
	l.q.resize(keep);
}

// ---------------------------------------------------------------------------------------
// Atomics.

float atomicAdd(float* address, float val) {
	uint32_t* p = reinterpret_cast<uint32_t*>(address);
	uint32_t old = __atomic_load_n(p, __ATOMIC_RELAXED), upd;
	float f;
	do {
		memcpy(&f, &old, 4);
		float nf = f + val;
		memcpy(&upd, &nf, 4);
	} while (!__atomic_compare_exchange_n(p, &old, upd, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return f;
}

double atomicAdd(double* address, double val) {
	uint64_t* p = reinterpret_cast<uint64_t*>(address);
	uint64_t old = __atomic_load_n(p, __ATOMIC_RELAXED), upd;
	double f;
	do {
		memcpy(&f, &old, 8);
		double nf = f + val;
		memcpy(&upd, &nf, 8);
	} while (!__atomic_compare_exchange_n(p, &old, upd, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return f;
}

int atomicAdd(int* address, int val) { return __atomic_fetch_add(address, val, __ATOMIC_RELAXED); }

// ---------------------------------------------------------------------------------------
// Fibers and the block scheduler.

namespace {

enum State { RUNNABLE, AT_BARRIER, DONE };

// A fiber starts from its ucontext (makecontext: its own stack, fiber_main) and from then
// on switches with _setjmp/_longjmp, which save and restore only registers: swapcontext
// would also save and restore the signal mask, a system call at every switch, and a
// barrier is one switch per thread.
struct Fiber {
	ucontext_t ctx;
	jmp_buf jb; // where it is suspended, once started
	bool started;
	dim3 idx;
	State state;
};

const size_t kStack = 64 * 1024;

struct Worker {
	ucontext_t tmpl;          // a context to copy into each fiber's before makecontext
	bool tmplReady = false;   // tmpl is taken (getcontext, once: a system call)
	jmp_buf sched;            // the scheduler, suspended where it entered a fiber
	std::vector<Fiber> fibers;
	std::vector<char*> stacks;
	int cur = 0; // the running thread
	int n = 0;   // the block's threads
	bool reversed = false; // the block's threads run last to first (at)

	// at is the thread at position k of a pass: k itself, or n−1−k when reversed (its
	// own inverse, so at(cur) is also the running thread's position).
	int at(int k) const { return reversed ? n - 1 - k : k; }
	void (*thunk)(const uint64_t*) = nullptr;
	const uint64_t* args = nullptr;
	std::string err;
	std::string fault; // the block's first misaligned access (__ubsan_handle_type_mismatch_v1)

	~Worker() {
		for (char* s : stacks) free(s);
	}
	void reserve(int n) {
		fibers.resize(n);
		while ((int)stacks.size() < n) {
			char* s = (char*)malloc(kStack);
			if (!s) abort();
			stacks.push_back(s);
		}
	}
};

thread_local Worker* tw = nullptr;

void fiber_main() {
	Worker* w = tw;
	w->thunk(w->args);
	w->fibers[w->cur].state = DONE;
	_longjmp(w->sched, 1); // never returns: the scheduler goes on after this thread
}

// enter switches to fiber i (w->cur = i) from wherever the caller has saved itself.
[[noreturn]] void enter(Worker* w, int i) {
	Fiber& f = w->fibers[i];
	w->cur = i;
	threadIdx = f.idx;
	if (!f.started) {
		f.started = true;
		setcontext(&f.ctx);
		abort(); // setcontext returns only on failure
	}
	_longjmp(f.jb, 1);
}

// Runs one block on worker w; returns false with w->err set on a barrier error.
bool run_block(Worker* w, dim3 bidx, dim3 bdim) {
	int n = (int)(bdim.x * bdim.y * bdim.z);
	if (!w->tmplReady) {
		getcontext(&w->tmpl);
		w->tmplReady = true;
	}
	for (int i = 0; i < n; i++) {
		Fiber& f = w->fibers[i];
		f.state = RUNNABLE;
		f.started = false;
		f.idx.x = i % bdim.x;
		f.idx.y = (i / bdim.x) % bdim.y;
		f.idx.z = i / (bdim.x * bdim.y);
		f.ctx = w->tmpl;
		f.ctx.uc_stack.ss_sp = w->stacks[i];
		f.ctx.uc_stack.ss_size = kStack;
		f.ctx.uc_link = nullptr; // fiber_main never returns
		makecontext(&f.ctx, fiber_main, 0);
	}
	blockIdx = bidx;
	emu_block_serial++; // the shared arrays' poison (emu_poison_shared)
	memset(emu_lane_phase, 0, sizeof emu_lane_phase);
	for (int i = 0; i < n; i++) {
		lane_copies[i].q.clear();
		lane_copies[i].committed = 0;
	}
	w->n = n;
	w->reversed = g_threads_reversed;
	for (;;) {
		// One pass: every runnable thread in index order (reversed: last to first), each
		// until its next barrier or its end. A thread that reaches a barrier hands over to
		// the next runnable thread itself (__syncthreads); control comes back here after
		// the last one, or when one ends, and the pass goes on after it. CUDA orders a
		// block's threads only by its barriers: a kernel whose results depend on the order
		// between two barriers (a missing __syncthreads) gives other results in the other
		// order, which is how the tests find one that the first order happens to hide.
		for (int k = 0; k < n;) {
			if (w->fibers[w->at(k)].state != RUNNABLE) {
				k++;
				continue;
			}
			if (_setjmp(w->sched) == 0) enter(w, w->at(k));
			k = w->at(w->cur) + 1;
		}
		int done = 0;
		for (int i = 0; i < n; i++) done += w->fibers[i].state == DONE;
		if (done == n) return true;
		if (done > 0) {
			char buf[200];
			snprintf(buf, sizeof buf,
			         "block (%u,%u,%u): %d of %d threads exited while the others wait at __syncthreads "
			         "(divergent barrier)",
			         bidx.x, bidx.y, bidx.z, done, n);
			w->err = buf;
			return false;
		}
		for (int i = 0; i < n; i++) w->fibers[i].state = RUNNABLE; // all arrived: release
	}
}

} // namespace

// __syncthreads: suspend this CUDA thread until the whole block has arrived, switching
// straight to the next runnable thread of the pass (one context switch a thread and
// barrier, not two through the scheduler), or to the scheduler after the last.
void __syncthreads() {
	Worker* w = tw;
	if (!w) abort(); // not inside a launch
	const int cur = w->cur;
	Fiber& f = w->fibers[cur];
	f.state = AT_BARRIER;
	if (_setjmp(f.jb) != 0) return; // resumed: the block has arrived
	for (int k = w->at(cur) + 1; k < w->n; k++)
		if (w->fibers[w->at(k)].state == RUNNABLE) enter(w, w->at(k));
	_longjmp(w->sched, 1);
}

// A misaligned access: the device faults on a load or store whose address is not a
// multiple of its size (a float4 at an address that is not 16-byte aligned, a float2 not
// 8-byte aligned: "misaligned address", and the context is lost), where the CPU would
// just do it. This file is compiled with -fsanitize=alignment (emu.go), which checks every
// load and store through a pointer against its type's alignment and calls this handler
// (the sanitizer's ABI, implemented here rather than linking its runtime) before a
// misaligned one. The access is not made (the compiler may use an aligned SSE move for a
// float4, which faults on the CPU too): the thread ends there, as a faulting device thread
// does; the block records its first fault and the launch fails with it, as a device's
// would.
struct UbsanSourceLocation {
	const char* file;
	uint32_t line, column;
};
struct UbsanTypeDescriptor {
	uint16_t kind, info;
	char name[1];
};
struct UbsanTypeMismatch {
	UbsanSourceLocation loc;
	const UbsanTypeDescriptor* type;
	unsigned char logAlignment, checkKind;
};

extern "C" [[noreturn]] void __ubsan_handle_type_mismatch_v1(UbsanTypeMismatch* d, uintptr_t ptr) {
	const char* file = strrchr(d->loc.file, '/');
	file = file ? file + 1 : d->loc.file;
	char buf[300];
	snprintf(buf, sizeof buf, "misaligned address 0x%llx: a %s needs %u-byte alignment (%s:%u)", (unsigned long long)ptr,
	         d->type->name, 1u << d->logAlignment, file, d->loc.line);
	emu_fault(buf);
}

extern "C" [[noreturn]] void __ubsan_handle_type_mismatch_v1_abort(UbsanTypeMismatch* d, uintptr_t ptr) {
	__ubsan_handle_type_mismatch_v1(d, ptr);
}

// An index out of an array's bounds: the device reads or writes whatever lies there (another
// array of the block's shared memory, a register array spilled to local memory) or faults,
// where the CPU would read or write a neighbouring variable. This file is compiled with
// -fsanitize=bounds-strict too (emu.go), which checks every index into an array of known
// size, the kernels' __shared__ tiles and their per-thread arrays (accumulators,
// fragments), against it and calls this handler before the access: the thread ends with a
// fault, as above. (Plain -fsanitize=bounds takes a struct's last array member for a
// flexible array and leaves it unchecked: adam_program's K was.) (An access through a pointer into such an array is not checked: the guard zones
// of device memory cover global memory, nothing covers shared memory reached that way.)
struct UbsanOutOfBounds {
	UbsanSourceLocation loc;
	const UbsanTypeDescriptor* arrayType;
	const UbsanTypeDescriptor* indexType;
};

extern "C" [[noreturn]] void __ubsan_handle_out_of_bounds(UbsanOutOfBounds* d, uintptr_t index) {
	const char* file = strrchr(d->loc.file, '/');
	file = file ? file + 1 : d->loc.file;
	// An integer index of at most a pointer's width is passed by value; its descriptor's
	// info is log2(bits) << 1 | signed.
	long long i = (long long)index;
	const unsigned bits = 1u << (d->indexType->info >> 1);
	if (d->indexType->kind == 0 && (d->indexType->info & 1) && bits < 64) {
		i = (long long)(index << (64 - bits)) >> (64 - bits);
	}
	char buf[300];
	snprintf(buf, sizeof buf, "index %lld out of bounds for type %s (%s:%u)", i, d->arrayType->name, file, d->loc.line);
	emu_fault(buf);
}

extern "C" [[noreturn]] void __ubsan_handle_out_of_bounds_abort(UbsanOutOfBounds* d, uintptr_t index) {
	__ubsan_handle_out_of_bounds(d, index);
}

[[noreturn]] void emu_fault(const char* msg) {
	Worker* w = tw;
	if (!w) { // not inside a launch: the emulator's own code
		fprintf(stderr, "emu: %s\n", msg);
		abort();
	}
	if (w->fault.empty()) {
		char at[80];
		snprintf(at, sizeof at, "block (%u,%u,%u) thread (%u,%u,%u): ", blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x,
		         threadIdx.y, threadIdx.z);
		w->fault = std::string(at) + msg;
	}
	w->fibers[w->cur].state = DONE;
	_longjmp(w->sched, 1); // as fiber_main's end: the scheduler goes on after this thread
}

void emu_require_aligned(const void* p, unsigned n, const char* what) {
	if ((uintptr_t)p % n == 0) return;
	char buf[200];
	snprintf(buf, sizeof buf, "misaligned address 0x%llx: %s needs %u-byte alignment", (unsigned long long)(uintptr_t)p,
	         what, n);
	emu_fault(buf);
}

void emu_require_inside(const void* p, long long bytes, const char* what) {
	if (bytes <= 0) return;
	const uint64_t a = (uint64_t)(uintptr_t)p, b = a + (uint64_t)bytes;
	int lo = 0, hi = g_nranges; // lo: the first allocation that starts after a
	while (lo < hi) {
		const int mid = (lo + hi) / 2;
		if (g_ranges[2 * mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	const uint64_t end = lo > 0 ? g_ranges[2 * (lo - 1) + 1] : 0; // of the allocation below a, if any
	if (lo > 0 && b <= end) return;
	char buf[240];
	if (lo > 0 && a < end)
		snprintf(buf, sizeof buf, "%s: %lld bytes at 0x%llx run %llu bytes past the end of their device allocation", what,
		         bytes, (unsigned long long)a, (unsigned long long)(b - end));
	else if (lo > 0)
		snprintf(buf, sizeof buf, "%s: %lld bytes at 0x%llx start %llu bytes past the end of a device allocation", what,
		         bytes, (unsigned long long)a, (unsigned long long)(a - end));
	else
		snprintf(buf, sizeof buf, "%s: %lld bytes at 0x%llx lie below every device allocation", what, bytes,
		         (unsigned long long)a);
	emu_fault(buf);
}

namespace {

struct Launch {
	dim3 grid, block;
	void (*thunk)(const uint64_t*);
	const uint64_t* args;
	std::atomic<long long> next{0};
	std::atomic<bool> failed{false};
	std::mutex mu;
	std::string err;
};

// Workers persist across launches (their fiber stacks are reused); launches are
// serialised.
std::mutex g_launch_mu;
std::vector<Worker*> g_workers;

struct WorkerArg {
	Launch* l;
	Worker* w;
};

void* worker_loop(void* p) {
	WorkerArg* a = (WorkerArg*)p;
	Launch* l = a->l;
	Worker* w = a->w;
	tw = w;
	w->thunk = l->thunk;
	w->args = l->args;
	gridDim = l->grid;
	blockDim = l->block;
	long long nblocks = (long long)l->grid.x * l->grid.y * l->grid.z;
	for (;;) {
		if (l->failed.load()) break;
		long long b = l->next.fetch_add(1);
		if (b >= nblocks) break;
		dim3 bidx;
		bidx.x = (unsigned)(b % l->grid.x);
		bidx.y = (unsigned)((b / l->grid.x) % l->grid.y);
		bidx.z = (unsigned)(b / ((long long)l->grid.x * l->grid.y));
		w->fault.clear();
		const bool ok = run_block(w, bidx, l->block);
		if (!ok || !w->fault.empty()) {
			std::lock_guard<std::mutex> g(l->mu);
			// A fault first: the faulting threads' ends may leave the others at a barrier.
			if (!l->failed.exchange(true)) l->err = w->fault.empty() ? w->err : w->fault;
			break;
		}
	}
	tw = nullptr;
	return nullptr;
}

// ---------------------------------------------------------------------------------------
// The dispatch table: each kernel with a thunk that unpacks its uint64 arguments.

template <typename T>
struct Conv;
template <typename T>
struct Conv<T*> {
	static T* from(uint64_t v) { return reinterpret_cast<T*>(static_cast<uintptr_t>(v)); }
	static constexpr char code = 'p';
};
template <>
struct Conv<int> {
	static int from(uint64_t v) { return (int)(uint32_t)v; }
	static constexpr char code = 'i';
};
template <>
struct Conv<unsigned> {
	static unsigned from(uint64_t v) { return (unsigned)(uint32_t)v; }
	static constexpr char code = 'i';
};
template <>
struct Conv<float> {
	static float from(uint64_t v) {
		uint32_t b = (uint32_t)v;
		float f;
		memcpy(&f, &b, 4);
		return f;
	}
	static constexpr char code = 'f';
};
template <>
struct Conv<double> {
	static double from(uint64_t v) {
		double f;
		memcpy(&f, &v, 8);
		return f;
	}
	static constexpr char code = 'd';
};

template <typename F>
struct Sig;
template <typename... A>
struct Sig<void (*)(A...)> {
	static constexpr size_t n = sizeof...(A);
	static const char* codes() {
		static const char s[] = {Conv<A>::code..., 0};
		return s;
	}
	template <void (*F)(A...), size_t... I>
	static void call(const uint64_t* a, std::index_sequence<I...>) {
		(void)a;
		F(Conv<A>::from(a[I])...);
	}
};

template <auto F>
void thunk(const uint64_t* a) {
	using S = Sig<decltype(F)>;
	S::template call<F>(a, std::make_index_sequence<S::n>{});
}

struct KernelInfo {
	const char* name;
	void (*thunk)(const uint64_t*);
	const char* (*params)();
};

#define K(f) \
	{ #f, &thunk<&f>, &Sig<decltype(&f)>::codes }

const KernelInfo table[] = {
    K(emu_selftest_shared),
    K(adam_step),
    K(adam_multi),
    K(adam_multi_vec4),
    K(fill_f32),
    K(angle_fwd),
    K(angle_fwd4),
    K(angle_bwd),
    K(angle_gather_fwd),
    K(angle_scatter_bwd),
    K(gather_rows),
    K(gather_rows4),
    K(scatter_add_rows),
    K(distance_fwd),
    K(distance_bwd_q),
    K(distance_bwd_ent_all),
    K(distance_bwd_ent_csr),
    K(distance_qtab),
    K(distance_fwd_tab),
    K(distance_bwd_q_tab),
    K(ent_half_sincos),
    K(distance_fwd_etab),
    K(distance_bwd_q_etab),
    K(distance_bwd_ent_all_tab),
    K(distance_bwd_ent_csr_tab),
    K(gemm64_nt),
    K(gemm64_nn),
    K(gemm64_tn),
    K(gemm_nt),
    K(gemm_nn),
    K(gemm_tn),
    K(gemm_nt_64),
    K(gemm_nn_64),
    K(gemm_tn_64),
    K(gemm_pipe_tn),
    K(gemm_pipe_tn_64),
    K(gemm_pipe_nn),
    K(gemm_pipe_nn_64),
    K(gemm_splitk_sum),
    K(col_sum),
    K(intersect_features),
    K(intersect_features_bwd),
    K(relu_fwd),
    K(relu_bwd),
    K(intersect_attention_fwd),
    K(intersect_attention_bwd),
    K(branch_mean),
    K(branch_mean_bwd),
    K(cardmin_fwd),
    K(cardmin_bwd),
    K(logit_fwd),
    K(union_max_fwd),
    K(loss_head_fwd_terms),
    K(loss_head_fwd_sum),
    K(loss_head_bwd),
    K(loss_head_bwd_modulus),
    K(negate_fwd),
    K(negate_bwd),
    K(rotate_fwd),
    K(rotate_bwd),
    K(rows_sum_csr),
    K(rows_sum_csr4),
    K(add_f32),
    K(mlp_input_fwd),
    K(mlp_input_bwd),
    K(mlp_output_fwd),
    K(mlp_output_bwd),
    K(dropout_mask),
    K(dropout_mask_ragged),
    K(ent_halfangles),
    K(query_halfangles),
    K(score_all),
    K(filtered_ranks),
    K(gemm64_tf32_nt),
    K(gemm64_tf32_nn),
    K(gemm64_tf32_tn),
    K(gemm_tf32_nt),
    K(gemm_tf32_nn),
    K(gemm_tf32_tn),
    K(gemm_tf32_nt_64),
    K(gemm_tf32_nn_64),
    K(gemm_tf32_tn_64),
    K(gemm_tf32_pipe_nt),
    K(gemm_tf32_pipe_nn),
    K(gemm_tf32_pipe_tn),
    K(gemm_tf32_pipe_nt_64),
    K(gemm_tf32_pipe_nn_64),
    K(gemm_tf32_pipe_tn_64),
    K(tf32_round_f32),
    K(sgn_mul_f32),
    K(minmax_nan_f32),
};

const int kNumKernels = (int)(sizeof table / sizeof table[0]);

} // namespace

extern "C" {

int emu_num_kernels(void) { return kNumKernels; }
const char* emu_kernel_name(int i) { return table[i].name; }
const char* emu_kernel_params(int i) { return table[i].params(); }

int emu_launch(int i, const unsigned* grid, const unsigned* block, const uint64_t* args, const uint64_t* ranges,
               int nranges, int workers, int lateCopies, int reverseThreads, char* err, int errlen) {
	std::lock_guard<std::mutex> g(g_launch_mu);
	g_copies_late = lateCopies != 0;
	g_threads_reversed = reverseThreads != 0;
	g_ranges = ranges;
	g_nranges = nranges;
	Launch l;
	l.grid = dim3{grid[0], grid[1], grid[2]};
	l.block = dim3{block[0], block[1], block[2]};
	l.thunk = table[i].thunk;
	l.args = args;
	long long nblocks = (long long)grid[0] * grid[1] * grid[2];
	int nthreads = (int)(block[0] * block[1] * block[2]);
	if (workers < 1) workers = 1;
	if (nblocks < workers) workers = (int)nblocks;
	while ((int)g_workers.size() < workers) g_workers.push_back(new Worker());
	std::vector<WorkerArg> wa(workers);
	for (int k = 0; k < workers; k++) {
		g_workers[k]->reserve(nthreads);
		g_workers[k]->err.clear();
		wa[k] = WorkerArg{&l, g_workers[k]};
	}
	if (workers == 1) {
		worker_loop(&wa[0]);
	} else {
		std::vector<pthread_t> th(workers);
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 1 << 20);
		int started = 0;
		for (int k = 0; k < workers; k++) {
			if (pthread_create(&th[k], &attr, worker_loop, &wa[k]) != 0) break;
			started++;
		}
		pthread_attr_destroy(&attr);
		if (started == 0) worker_loop(&wa[0]);
		for (int k = 0; k < started; k++) pthread_join(th[k], nullptr);
	}
	if (l.failed.load()) {
		snprintf(err, errlen, "%s", l.err.c_str());
		return -1;
	}
	return 0;
}

} // extern "C"
