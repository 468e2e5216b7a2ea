// Adam, dense, with PyTorch's defaults and exact update order (torch.optim.Adam, no
// weight decay, no amsgrad): for step t ≥ 1,
//
//	m ← lerp(m, g, 1 − β1)            = m + (1 − β1)(g − m)
//	v ← β2·v + (1 − β2)·g²
//	p ← p − stepSize · m / (sqrt(v)/bc2Sqrt + eps)
//
// with stepSize = lr/(1 − β1^t), bc2Sqrt = sqrt(1 − β2^t), 1 − β1 and 1 − β2 computed by
// the host in double and rounded to float, as PyTorch passes its Python-float scalars.
// Every element is updated, gradient zero or not (docs/training.md §1): a tensor known to
// have no gradient at an update (the intersection's weights after a batch of paths) may
// have that step deferred and taken later, in order, with a zero gradient and the step's
// own constants, before the tensor is next read (adam_program): the same arithmetic, so
// the same bits, with one pass over the tensor for several steps. The gradient is
// cleared after it is read when the program says so, ready for the next step.
//
// In the one-launch kernels a tensor may be an angle tensor: its parameters x are used as
// angles θ = π·tanh(x/R) (the entity and relation tables), its g is the gradient of θ, and
// its theta the forward's θ; the kernel maps the gradient to x's (angle_grad, angle_bwd's
// arithmetic) as it reads it. That saves the separate angle_bwd pass over the table
// (reading dθ, θ and the raw gradient, writing the raw gradient) and the raw gradient's
// clearing. Having updated x it writes θ = angle_of(x) over the θ it read: the next
// update's angles, which would otherwise take angle_fwd's pass (reading x again, writing
// θ); and, where the tensor has one, their half-angle sines and cosines (sc [n][2],
// half_sincos: ent_half_sincos's bits), the table the distance backward reads, which
// would otherwise take a pass of its own. R is the launch's (every angle tensor shares
// it).
#include "common.h"

// adam_math is one element's update on registers: the arithmetic of every kernel below,
// in one place, so that they agree bit for bit. The products and sums are rounded one by
// one (__fmul_rn, __fadd_rn, __fsub_rn: nvcc never fuses them into an FMA), because
// whether nvcc contracts `a·b + c` depends on the code around it: adam_multi_vec4's
// four-wide copy of an FMA-contracted expression differed from adam_step's by an ulp on an
// H200. Rounded one by one, the result depends on these operations alone, not on the
// compiler's choices (and the launch emulator computes the same bits).
__device__ __forceinline__ void adam_math(float& p, float g, float& m, float& v, float beta2, float oneMinusBeta1,
                                          float oneMinusBeta2, float eps, float stepSize, float bc2Sqrt) {
	// PyTorch's lerp with weight w < 0.5: self + w·(end − self).
	m = __fadd_rn(m, __fmul_rn(oneMinusBeta1, __fsub_rn(g, m)));
	v = __fadd_rn(__fmul_rn(v, beta2), __fmul_rn(oneMinusBeta2, __fmul_rn(g, g)));
	float denom = __fadd_rn(sqrtf(v) / bc2Sqrt, eps);
	p = __fsub_rn(p, __fmul_rn(stepSize, m / denom));
}

// adam_element updates element i in memory.
__device__ __forceinline__ void adam_element(float* p, float* g, float* m, float* v, long long i, float beta2,
                                             float oneMinusBeta1, float oneMinusBeta2, float eps, float stepSize,
                                             float bc2Sqrt, int zeroGrad) {
	float pi = p[i], mi = m[i], vi = v[i];
	adam_math(pi, g[i], mi, vi, beta2, oneMinusBeta1, oneMinusBeta2, eps, stepSize, bc2Sqrt);
	m[i] = mi;
	v[i] = vi;
	p[i] = pi;
	if (zeroGrad) g[i] = 0.f;
}

KERNEL adam_step(float* p, float* g, float* m, float* v, int n, float beta2, float oneMinusBeta1, float oneMinusBeta2,
                 float eps, float stepSize, float bc2Sqrt, int zeroGrad) {
	GRID_STRIDE(i, n) { adam_element(p, g, m, v, i, beta2, oneMinusBeta1, oneMinusBeta2, eps, stepSize, bc2Sqrt, zeroGrad); }
}

// ADAM_CLASSES is how many classes of tensors one adam_multi launch handles (see there).
#define ADAM_CLASSES 8

// ADAM_STEPS is the most steps a class takes in one launch: its deferred steps (up to
// ADAM_STEPS − 1, Adam.SetDeferrable), then the present one.
#define ADAM_STEPS 3

// ADAM_PTRS is the pointers per tensor in an adam_multi launch's table: p, g, m, v, theta,
// sc.
#define ADAM_PTRS 6

