package model

import (
	"math"
	"math/rand/v2"
)

// IntersectionWeights are the four linear layers of the intersection (docs/model.md §4), each
// W [out][in] with bias [out]:
//
//	W1, B1: 2d → d   attention, first layer  (ConE's layer_axis1)
//	W2, B2:  d → d   attention, second layer (layer_axis2)
//	W3, B3: 2d → d   CardMin DeepSets layer  (layer_arg1)
//	W4, B4:  d → d   CardMin gate layer      (layer_arg2)
type IntersectionWeights[T Float] struct {
	W1, B1, W2, B2, W3, B3, W4, B4 []T
}

// ProjectionMLP is ConE's projection MLP (docs/model.md §2), each W [out][in] with bias [out]:
//
//	W1, B1: 2d → H   (ConE's layer1), ReLU
//	W2, B2:  H → H   (layer2), ReLU
//	W3, B3:  H → 2d  (layer0), no activation
type ProjectionMLP[T Float] struct {
	W1, B1, W2, B2, W3, B3 []T
}

// Params are the trainable parameters. Raw table values become angles only when used,
// through θ = π·tanh(x/R) (docs/model.md §1.3). A table a variant does not use is nil.
type Params[T Float] struct {
	Dim    int // d
	Hidden int // ConE MLP hidden width (cone variant only)

	Entity      []T // [NumEntities][d]; entity angle θ_e = π·tanh(E/R)
	RelAxis     []T // [NumRelations][d]; axis rotation θax_r = π·tanh(A_r/R)
	RelAperture []T // [NumRelations][d]; aperture offset φ_r = π·tanh(P_r/R) (not rocone-se)
	RelShift    []T // [NumRelations][d]; S.E. aperture shift s_r, used raw (rocone-se only)
	Modulus     []T // [1]; m in logit = γ − m·dist

	Intersection IntersectionWeights[T]
	Projection   ProjectionMLP[T] // cone only
}

// Tensor names one parameter tensor: its data and its shape [Rows][Cols].
type Tensor[T Float] struct {
	Name       string
	Data       []T
	Rows, Cols int
}

// NewParams allocates zero parameters of the shapes cfg asks for.
func NewParams[T Float](cfg Config) *Params[T] {
	d, nE, nR := cfg.Dim, cfg.NumEntities, cfg.NumRelations
	p := &Params[T]{
		Dim:     d,
		Entity:  make([]T, nE*d),
		RelAxis: make([]T, nR*d),
		Modulus: make([]T, 1),
		Intersection: IntersectionWeights[T]{
			W1: make([]T, d*2*d), B1: make([]T, d),
			W2: make([]T, d*d), B2: make([]T, d),
			W3: make([]T, d*2*d), B3: make([]T, d),
			W4: make([]T, d*d), B4: make([]T, d),
		},
	}
	proj, _ := cfg.Variant.Projection() // New checks the variant
	if proj == ProjectShift {
		p.RelShift = make([]T, nR*d)
	} else {
		p.RelAperture = make([]T, nR*d)
	}
	if proj == ProjectMLP {
		h := cfg.Hidden()
		p.Hidden = h
		p.Projection = ProjectionMLP[T]{
			W1: make([]T, h*2*d), B1: make([]T, h),
			W2: make([]T, h*h), B2: make([]T, h),
			W3: make([]T, 2*d*h), B3: make([]T, 2*d),
		}
	}
	return p
}

// Tensors lists the allocated tensors in a fixed order (the order Init draws them in).
func (p *Params[T]) Tensors() []Tensor[T] {
	d, h := p.Dim, p.Hidden
	all := []Tensor[T]{
		{"entity", p.Entity, len(p.Entity) / d, d},
		{"relation.axis", p.RelAxis, len(p.RelAxis) / d, d},
		{"relation.aperture", p.RelAperture, len(p.RelAperture) / d, d},
		{"relation.shift", p.RelShift, len(p.RelShift) / d, d},
		{"modulus", p.Modulus, 1, 1},
		{"intersection.w1", p.Intersection.W1, d, 2 * d},
		{"intersection.b1", p.Intersection.B1, 1, d},
		{"intersection.w2", p.Intersection.W2, d, d},
		{"intersection.b2", p.Intersection.B2, 1, d},
		{"intersection.w3", p.Intersection.W3, d, 2 * d},
		{"intersection.b3", p.Intersection.B3, 1, d},
		{"intersection.w4", p.Intersection.W4, d, d},
		{"intersection.b4", p.Intersection.B4, 1, d},
		{"projection.w1", p.Projection.W1, h, 2 * d},
		{"projection.b1", p.Projection.B1, 1, h},
		{"projection.w2", p.Projection.W2, h, h},
		{"projection.b2", p.Projection.B2, 1, h},
		{"projection.w3", p.Projection.W3, 2 * d, h},
		{"projection.b3", p.Projection.B3, 1, 2 * d},
	}
	out := all[:0]
	for _, t := range all {
		if t.Data != nil {
			out = append(out, t)
		}
	}
	return out
}

