package model

import (
	"fmt"
	"strings"

	"github.com/rocone/rocone/pkg/compute"
)

// Float is the element type of the model: float32 for training, float64 for the
// gradient checks of the same code.
type Float = compute.Float

// Variant selects the projection operator (docs/model.md §2, §3).
type Variant string

const (
	// RoConE rotates the axis and the half-aperture and folds the aperture back into
	// [0, π]: h' = |wrap(h + φ_r)| (docs/model.md §3.2, the recommended default reading).
	RoConE Variant = "rocone"
	// RoConETrunc rotates and clamps: h' = clamp(h + φ_r, 0, π) (docs/model.md §3.2, Trunc,
	// read on the code's half-aperture, so the full aperture is at most 2π).
	RoConETrunc Variant = "rocone-trunc"
	// RoConESE rotates the axis only and shrinks or expands the aperture with a learned
	// per-relation shift: h' = π·σ(logit(clip(h/π)) + s_r) (docs/model.md §3.2, S.E.).
	RoConESE Variant = "rocone-se"
	// ConE is the baseline: ConE's MLP projection (docs/model.md §2).
	ConE Variant = "cone"
)

// Variants lists every variant.
var Variants = []Variant{RoConE, RoConETrunc, RoConESE, ConE}

// ParseVariant returns the variant with the given name.
func ParseVariant(name string) (Variant, error) {
	for _, v := range Variants {
		if string(v) == name {
			return v, nil
		}
	}
	return "", fmt.Errorf("unknown model variant %q (known: %s)", name, VariantNames(" "))
}

// VariantNames is every variant's name, joined by sep.
func VariantNames(sep string) string {
	names := make([]string, len(Variants))
	for i, v := range Variants {
		names[i] = string(v)
	}
	return strings.Join(names, sep)
}

// Projection is a projection operator, defined once for both backends in package compute
// (compute.Projections). Variant.Projection is the one place a variant is mapped to one;
// the CPU (RotateForward, mlpForward) and the device (package gpumodel) dispatch on it.
type Projection = compute.Projection

const (
	ProjectFold  = compute.ProjectFold
	ProjectTrunc = compute.ProjectTrunc
	ProjectShift = compute.ProjectShift
	ProjectMLP   = compute.ProjectMLP
)

// Projection returns the variant's projection operator; an unknown variant is an error,
// never a silent default.
func (v Variant) Projection() (Projection, error) {
	switch v {
	case RoConE:
		return ProjectFold, nil
	case RoConETrunc:
		return ProjectTrunc, nil
	case RoConESE:
		return ProjectShift, nil
	case ConE:
		return ProjectMLP, nil
	}
	return 0, fmt.Errorf("model: variant %q has no projection operator (known: rocone rocone-trunc rocone-se cone)", string(v))
}

// DefaultConeHidden is the hidden width of ConE's projection MLP, hard-coded in ConE.
const DefaultConeHidden = 1600

// epsilon is ConE's ε in the embedding range R = (γ + ε)/d (docs/model.md §1.3).
const epsilon = 2.0

// Config is everything that fixes the model's shapes and its constants.
type Config struct {
	Variant      Variant
	NumEntities  int
	NumRelations int // including inverse relations
	Dim          int // d
	Gamma        float64
	CenterReg    float64 // λ, the weight of the inside distance (docs/model.md §7)
	Drop         float64 // intersection dropout rate on input apertures (docs/model.md §4)
	// ConeHidden is the hidden width of ConE's projection MLP; 0 means DefaultConeHidden.
	// Only the cone variant uses it.
	ConeHidden int
	// Seed makes the initialisation deterministic.
	Seed uint64
	// Matmul is the precision of the linear layers' matrix products (the projection MLP,
	// the attention intersection): "" or compute.MatmulFP32, or compute.MatmulTF32 (train
	// --matmul tf32). New applies it to the model's kernels (compute.WithMatmul) and
	// package gpumodel to the device (cuda.Device.SetMatmul), so a checkpoint is scored in
	// the precision it was trained in. Left out of the JSON when empty, so FP32 models'
	// configurations read as before.
	Matmul compute.Matmul `json:",omitempty"`
}

// EmbeddingRange is R = (γ + 2)/d: tables are initialised U(−R, R) and a raw value x
// becomes the angle π·tanh(x/R) (docs/model.md §1.3).
func (c Config) EmbeddingRange() float64 { return (c.Gamma + epsilon) / float64(c.Dim) }

// Hidden is the hidden width of ConE's projection MLP.
func (c Config) Hidden() int {
	if c.ConeHidden == 0 {
		return DefaultConeHidden
	}
	return c.ConeHidden
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if _, err := ParseVariant(string(c.Variant)); err != nil {
		return err
	}
	switch {
	case c.NumEntities <= 0:
		return fmt.Errorf("model: NumEntities must be positive, got %d", c.NumEntities)
	case c.NumRelations <= 0:
		return fmt.Errorf("model: NumRelations must be positive, got %d", c.NumRelations)
	case c.Dim <= 0:
		return fmt.Errorf("model: Dim must be positive, got %d", c.Dim)
	case c.Gamma+epsilon <= 0:
		return fmt.Errorf("model: Gamma must exceed -2, got %g", c.Gamma)
	case c.Drop < 0 || c.Drop >= 1:
		return fmt.Errorf("model: Drop must be in [0, 1), got %g", c.Drop)
	case c.ConeHidden < 0:
		return fmt.Errorf("model: ConeHidden must not be negative, got %d", c.ConeHidden)
	}
	if _, err := compute.ParseMatmul(string(c.Matmul)); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	return nil
}
