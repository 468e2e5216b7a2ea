package cuda

import "fmt"

// Adam is a dense Adam optimiser over device-resident parameters (training.md §1): each
// parameter tensor P has its gradient G (same length) and the optimiser's moments, all on
// the device; Step updates every element of every tensor, with no host round trip.
type Adam struct {
	Config AdamConfig
	dev    *Device
	step   int
	slots  []adamSlot
	lags   []int64 // per slot: steps it sat out (see SetLags); nil: none
}

type adamSlot struct{ p, g, m, v *F32 }

// NewAdam allocates zero moments for the parameters params[i] with gradients grads[i].
func NewAdam(d *Device, cfg AdamConfig, params, grads []*F32) (*Adam, error) {
	if len(params) != len(grads) {
		return nil, fmt.Errorf("cuda: NewAdam: %d parameters, %d gradients", len(params), len(grads))
	}
	a := &Adam{Config: cfg, dev: d}
	for i, p := range params {
		if grads[i].Len() != p.Len() {
			return nil, fmt.Errorf("cuda: NewAdam: parameter %d has %d elements, its gradient %d", i, p.Len(), grads[i].Len())
		}
		m, err := Alloc[float32](d, p.Len())
		if err != nil {
			a.Free()
			return nil, err
		}
		v, err := Alloc[float32](d, p.Len())
		if err != nil {
			m.Free()
			a.Free()
			return nil, err
		}
		a.slots = append(a.slots, adamSlot{p: p, g: grads[i], m: m, v: v})
	}
	return a, nil
}

// Steps is the number of steps taken since creation or the last Reset.
func (a *Adam) Steps() int { return a.step }

// SetLags sets, per parameter, how many of the optimiser's steps it sat out because no
// backward pass had reached it yet (train.Adam.Lag, torch.optim.Adam's skipping of
// parameters whose .grad is None), counting the coming step: parameter i takes step
// number Steps()+1−lags[i] at the next Step, and none when that is not positive. Nil
// means no lag.
func (a *Adam) SetLags(lags []int64) error {
	if lags != nil && len(lags) != len(a.slots) {
		return fmt.Errorf("cuda: Adam.SetLags: %d lags for %d parameters", len(lags), len(a.slots))
	}
	a.lags = append(a.lags[:0], lags...)
	if lags == nil {
		a.lags = nil
	}
	return nil
}

// Step applies one Adam step to every parameter; with zeroGrad the gradients are cleared
// afterwards, ready for the next accumulation. A parameter whose own step count (see
// SetLags) is not positive is left as it is (its gradient is zero: no backward pass
// reached it).
func (a *Adam) Step(zeroGrad bool) error {
	a.step++
	for i, s := range a.slots {
		step := a.step
		if a.lags != nil {
			step -= int(a.lags[i])
		}
		if step <= 0 {
			if zeroGrad {
				if err := s.g.Zero(); err != nil {
					return fmt.Errorf("parameter %d: %w", i, err)
				}
			}
			continue
		}
		if err := a.dev.AdamStep(s.p, s.g, s.m, s.v, step, a.Config, zeroGrad); err != nil {
			return fmt.Errorf("parameter %d: %w", i, err)
		}
	}
	return nil
}

// Reset zeroes the moments and the step count: the "brand-new Adam optimiser" ConE's
// schedule creates at each learning-rate decay (training.md §1). Set Config.LR as well.
func (a *Adam) Reset() error {
	a.step = 0
	for _, s := range a.slots {
		if err := s.m.Zero(); err != nil {
			return err
		}
		if err := s.v.Zero(); err != nil {
			return err
		}
	}
	return nil
}

// Free releases the moments (not the parameters or gradients).
func (a *Adam) Free() error {
	var first error
	for _, s := range a.slots {
		if err := FreeAll(s.m, s.v); err != nil && first == nil {
			first = err
		}
	}
	a.slots = nil
	return first
}
