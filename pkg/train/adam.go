package train

import (
	"fmt"
	"math"
	"sync"

	"github.com/rocone/rocone/pkg/model"
)

// Adam is PyTorch's Adam with its defaults (docs/training.md §1): β = (0.9, 0.999), eps = 1e-8,
// no weight decay, no amsgrad, and dense: every element of every parameter tensor, the
// modulus included, is updated at every update, whether or not the batch touched it. At
// update t (1-based since the optimiser was created):
//
//	m ← β1·m + (1−β1)·g
//	v ← β2·v + (1−β2)·g²
//	p ← p − (lr / (1−β1^t)) · m / (√v / √(1−β2^t) + eps)
//
// in float32, with the scalar factors computed in float64, as torch.optim.Adam's
// single-tensor path does.
//
// Each tensor's t is its own: torch.optim.Adam skips a parameter whose .grad is None, one
// that no backward pass has reached since training began, and counts its steps from the
// first update that has a gradient for it. In ConE's loop the intersection's weights miss
// the very first update (a path batch), so their t lags the others' by one until the
// first learning-rate drop; their first update is a full lr-sized step where a shared t
// would make it 2.35 times as large. With DeferStart the optimiser reproduces that:
// Reach marks the tensors an update's backward pass reaches (model.Model.Reached), a
// tensor not reached yet is left untouched (moments and values) and its Lag grows. Like
// PyTorch's .grad, the reached marks survive Reset (the new optimiser at a learning-rate
// drop); Lag does not.
type Adam struct {
	LR           float64
	Beta1, Beta2 float64
	Eps          float64
	Step         int64       // updates since the optimiser was created
	M, V         [][]float32 // per parameter tensor, in model.Params.Tensors order
	// Started[i] is whether tensor i has been reached by a backward pass (PyTorch: its
	// .grad is not None); nil means every tensor has (no deferral).
	Started []bool
	// Lag[i] is how many of this optimiser's updates tensor i sat out, not yet started:
	// its own step count is Step − Lag[i]. Nil means none.
	Lag []int64
}

// NewAdam creates the optimiser for the tensors with zero moments.
func NewAdam(params []model.Tensor[float32], lr float64) *Adam {
	a := &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	for _, t := range params {
		a.M = append(a.M, make([]float32, len(t.Data)))
		a.V = append(a.V, make([]float32, len(t.Data)))
	}
	return a
}

// DeferStart makes every tensor wait for its first gradient (Reach) before Adam steps
// it, as torch.optim.Adam does for parameters whose .grad is None: for an optimiser
// created with a model no backward pass has reached yet (training from scratch).
func (a *Adam) DeferStart() {
	a.Started = make([]bool, len(a.M))
	a.Lag = make([]int64, len(a.M))
}

// Reach marks the tensors that the coming update's backward pass reaches (reached[i] for
// tensor i, model.Model.Reached), starting those not started yet.
func (a *Adam) Reach(reached []bool) {
	if a.Started == nil {
		return
	}
	for i, r := range reached {
		if r {
			a.Started[i] = true
		}
	}
}

// tensorStep is tensor i's step count, 0 while it has not started.
func (a *Adam) tensorStep(i int) int64 {
	if a.Started != nil && !a.Started[i] {
		return 0
	}
	if a.Lag != nil {
		return a.Step - a.Lag[i]
	}
	return a.Step
}

// next counts one update: Step+1, and Lag+1 for each tensor not started, which the update
// skips (skip[i]). The device path calls it for the host's bookkeeping alone.
func (a *Adam) next() (skip []bool) {
	a.Step++
	skip = make([]bool, len(a.M))
	for i := range skip {
		if a.Started != nil && !a.Started[i] {
			a.Lag[i]++
			skip[i] = true
		}
	}
	return skip
}

// Reset makes the optimiser brand-new with learning rate lr: zero moments and step count,
// which is what the reference's torch.optim.Adam(...) at each learning-rate drop does.
// Started is kept (PyTorch's .grad outlives the optimiser).
func (a *Adam) Reset(lr float64) {
	a.LR = lr
	a.Step = 0
	clear(a.Lag)
	for i := range a.M {
		clear(a.M[i])
		clear(a.V[i])
	}
}

