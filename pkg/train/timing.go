package train

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rocone/rocone/pkg/compute"
)

// Timings is where the wall time of training went, in seconds, summed over resumed runs.
type Timings struct {
	// Sampling is the time the loop waited for batches (the loaders, positives,
	// negatives and weights): each pool's are sampled ahead on a goroutine of its own, so
	// this is the part of sampling that the updates did not hide.
	Sampling float64 `json:"sampling"`
	// Embedding is the loss's forward and backward passes outside the distance kernels:
	// embedding the queries (anchors, projections, intersections, negations) and their
	// backward passes, the logits and the loss itself.
	Embedding float64 `json:"embedding"`
	// Linear is the part of Embedding spent in the linear-layer kernels (the
	// intersection's attention and DeepSets layers, ConE's projection MLP).
	Linear float64 `json:"linear"`
	// Distance is the cone-distance kernels, forward and backward.
	Distance float64 `json:"distance"`
	// Optimizer is the Adam updates and gradient zeroing.
	Optimizer float64 `json:"optimizer"`
	// Device is, when training on a GPU, the time the host waited for the device's
	// updates (forward, backward and Adam, all on the device: the split above is then
	// not measured).
	Device float64 `json:"device,omitempty"`
	// Eval is validation: scoring every entity and ranking.
	Eval float64 `json:"eval"`
	// Checkpoint is writing checkpoints and train logs.
	Checkpoint float64 `json:"checkpoint"`
	// Total is the wall time of the training loop.
	Total float64 `json:"total"`
}

// Write prints the timings, one phase per line with its share of the total.
func (t Timings) Write(w io.Writer) {
	share := func(x float64) float64 {
		if t.Total <= 0 {
			return 0
		}
		return 100 * x / t.Total
	}
	for _, p := range []struct {
		name string
		x    float64
	}{
		{"sampling (waited for)", t.Sampling},
		{"intersection/projection (embedding fwd+bwd)", t.Embedding},
		{"  of which linear layers", t.Linear},
		{"distance (loss fwd+bwd)", t.Distance},
		{"optimiser (Adam, zeroing)", t.Optimizer},
		{"GPU updates (waited for)", t.Device},
		{"evaluation", t.Eval},
		{"checkpoints and logs", t.Checkpoint},
		{"total", t.Total},
	} {
		if p.x == 0 && p.name == "GPU updates (waited for)" {
			continue // a CPU run
		}
		fmt.Fprintf(w, "  %-45s %10.1fs %5.1f%%\n", p.name, p.x, share(p.x))
	}
}

// timedKernels wraps a backend and adds the time spent in its kernels to two clocks. Only
// the training goroutine uses it (validation runs on a model with the bare backend). It
// forwards the optional interfaces of pkg/compute, so that wrapping changes no code path
// and no result: compute.EntityPreparer (through compute.PrepareEntities, which falls
// back to the plain kernels exactly as it would for the bare backend).
//
// The model may call the kernels from several goroutines at once (it embeds a batch's
// structure groups in parallel): the clocks are then the sums over the goroutines, taken
// under mu; they are read between updates, when no kernel runs.
type timedKernels struct {
	inner            compute.Kernels[float32]
	mu               sync.Mutex
	linear, distance time.Duration
}

func (k *timedKernels) addLinear(t time.Time) {
	d := time.Since(t)
	k.mu.Lock()
	k.linear += d
	k.mu.Unlock()
}

func (k *timedKernels) addDistance(t time.Time) {
	d := time.Since(t)
	k.mu.Lock()
	k.distance += d
	k.mu.Unlock()
}

var (
	_ compute.Kernels[float32]        = (*timedKernels)(nil)
	_ compute.EntityPreparer[float32] = (*timedKernels)(nil)
)

func (k *timedKernels) LinearForward(y, x, w, b []float32, rows, in, out int) {
	t := time.Now()
	k.inner.LinearForward(y, x, w, b, rows, in, out)
	k.addLinear(t)
}

func (k *timedKernels) LinearBackward(dx, dw, db, dy, x, w []float32, rows, in, out int) {
	t := time.Now()
	k.inner.LinearBackward(dx, dw, db, dy, x, w, rows, in, out)
	k.addLinear(t)
}

func (k *timedKernels) DistanceForward(dist, axis, half, ent []float32, cand []int32, queries, cands, dim int, lambda float32) {
	t := time.Now()
	k.inner.DistanceForward(dist, axis, half, ent, cand, queries, cands, dim, lambda)
	k.addDistance(t)
}

func (k *timedKernels) DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent []float32, cand []int32, queries, cands, dim int, lambda float32) {
	t := time.Now()
	k.inner.DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent, cand, queries, cands, dim, lambda)
	k.addDistance(t)
}

// PrepareEntities implements compute.EntityPreparer: the inner backend's table (or the
// plain fallback over it), with its distance calls timed.
func (k *timedKernels) PrepareEntities(ent []float32, rows, dim int) compute.PreparedEntities[float32] {
	t := time.Now()
	tab := compute.PrepareEntities(k.inner, ent, rows, dim)
	k.addDistance(t)
	return timedTable{tab, k}
}

type timedTable struct {
	compute.PreparedEntities[float32]
	k *timedKernels
}

func (p timedTable) DistanceForward(dist, axis, half []float32, cand []int32, queries, cands int, lambda float32) {
	t := time.Now()
	p.PreparedEntities.DistanceForward(dist, axis, half, cand, queries, cands, lambda)
	p.k.addDistance(t)
}

func (p timedTable) DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half []float32, cand []int32, queries, cands int, lambda float32) {
	t := time.Now()
	p.PreparedEntities.DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, cand, queries, cands, lambda)
	p.k.addDistance(t)
}
