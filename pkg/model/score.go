package model

import (
	"fmt"

	"github.com/rocone/rocone/pkg/query"
)

// Scorer scores queries against every entity, for evaluation. It maps all entity
// angles once, so it reflects the parameters at the time it was made.
type Scorer[T Float] struct {
	m      *Model[T]
	angles []T // [NumEntities][d]
}

// NewScorer maps the entity table to angles and returns a scorer.
func (m *Model[T]) NewScorer() *Scorer[T] {
	angles := make([]T, len(m.Params.Entity))
	AngleForward(angles, m.Params.Entity, m.embeddingRange())
	return &Scorer[T]{m: m, angles: angles}
}

// Score writes out[q][e], the logit of entity e for query q, [len(queries)][NumEntities]:
// γ − m·dist, the max over DNF branches for a union. No dropout is applied.
func (s *Scorer[T]) Score(out []T, queries []query.Grounded) error {
	m, N, d := s.m, s.m.Config.NumEntities, s.m.Config.Dim
	if len(out) != len(queries)*N {
		return fmt.Errorf("model: Score: out has %d values, want %d×%d", len(out), len(queries), N)
	}
	gamma, modulus, lambda := T(m.Config.Gamma), m.Params.Modulus[0], T(m.Config.CenterReg)
	for _, g := range groupByStructure(queries) {
		anchors, relations := g.ids(queries)
		n := len(g.queries)
		emb, err := m.Embed(queries[g.queries[0]].Structure, anchors, relations, n, nil)
		if err != nil {
			return err
		}
		logits := make([][]T, len(emb.Branches))
		for br, c := range emb.Branches {
			dist := make([]T, n*N)
			m.Kernels.DistanceForward(dist, c.Axis, c.Half, s.angles, nil, n, N, d, lambda)
			logits[br] = dist
			LogitForward(logits[br], dist, gamma, modulus)
		}
		score := make([]T, n*N)
		UnionMaxForward(score, make([]int32, n*N), logits)
		for r, q := range g.queries {
			copy(out[q*N:(q+1)*N], score[r*N:(r+1)*N])
		}
	}
	return nil
}