// NonFiniteError reports a parameter that became NaN or ±Inf in an update.
type NonFiniteError struct {
	Tensor string
	Index  int
	Value  float32
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("parameter %s[%d] became %v", e.Tensor, e.Index, e.Value)
}

// scalars are tensor i's factors for the update under way (after next).
func (a *Adam) scalars(i int) adamScalars {
	t := float64(a.tensorStep(i))
	return adamScalars{
		b1: float32(a.Beta1), b2: float32(a.Beta2),
		c1: float32(1 - a.Beta1), c2: float32(1 - a.Beta2),
		stepSize: float32(a.LR / (1 - math.Pow(a.Beta1, t))),
		bc2sqrt:  float32(math.Sqrt(1 - math.Pow(a.Beta2, t))),
		eps:      float32(a.Eps),
	}
}

// adamChunk is the smallest share of the elements a goroutine is given.
const adamChunk = 1 << 15

// Update applies one Adam update to params with gradients grads (same order and shapes),
// splitting the elements between up to workers goroutines. Each element's update depends
// on that element alone, so the result does not depend on workers. It returns a
// *NonFiniteError naming the first tensor (in order) that became NaN or infinite; the
// update is then complete but the parameters are not to be used.
func (a *Adam) Update(params, grads []model.Tensor[float32], workers int) error {
	skip := a.next()
	cs := make([]adamScalars, len(params))
	for i := range params {
		if !skip[i] {
			cs[i] = a.scalars(i)
		}
	}
	total := 0
	for _, p := range params {
		total += len(p.Data)
	}
	workers = max(1, min(workers, total/adamChunk))
	bad := make([]*NonFiniteError, workers)
	run := func(w int) {
		lo, hi := total*w/workers, total*(w+1)/workers
		off := 0
		for i, p := range params {
			n := len(p.Data)
			a0, a1 := max(lo-off, 0), min(hi-off, n)
			off += n
			if a0 >= a1 || skip[i] {
				continue
			}
			j := cs[i].update(p.Data[a0:a1], grads[i].Data[a0:a1], a.M[i][a0:a1], a.V[i][a0:a1])
			if j >= 0 && bad[w] == nil {
				bad[w] = &NonFiniteError{Tensor: p.Name, Index: a0 + j, Value: p.Data[a0+j]}
			}
		}
	}
	if workers == 1 {
		run(0)
	} else {
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() { defer wg.Done(); run(w) }()
		}
		wg.Wait()
	}
	for _, e := range bad {
		if e != nil {
			return e
		}
	}
	return nil
}

// adamScalarOnly disables the vector loop (tests compare the two).
var adamScalarOnly bool

// adamScalars are the update's scalar factors; the assembly reads them in this order.
type adamScalars struct {
	b1, b2, c1, c2, stepSize, bc2sqrt, eps float32
}

// update updates a span of elements and returns the index of the first that became NaN
// or infinite, or −1.
func (c adamScalars) update(p, g, m, v []float32) int {
	bad := -1
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	// The vector loop (adam_amd64.s) takes the bulk, with the same float32 operations;
	// the scalar loop below the rest.
	start := 0
	if !adamScalarOnly {
		n, nonFinite := c.updateFast(p, g, m, v)
		if nonFinite {
			for i, x := range p[:n] {
				if x-x != 0 {
					bad = i
					break
				}
			}
		}
		start = n
	}
	for i := start; i < len(p); i++ {
		gi := g[i]
		// The explicit conversions round each product, so that no platform fuses them
		// into an FMA and the result is the same everywhere.
		mi := float32(c.b1*m[i]) + float32(c.c1*gi)
		vi := float32(c.b2*v[i]) + float32(float32(c.c2*gi)*gi)
		m[i], v[i] = mi, vi
		denom := float32(float32(math.Sqrt(float64(vi)))/c.bc2sqrt) + c.eps
		x := p[i] - float32(c.stepSize*float32(mi/denom))
		p[i] = x
		if x-x != 0 && bad < 0 {
			bad = i
		}
	}
	return bad
}
