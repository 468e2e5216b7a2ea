package model

import (
	"strings"

	"github.com/rocone/rocone/pkg/query"
)

// Reached reports, per tensor of Params.Tensors (in that order), whether a backward pass
// of the loss over queries of the given structures reaches it: the entity table and the
// modulus always; the relation tables and ConE's projection MLP when some structure has a
// projection; the intersection's layers when some structure has an intersection.
//
// It is what PyTorch's autograd decides by leaving a parameter's .grad None: a parameter
// that no backward pass has reached yet is skipped by torch.optim.Adam, whose step count
// for it then lags (train.Adam reproduces this; in ConE's loop the intersection misses
// the very first update, a path batch).
func (m *Model[T]) Reached(structures []*query.Structure) ([]bool, error) {
	var project, intersect bool
	for _, s := range structures {
		p, err := m.Plan(s)
		if err != nil {
			return nil, err
		}
		for _, st := range p.steps {
			switch st.kind {
			case stepProject:
				project = true
			case stepIntersect:
				intersect = true
			}
		}
	}
	ts := m.Params.Tensors()
	out := make([]bool, len(ts))
	for i, t := range ts {
		switch {
		case t.Name == "entity" || t.Name == "modulus":
			out[i] = true
		case strings.HasPrefix(t.Name, "relation.") || strings.HasPrefix(t.Name, "projection."):
			out[i] = project
		case strings.HasPrefix(t.Name, "intersection."):
			out[i] = intersect
		default:
			out[i] = true // a tensor this list does not know: never deferred
		}
	}
	return out, nil
}
