package model

import (
	"fmt"

	"github.com/rocone/rocone/pkg/compute"

	"github.com/rocone/rocone/pkg/query"
)

// Scorer scores queries against every entity, for evaluation. It maps all entity
// angles once, so it reflects the parameters at the time it was made.
type Scorer[T Float] struct {
	m      *Model[T]
	angles []T // [NumEntities][d]
	// table is the entity table prepared once for the kernels (e.g. the fast CPU
	// backend's half-angle sin/cos), so scoring many small groups does not redo it.
	table compute.PreparedEntities[T]
}

// NewScorer maps the entity table to angles and returns a scorer.
func (m *Model[T]) NewScorer() *Scorer[T] {
	angles := make([]T, len(m.Params.Entity))
	AngleForward(angles, m.Params.Entity, m.embeddingRange())
	return &Scorer[T]{m: m, angles: angles, table: compute.PrepareEntities(m.Kernels, angles, m.Config.NumEntities, m.Config.Dim)}
}

// Score writes out[q][e], the logit of entity e for query q, [len(queries)][NumEntities]:
// γ − m·dist, the max over DNF branches for a union. No dropout is applied.
func (s *Scorer[T]) Score(out []T, queries []query.Grounded) error {
	return s.ScoreFrom(out, queries, nil)
}

// ScoreFrom is Score with the cones of each structure group (the queries' indices, as
// GroupByStructure gives them) taken from cones instead of embedded: a stage that stored
// the cones of the same groups scores exactly what Score would.
func (s *Scorer[T]) ScoreFrom(out []T, queries []query.Grounded, cones func(group []int) ([]Cones[T], error)) error {
	m, N := s.m, s.m.Config.NumEntities
	if len(out) != len(queries)*N {
		return fmt.Errorf("model: Score: out has %d values, want %d×%d", len(out), len(queries), N)
	}
	for _, group := range GroupByStructure(queries) {
		n := len(group)
		var branches []Cones[T]
		if cones != nil {
			var err error
			if branches, err = cones(group); err != nil {
				return err
			}
		} else {
			anchors, relations := structureGroup{queries: group}.ids(queries)
			emb, err := m.Embed(queries[group[0]].Structure, anchors, relations, n, nil)
			if err != nil {
				return err
			}
			branches = emb.Branches
		}
		score := make([]T, n*N)
		if err := s.ScoreCones(score, branches); err != nil {
			return err
		}
		for r, q := range group {
			copy(out[q*N:(q+1)*N], score[r*N:(r+1)*N])
		}
	}
	return nil
}

// GroupByStructure splits queries into groups of one structure, in order of first
// appearance, each listing its queries' indices in order: the batches the model embeds.
func GroupByStructure(queries []query.Grounded) [][]int {
	groups := groupByStructure(queries)
	out := make([][]int, len(groups))
	for i, g := range groups {
		out[i] = g.queries
	}
	return out
}

// ScoreCones writes out[q][e], the logit of entity e for the q-th query whose DNF branches
// are the q-th cones of each element of branches (all of the same size n): the max over
// branches of γ − m·dist. Score embeds and then calls it, so ranks computed from stored
// cones are those computed from the queries.
func (s *Scorer[T]) ScoreCones(out []T, branches []Cones[T]) error {
	m, N, d := s.m, s.m.Config.NumEntities, s.m.Config.Dim
	if len(branches) == 0 {
		return fmt.Errorf("model: ScoreCones: no branches")
	}
	n := branches[0].N
	if len(out) != n*N {
		return fmt.Errorf("model: ScoreCones: out has %d values, want %d×%d", len(out), n, N)
	}
	gamma, modulus, lambda := T(m.Config.Gamma), m.Params.Modulus[0], T(m.Config.CenterReg)
	if len(branches) == 1 {
		s.table.DistanceForward(out, branches[0].Axis, branches[0].Half, nil, n, N, lambda)
		LogitForward(out, out, gamma, modulus)
		return nil
	}
	logits := make([][]T, len(branches))
	for br, c := range branches {
		if c.N != n || c.Dim != d {
			return fmt.Errorf("model: ScoreCones: branch %d holds %d cones of dimension %d, want %d of %d", br, c.N, c.Dim, n, d)
		}
		dist := make([]T, n*N)
		s.table.DistanceForward(dist, c.Axis, c.Half, nil, n, N, lambda)
		logits[br] = dist
		LogitForward(logits[br], dist, gamma, modulus)
	}
	UnionMaxForward(out, make([]int32, n*N), logits)
	return nil
}