// adam_cursor follows one thread of an adam_multi launch through the tensors: the
// thread's element indices e increase, so its tensor only moves forward, and t, the
// tensor's pointers and its class change only where e crosses into the next tensor.
// Tensor t's buffers are ptrs[2·ADAM_PTRS·t …], the device addresses of p, g, m, v and
// theta (NULL but for an angle tensor), each as two 32-bit halves (low first); its indices
// are off[t] … off[t+1] − 1.
struct adam_cursor {
	int t = -1;
	long long first = 0, next = 0;
	float *p = 0, *g = 0, *m = 0, *v = 0, *th = 0, *sc = 0;
	int cls = 0;

	// seek moves to e's tensor; it returns whether it moved (cls is then its class).
	__device__ __forceinline__ bool seek(long long e, const unsigned* ptrs, const int* off, const int* clsOf, int T) {
		if (e < next) return false;
		do t++;
		while (t < T - 1 && e >= off[t + 1]);
		first = off[t];
		next = off[t + 1];
		const unsigned* q = ptrs + 2 * ADAM_PTRS * t;
		p = (float*)(((unsigned long long)q[1] << 32) | q[0]);
		g = (float*)(((unsigned long long)q[3] << 32) | q[2]);
		m = (float*)(((unsigned long long)q[5] << 32) | q[4]);
		v = (float*)(((unsigned long long)q[7] << 32) | q[6]);
		th = (float*)(((unsigned long long)q[9] << 32) | q[8]);
		sc = (float*)(((unsigned long long)q[11] << 32) | q[10]);
		cls = clsOf[t];
		return true;
	}
};

// adam_angle writes an angle tensor's new angle θ of x into th[k] and, with sc, its
// half-angle sine and cosine into sc[2k], sc[2k+1].
__device__ __forceinline__ void adam_angle(float* th, float* sc, long long k, float x, float R) {
	const float t = angle_of(x, R);
	th[k] = t;
	if (sc) {
		float s, c;
		half_sincos(t * 0.5f, &s, &c);
		sc[2 * k] = s;
		sc[2 * k + 1] = c;
	}
}

// adam_program is what one launch does to the tensors of one class (Adam.Step builds it
// per class, the device reads prog[c] and K[c]): n steps (0 … ADAM_STEPS), step s with
// step size K[2s] and bias correction K[2s+1]; the gradient is step gs's (the present
// step, n − 1, or the first deferred one, 0, when its gradient waited in the buffer), the
// others' gradient is zero (the deferred steps of an idle tensor, Adam.SetIdle); and
// whether the gradient is cleared afterwards. prog = n | gs << 4 | clear << 8, gs = 15:
// no step takes the gradient.
struct adam_program {
	int n = 0, gs = 15;
	bool clear = false;
	float K[2 * ADAM_STEPS];

	__device__ __forceinline__ void load(const int* prog, const float* Kc, int c) {
		const int w = prog[c];
		n = w & 15;
		gs = (w >> 4) & 15;
		clear = (w >> 8) & 1;
		for (int i = 0; i < 2 * ADAM_STEPS; i++) K[i] = Kc[2 * ADAM_STEPS * c + i];
	}

	// run applies the program's steps to one element: p, m, v in place, g the gradient
	// of step gs (an angle tensor's already mapped to x's).
	__device__ __forceinline__ void run(float& p, float g, float& m, float& v, float beta2, float oneMinusBeta1,
	                                    float oneMinusBeta2, float eps) const {
		for (int s = 0; s < ADAM_STEPS; s++)
			if (s < n) adam_math(p, s == gs ? g : 0.f, m, v, beta2, oneMinusBeta1, oneMinusBeta2, eps, K[2 * s], K[2 * s + 1]);
	}
};

// adam_multi is adam_step over several tensors in one launch (adam_cursor: the tensors'
// buffers and index ranges, off [T+1], off[T] = total), each tensor in class cls[t] <
// ADAM_CLASSES, whose program (adam_program: prog [ADAM_CLASSES], K [ADAM_CLASSES]
// [2·ADAM_STEPS]) says which steps it takes: the classes group tensors by their own step
// numbers (a tensor that joined late, Adam.SetLags) and by whether their steps were
// deferred (Adam.SetIdle). The element arithmetic is adam_step's, step by step, so the
// results are bit-identical to one adam_step launch per tensor and step.
KERNEL adam_multi(const unsigned* ptrs, const int* off, const int* cls, int T, int total, float beta2, float oneMinusBeta1,
                  float oneMinusBeta2, float eps, const int* prog, const float* K, float R) {
	adam_cursor c;
	adam_program pr;
	GRID_STRIDE(e, total) {
		if (c.seek(e, ptrs, off, cls, T)) pr.load(prog, K, c.cls);
		const long long i = e - c.first;
		if (pr.n > 0) {
			float pi = c.p[i], mi = c.m[i], vi = c.v[i];
			float gi = 0.f;
			if (pr.gs < pr.n) gi = c.th ? angle_grad(c.g[i], c.th[i], R) : c.g[i];
			pr.run(pi, gi, mi, vi, beta2, oneMinusBeta1, oneMinusBeta2, eps);
			c.m[i] = mi;
			c.v[i] = vi;
			c.p[i] = pi;
			if (c.th) adam_angle(c.th, c.sc, i, pi, R);
		}
		if (pr.clear) c.g[i] = 0.f;
	}
}