// Init fills the parameters as ConE does (docs/model.md §1.3, §2, §4), deterministically from
// seed (PCG): tables U(−R, R), the S.E. shift 0, the modulus 0.5·R, linear weights
// Xavier-uniform U(±√(6/(fan_in+fan_out))) and biases PyTorch's default
// U(±1/√fan_in). Values are drawn in float64, so float32 and float64 parameters from the
// same seed agree to rounding.
func (p *Params[T]) Init(cfg Config, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed_c0de_2025))
	r := cfg.EmbeddingRange()
	uniform := func(dst []T, bound float64) {
		for i := range dst {
			dst[i] = T((2*rng.Float64() - 1) * bound)
		}
	}
	linear := func(w, b []T, in, out int) {
		uniform(w, math.Sqrt(6/float64(in+out)))
		uniform(b, 1/math.Sqrt(float64(in)))
	}
	d, h := p.Dim, p.Hidden
	uniform(p.Entity, r)
	uniform(p.RelAxis, r)
	uniform(p.RelAperture, r)
	clear(p.RelShift)
	p.Modulus[0] = T(0.5 * r)
	in := &p.Intersection
	linear(in.W1, in.B1, 2*d, d)
	linear(in.W2, in.B2, d, d)
	linear(in.W3, in.B3, 2*d, d)
	linear(in.W4, in.B4, d, d)
	if pr := &p.Projection; pr.W1 != nil {
		linear(pr.W1, pr.B1, 2*d, h)
		linear(pr.W2, pr.B2, h, h)
		linear(pr.W3, pr.B3, h, 2*d)
	}
}

// RowSet is a set of table rows, kept as a list in first-touched order.
type RowSet struct {
	seen []bool
	Rows []int32
}

func newRowSet(n int) RowSet { return RowSet{seen: make([]bool, n)} }

// Add inserts row r.
func (s *RowSet) Add(r int32) {
	if !s.seen[r] {
		s.seen[r] = true
		s.Rows = append(s.Rows, r)
	}
}

// Reset empties the set.
func (s *RowSet) Reset() {
	for _, r := range s.Rows {
		s.seen[r] = false
	}
	s.Rows = s.Rows[:0]
}

// Grads are dense gradient buffers of the parameters' shapes, plus the entity and
// relation rows a backward pass wrote to (every write to a table row marks the row).
// Backward passes ADD into them.
type Grads[T Float] struct {
	Params[T]
	EntityRows   RowSet // rows of Entity touched
	RelationRows RowSet // rows of RelAxis, RelAperture, RelShift touched
}

// NewGrads allocates zero gradients for cfg.
func NewGrads[T Float](cfg Config) *Grads[T] {
	return &Grads[T]{
		Params:       *NewParams[T](cfg),
		EntityRows:   newRowSet(cfg.NumEntities),
		RelationRows: newRowSet(cfg.NumRelations),
	}
}

// Zero clears the gradients: the touched rows of the tables and every other tensor.
// Rows not in the row sets are zero already, because every table write marks its row.
func (g *Grads[T]) Zero() {
	d := g.Dim
	for _, r := range g.EntityRows.Rows {
		clear(g.Entity[int(r)*d : int(r+1)*d])
	}
	for _, r := range g.RelationRows.Rows {
		for _, tab := range [][]T{g.RelAxis, g.RelAperture, g.RelShift} {
			if tab != nil {
				clear(tab[int(r)*d : int(r+1)*d])
			}
		}
	}
	g.EntityRows.Reset()
	g.RelationRows.Reset()
	for _, t := range g.Tensors() {
		switch t.Name {
		case "entity", "relation.axis", "relation.aperture", "relation.shift":
		default:
			clear(t.Data)
		}
	}
}
