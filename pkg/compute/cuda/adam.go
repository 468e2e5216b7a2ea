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

// Step applies one Adam step to every parameter; with zeroGrad the gradients are cleared
// afterwards, ready for the next accumulation.
func (a *Adam) Step(zeroGrad bool) error {
	a.step++
	for i, s := range a.slots {
		if err := a.dev.AdamStep(s.p, s.g, s.m, s.v, a.step, a.Config, zeroGrad); err != nil {
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
