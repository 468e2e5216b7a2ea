package compute

// Optional interface: prepared entity tables.
//
// The distance kernels need, per entity angle θ, sin(θ/2) and cos(θ/2) (see the fast
// CPU backend in pkg/compute/cpu). When many calls share one entity table — evaluation
// scores every query of every structure group against all entities, and a training step
// calls the distance once per structure group and DNF branch, forward and backward, on
// the same gathered angles — a backend can compute that per-entity data once. A backend
// that can, implements EntityPreparer; Kernels itself is unchanged, so callers that do
// not care keep working. Callers that want the speed-up use the helper PrepareEntities,
// which falls back to the plain kernels for backends without the optional interface:
//
//	tab := compute.PrepareEntities(m.Kernels, angles, numEntities, dim)
//	for each group and branch {
//		tab.DistanceForward(dist, axis, half, nil, n, numEntities, lambda)
//	}

// EntityPreparer is implemented by a Kernels[T] that can precompute per-entity data for
// repeated distance computations against one entity-angle table.
type EntityPreparer[T Float] interface {
	// PrepareEntities prepares ent [rows][dim]. The result is a snapshot: it does not
	// see later changes to ent (the fallback of PrepareEntities does, so callers must
	// treat ent as read-only while they use the table).
	PrepareEntities(ent []T, rows, dim int) PreparedEntities[T]
}

// PreparedEntities is an entity-angle table [Rows()][Dim()] prepared for distance
// computations. Its methods are Kernels.DistanceForward and Kernels.DistanceBackward with
// ent (and dim) bound to the table: cand indexes its rows, and cand == nil scores every
// query against rows 0 … cands−1 (cands ≤ Rows()). dEnt, when not nil, is [Rows()][Dim()]
// as in Kernels.DistanceBackward. It is safe for concurrent use.
type PreparedEntities[T Float] interface {
	Rows() int
	Dim() int
	DistanceForward(dist, axis, half []T, cand []int32, queries, cands int, lambda T)
	DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half []T, cand []int32, queries, cands int, lambda T)
}

// PrepareEntities returns k's prepared table for ent [rows][dim] when k implements
// EntityPreparer, and otherwise a table whose methods call k's own kernels on ent.
func PrepareEntities[T Float](k Kernels[T], ent []T, rows, dim int) PreparedEntities[T] {
	if p, ok := k.(EntityPreparer[T]); ok {
		return p.PrepareEntities(ent, rows, dim)
	}
	checkLen("prepare ent", ent, rows*dim)
	return plainEntities[T]{k: k, ent: ent[:rows*dim], rows: rows, dim: dim}
}

// plainEntities is PreparedEntities over a backend without a preparation step.
type plainEntities[T Float] struct {
	k         Kernels[T]
	ent       []T
	rows, dim int
}

func (p plainEntities[T]) Rows() int { return p.rows }
func (p plainEntities[T]) Dim() int  { return p.dim }

func (p plainEntities[T]) DistanceForward(dist, axis, half []T, cand []int32, queries, cands int, lambda T) {
	checkRows(cand, cands, p.rows)
	p.k.DistanceForward(dist, axis, half, p.ent, cand, queries, cands, p.dim, lambda)
}

func (p plainEntities[T]) DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half []T, cand []int32, queries, cands int, lambda T) {
	checkRows(cand, cands, p.rows)
	p.k.DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, p.ent, cand, queries, cands, p.dim, lambda)
}

// PrepareEntities implements EntityPreparer for the reference: there is nothing to
// precompute, so the table calls the reference kernels on ent.
func (r Reference[T]) PrepareEntities(ent []T, rows, dim int) PreparedEntities[T] {
	checkLen("prepare ent", ent, rows*dim)
	return plainEntities[T]{k: r, ent: ent[:rows*dim], rows: rows, dim: dim}
}

// checkRows panics when cand is nil and cands exceeds the table's rows.
func checkRows(cand []int32, cands, rows int) {
	if cand == nil && cands > rows {
		panic("compute: prepared distance: cands exceeds the table's rows")
	}
}

var _ EntityPreparer[float32] = Reference[float32]{}