// adam_multi_vec4 is adam_multi four elements at a time, with 16-byte loads and stores:
// four times the bytes in flight per thread, for a kernel that only streams memory (7
// streams of the parameters' size, 8 with the clear). Its index space is quads: tensor t
// owns quads offq[t] … offq[t+1] − 1, ⌈cnt[t]/4⌉ of them, the last one partial (its
// elements past cnt[t] are left alone). Every p, g, m and v must be 16-byte aligned (the
// host checks, and launches adam_multi otherwise; theta and sc too, for an angle
// tensor). The arithmetic is adam_math (and angle_grad, angle_of, half_sincos), so the
// results are bit-identical to adam_multi's, and to angle_bwd, adam_step, angle_fwd,
// then ent_half_sincos.
KERNEL adam_multi_vec4(const unsigned* ptrs, const int* offq, const int* cnt, const int* cls, int T, int totalq,
                       float beta2, float oneMinusBeta1, float oneMinusBeta2, float eps, const int* prog, const float* K,
                       float R) {
	adam_cursor c;
	adam_program pr;
	int n = 0;
	GRID_STRIDE(e, totalq) {
		if (c.seek(e, ptrs, offq, cls, T)) {
			pr.load(prog, K, c.cls);
			n = cnt[c.t];
		}
		float *p = c.p, *g = c.g, *m = c.m, *v = c.v;
		const long long i = 4 * (e - c.first);
		float *th = c.th, *sc = c.sc;
		const bool grad = pr.gs < pr.n;
		if (i + 4 > n) { // the tensor's partial last quad, element by element
			for (long long k = i; k < n; k++) {
				if (pr.n > 0) {
					float pk = p[k], mk = m[k], vk = v[k];
					float gk = 0.f;
					if (grad) gk = th ? angle_grad(g[k], th[k], R) : g[k];
					pr.run(pk, gk, mk, vk, beta2, oneMinusBeta1, oneMinusBeta2, eps);
					m[k] = mk;
					v[k] = vk;
					p[k] = pk;
					if (th) adam_angle(th, sc, k, pk, R);
				}
				if (pr.clear) g[k] = 0.f;
			}
			continue;
		}
		float4* g4 = (float4*)(g + i);
		if (pr.n == 0) {
			if (pr.clear) *g4 = make_float4(0.f, 0.f, 0.f, 0.f);
			continue;
		}
		float4* p4 = (float4*)(p + i);
		float4* m4 = (float4*)(m + i);
		float4* v4 = (float4*)(v + i);
		float4 gv = make_float4(0.f, 0.f, 0.f, 0.f), pv = *p4, mv = *m4, vv = *v4;
		if (grad) {
			gv = *g4;
			if (th) {
				const float4 tv = *(const float4*)(th + i);
				gv = make_float4(angle_grad(gv.x, tv.x, R), angle_grad(gv.y, tv.y, R), angle_grad(gv.z, tv.z, R),
				                 angle_grad(gv.w, tv.w, R));
			}
		}
		pr.run(pv.x, gv.x, mv.x, vv.x, beta2, oneMinusBeta1, oneMinusBeta2, eps);
		pr.run(pv.y, gv.y, mv.y, vv.y, beta2, oneMinusBeta1, oneMinusBeta2, eps);
		pr.run(pv.z, gv.z, mv.z, vv.z, beta2, oneMinusBeta1, oneMinusBeta2, eps);
		pr.run(pv.w, gv.w, mv.w, vv.w, beta2, oneMinusBeta1, oneMinusBeta2, eps);
		*m4 = mv;
		*v4 = vv;
		*p4 = pv;
		if (th) {
			const float4 tv = make_float4(angle_of(pv.x, R), angle_of(pv.y, R), angle_of(pv.z, R), angle_of(pv.w, R));
			*(float4*)(th + i) = tv;
			if (sc) {
				float4 a, b;
				half_sincos(tv.x * 0.5f, &a.x, &a.y);
				half_sincos(tv.y * 0.5f, &a.z, &a.w);
				half_sincos(tv.z * 0.5f, &b.x, &b.y);
				half_sincos(tv.w * 0.5f, &b.z, &b.w);
				*(float4*)(sc + 2 * i) = a;
				*(float4*)(sc + 2 * i + 4) = b;
			}
		}
		if (pr.clear) *g4 = make_float4(0.f, 0.f, 0.f, 0.f);
	}
}
