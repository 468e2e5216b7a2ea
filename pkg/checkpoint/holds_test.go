package checkpoint

import (
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/model"
)

// TestCheckpointHolds: checkpointHolds takes a configuration whose lower bound,
// Dim·(NumEntities+NumRelations+6·Dim) values, the checkpoint's param tensors hold (the
// Adam moments beside them do not count) and refuses one that needs a value more; and it
// refuses a dimension or a count beyond what the tensors hold even where the bound's
// product wraps around int64 (to a negative number, or one smaller than the tensors),
// which is all a forged configuration would need to reach model.New's allocations.
func TestCheckpointHolds(t *testing.T) {
	// A checkpoint of held param values, and as many again of moments.
	ck := func(held int) *artifact.Checkpoint {
		return &artifact.Checkpoint{Tensors: []artifact.Tensor{
			{Name: "a", Role: artifact.RoleParam, Values: make([]float32, held/2)},
			{Name: "b", Role: artifact.RoleParam, Values: make([]float32, held-held/2)},
			{Name: "a", Role: artifact.RoleAdamM, Values: make([]float32, held)},
			{Name: "a", Role: artifact.RoleAdamV, Values: make([]float32, held)},
		}}
	}
	cfg := func(dim, entities, relations int) model.Config {
		return model.Config{Variant: model.Variants[0], Dim: dim, NumEntities: entities, NumRelations: relations}
	}
	const bound = 4 * (7 + 3 + 6*4) // dim 4, 7 entities, 3 relations
	for _, c := range []struct {
		name    string
		held    int
		cfg     model.Config
		refused bool
	}{
		{"exactly the bound", bound, cfg(4, 7, 3), false},
		{"more than the bound", bound + 100, cfg(4, 7, 3), false},
		{"a value short", bound - 1, cfg(4, 7, 3), true},
		{"the moments do not count", bound / 2, cfg(4, 7, 3), true},
		// 6·(2³¹)² = 1.5·2⁶⁴ wraps to -2⁶³: only Dim > held refuses it.
		{"dim 2^31", bound, cfg(1<<31, 1, 1), true},
		// 4·(2⁶² + …) wraps to a few values: only the count's own bound refuses it.
		{"2^62 entities", bound, cfg(4, 1<<62, 1), true},
		{"2^62 relations", bound, cfg(4, 1, 1<<62), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkpointHolds(ck(c.held), c.cfg)
			switch {
			case !c.refused && err != nil:
				t.Errorf("refused: %v", err)
			case c.refused && (err == nil || !strings.Contains(err.Error(), "needs more parameter values than the checkpoint's")):
				t.Errorf("got %v, want it refused", err)
			}
		})
	}
}
