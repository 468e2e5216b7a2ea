package train

import (
	"fmt"
	"math"
	"sync"

	"github.com/rocone/rocone/pkg/model"
)

// Adam is PyTorch's Adam with its defaults (training.md §1): β = (0.9, 0.999), eps = 1e-8,
// no weight decay, no amsgrad, and dense: every element of every parameter tensor, the
// modulus included, is updated at every update, whether or not the batch touched it. At
// update t (1-based since the optimiser was created):
//
//	m ← β1·m + (1−β1)·g
//	v ← β2·v + (1−β2)·g²
//	p ← p − (lr / (1−β1^t)) · m / (√v / √(1−β2^t) + eps)
//
// in float32, with the scalar factors computed in float64, as torch.optim.Adam's
// single-tensor path does. There is one step count for all tensors.
type Adam struct {
	LR           float64
	Beta1, Beta2 float64
	Eps          float64
	Step         int64       // updates since the optimiser was created
	M, V         [][]float32 // per parameter tensor, in model.Params.Tensors order
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

// Reset makes the optimiser brand-new with learning rate lr: zero moments and step count,
// which is what the reference's torch.optim.Adam(...) at each learning-rate drop does.
func (a *Adam) Reset(lr float64) {
	a.LR = lr
	a.Step = 0
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

// adamChunk is the smallest share of the elements a goroutine is given.
const adamChunk = 1 << 15

// Update applies one Adam update to params with gradients grads (same order and shapes),
// splitting the elements between up to workers goroutines. Each element's update depends
// on that element alone, so the result does not depend on workers. It returns a
// *NonFiniteError naming the first tensor (in order) that became NaN or infinite; the
// update is then complete but the parameters are not to be used.
func (a *Adam) Update(params, grads []model.Tensor[float32], workers int) error {
	a.Step++
	t := float64(a.Step)
	c := adamScalars{
		b1: float32(a.Beta1), b2: float32(a.Beta2),
		c1: float32(1 - a.Beta1), c2: float32(1 - a.Beta2),
		stepSize: float32(a.LR / (1 - math.Pow(a.Beta1, t))),
		bc2sqrt:  float32(math.Sqrt(1 - math.Pow(a.Beta2, t))),
		eps:      float32(a.Eps),
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
			if a0 >= a1 {
				continue
			}
			j := c.update(p.Data[a0:a1], grads[i].Data[a0:a1], a.M[i][a0:a1], a.V[i][a0:a1])
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
