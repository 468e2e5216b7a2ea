package model

// Cones is a batch of N cones in d dimensions, stored row-major: cone n, dimension j is
// Axis[n·Dim+j], Half[n·Dim+j].
//
// Half is the HALF-aperture h ∈ [0, π] as in ConE's code (docs/model.md §1.2): the cone's
// boundaries are a − h and a + h, its full aperture is 2h.
type Cones[T Float] struct {
	Axis []T
	Half []T
	N    int
	Dim  int
}

// NewCones allocates a zero batch of n cones in dim dimensions.
func NewCones[T Float](n, dim int) Cones[T] {
	return Cones[T]{Axis: make([]T, n*dim), Half: make([]T, n*dim), N: n, Dim: dim}
}

// Row returns cone i as its axis and half-aperture rows.
func (c Cones[T]) Row(i int) (axis, half []T) {
	return c.Axis[i*c.Dim : (i+1)*c.Dim], c.Half[i*c.Dim : (i+1)*c.Dim]
}
