package train

import (
	"fmt"
	"math"
	"sync"

	"github.com/rocone/rocone/pkg/adam"
	"github.com/rocone/rocone/pkg/model"
)

// Adam is the host's optimiser: package adam's update (PyTorch's Adam with its defaults,
// its factors from adam.Config.At) over the model's tensors, dense: every element of every
// parameter tensor, the modulus included, is updated at every update, whether or not the
// batch touched it. It also holds the state a checkpoint saves (step count, moments, the
// tensors' start), which a device updater fills from its own (Updater.Download).
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
	adam.Config
	Step int64       // updates since the optimiser was created
	M, V [][]float32 // per parameter tensor, in model.Params.Tensors order
	// Started[i] is whether tensor i has been reached by a backward pass (PyTorch: its
	// .grad is not None); nil means every tensor has (no deferral).
	Started []bool
	// Lag[i] is how many of this optimiser's updates tensor i sat out, not yet started:
	// its own step count is Step − Lag[i]. Nil means none.
	Lag []int64
}

// NewAdam creates the optimiser for the tensors with zero moments.
func NewAdam(params []model.Tensor[float32], lr float64) *Adam {
	a := &Adam{Config: adam.Default(lr)}
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

// Advance counts one update: Step+1, and Lag+1 for each tensor not started, which the
// update skips (skip[i]). The host's updates call it before they step; a device's updater
// calls it for the host's bookkeeping alone, and hands the lags (Lag) to its own optimiser.
func (a *Adam) Advance() (skip []bool) {
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
	a.ResetCounts(lr)
	a.ClearMoments()
}

// ResetCounts is Reset's bookkeeping alone (learning rate, step count, lags), for an
// optimiser whose moments live on a device: the device clears its own, and the host's
// copy is overwritten from it (Updater.Download) before a checkpoint reads it, so
// clearing that copy is wasted work (on a GPU run at FB15k-237's or NELL-995's paper
// configuration, 0.15–0.37 s of page faults at the first drop, the device idle meanwhile).
func (a *Adam) ResetCounts(lr float64) {
	a.LR = lr
	a.Step = 0
	clear(a.Lag)
}

// ClearMoments zeroes every tensor's moments.
func (a *Adam) ClearMoments() {
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
	return adamScalars(a.At(a.tensorStep(i)))
}

// adamChunk is the smallest share of the elements a goroutine is given.
const adamChunk = 1 << 15

// Update applies one Adam update to params with gradients grads (same order and shapes),
// splitting the elements between up to workers goroutines. Each element's update depends
// on that element alone, so the result does not depend on workers. It returns a
// *NonFiniteError naming the first tensor (in order) that became NaN or infinite; the
// update is then complete but the parameters are not to be used.
func (a *Adam) Update(params, grads []model.Tensor[float32], workers int) error {
	skip := a.Advance()
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

// adamScalars are the update's factors (adam.Factors), with the CPU loops as methods; the
// assembly reads the fields in their order.
type adamScalars adam.Factors

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
		mi := float32(c.B1*m[i]) + float32(c.C1*gi)
		vi := float32(c.B2*v[i]) + float32(float32(c.C2*gi)*gi)
		m[i], v[i] = mi, vi
		denom := float32(float32(math.Sqrt(float64(vi)))/c.BC2Sqrt) + c.Eps
		x := p[i] - float32(c.StepSize*float32(mi/denom))
		p[i] = x
		if x-x != 0 && bad < 0 {
			bad = i
		}
	}
	return bad
}
