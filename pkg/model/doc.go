// Package model is ConE and RoConE (docs/model.md): parameters, operators with hand-written
// backward passes, the walker that embeds queries of any structure, the training loss and
// evaluation scoring. There is no autodiff: every operator's forward sits beside its
// backward, in the style of llm.c.
//
// # Layout
//
//   - config.go, params.go: Config, Variant, Params (raw tables and layers), Grads.
//   - op_angle.go: the angle mapping θ = π·tanh(x/R), wrap and fold (§1.3, §3.2).
//   - op_rotate.go: RoConE's rotation projection, three aperture rules (§3).
//   - op_mlp.go: ConE's MLP projection (§2).
//   - op_negate.go: negation (§5).
//   - op_intersect.go: intersection, SemanticAverage + CardMin with dropout (§4).
//   - op_loss.go: logit γ − m·dist, DNF union as a max (§6, §7), the loss (§9). The
//     distance (§7) is a kernel of pkg/compute, beside the linear layer (GEMM).
//   - plan.go: a structure compiled into steps, grouped into levels.
//   - walk.go: Walk, the one level-batched walk of a batch's plans forward and backward
//     over an Executor (the operators above on some backend) and a Head; the CPU's
//     executor is embed.go (Embed records a tape; Embedding.Backward replays it, §8),
//     the device's is package gpumodel.
//   - loss.go: the loss head of a training batch, grouped by structure.
//   - op_score.go: the scoring head, logits of all entities, for evaluation.
//   - rowsort.go: SortRows, the radix sort of table row ids (sparse Adam's touched rows).
//
// Each op_X.go has its CUDA kernels in pkg/gpu/kernels/X.cu and their host side
// in pkg/gpu/op_X.go (for linear and distance: pkg/compute/X.go), so an operator
// is found by one name in every layer.
//
// # Conventions
//
// Cone batches are row-major [N][d] slices of axes and HALF-apertures (docs/model.md §1.2).
// Every operator is generic over Float, so the float64 gradient checks exercise the
// exact code that trains in float32. Backward functions ADD into their gradient outputs.
//
// # Subgradients at kinks
//
// Where a function is not differentiable, the gradient is the one PyTorch's autograd
// takes on ConE's reference code, so that the port trains like it:
//
//   - |x|: sign(x), with sign(0) = 0; fold(s) = |wrap(s)| therefore has slope
//     sign(wrap(s)), 0 at s ≡ 0 (mod 2π);
//   - ReLU: 0 at 0 (the output must be > 0 to pass the gradient);
//   - clamp / clip (rocone-trunc, rocone-se): the gradient passes on the closed interval
//     and is 0 outside it;
//   - wrap (mod 2π) and negation's a ≥ 0 branch: slope 1 on both sides of the jump;
//   - element-wise min of two tensors (the distance's min(lo, hi) and min(t, β)): to the
//     smaller, half to each on a tie (torch.min(a, b));
//   - min over intersection branches (CardMin) and max over union branches: the whole
//     gradient to the first minimal/maximal branch, or to the first NaN branch, whose NaN
//     the min/max then is (torch.min/max(dim));
//   - the distance's inside test t < β is strict, and d_o is a constant 0 inside;
//   - the intersection's arctangent: ConE's clamp of the cosine sum to 1e-3 is an
//     assignment, so the clamped sum has gradient 0 (see op_intersect.go).
package model
