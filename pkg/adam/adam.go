// Package adam is the one definition of the optimiser that both backends follow: PyTorch's
// torch.optim.Adam with its defaults (docs/training.md §1), no weight decay, no amsgrad. At
// update t (1-based, counted since the optimiser was created or reset), for each element:
//
//	m ← β1·m + (1−β1)·g
//	v ← β2·v + (1−β2)·g²
//	p ← p − (lr / (1−β1^t)) · m / (√v / √(1−β2^t) + eps)
//
// in float32, with the scalar factors computed in float64 and rounded to float32, as
// PyTorch's single-tensor path passes them. The CPU's loop (package train) and the GPU's
// kernel (package gpu) take their factors from Config.At, so the hyperparameters and the
// bias corrections are written here only.
package adam

import "math"

// Config is the optimiser's hyperparameters.
type Config struct {
	LR, Beta1, Beta2, Eps float64
}

// Default is PyTorch's default Adam with learning rate lr: β = (0.9, 0.999), eps = 1e-8.
func Default(lr float64) Config {
	return Config{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
}

// Factors are the float32 factors of one update, in the order the CPU's assembly reads
// them (package train's adam_amd64.s).
type Factors struct {
	B1, B2   float32 // β1, β2
	C1, C2   float32 // 1−β1, 1−β2
	StepSize float32 // lr / (1−β1^t)
	BC2Sqrt  float32 // √(1−β2^t)
	Eps      float32
}

// At returns the factors of update number t (t ≥ 1) of a tensor.
func (c Config) At(t int64) Factors {
	ft := float64(t)
	return Factors{
		B1: float32(c.Beta1), B2: float32(c.Beta2),
		C1: float32(1 - c.Beta1), C2: float32(1 - c.Beta2),
		StepSize: float32(c.LR / (1 - math.Pow(c.Beta1, ft))),
		BC2Sqrt:  float32(math.Sqrt(1 - math.Pow(c.Beta2, ft))),
		Eps:      float32(c.Eps),
	}
}
