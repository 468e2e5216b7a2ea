// Package checkpoint converts between a model and the checkpoint artifact that holds it
// (pkg/artifact): the model a checkpoint holds ([Load], [NewModel], [ModelConfig]) and the
// tensors a model's parameters and optimiser moments are saved as ([Tensors]). It is the one
// place that knows both sides, so that the stages that train, score or import a model agree
// on the layout, and the evaluation (pkg/eval) works on a model and queries only.
package checkpoint

import (
	"encoding/json"
	"fmt"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/model"
)

// Load reads the checkpoint at path and builds its model with the given kernels (nil:
// compute.Reference). It is how every stage that uses a trained model gets it, so that
// all of them score with the same parameters and code. It reads the parameters only
// (artifact.ReadCheckpointParams): the returned checkpoint has no Adam moments.
func Load(path string, kernels compute.Kernels[float32]) (*model.Model[float32], *artifact.Checkpoint, error) {
	ck, err := artifact.ReadCheckpointParams(path)
	if err != nil {
		return nil, nil, err
	}
	m, err := NewModel(ck, kernels)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, ck, nil
}

// ModelConfig returns the model configuration a checkpoint records (metadata
// model_config), after checking it against the plain metadata keys.
func ModelConfig(meta *artifact.CheckpointMeta) (model.Config, error) {
	var cfg model.Config
	if err := json.Unmarshal([]byte(meta.ModelConfig), &cfg); err != nil {
		return cfg, fmt.Errorf("checkpoint model_config: %w", err)
	}
	switch {
	case string(cfg.Variant) != meta.Model:
		return cfg, fmt.Errorf("checkpoint model_config has variant %q, metadata model is %q", cfg.Variant, meta.Model)
	case cfg.Dim != meta.Dim:
		return cfg, fmt.Errorf("checkpoint model_config has dim %d, metadata dim is %d", cfg.Dim, meta.Dim)
	case cfg.NumEntities != meta.NumEntities || cfg.NumRelations != meta.NumRelations:
		return cfg, fmt.Errorf("checkpoint model_config has %d entities and %d relations, metadata %d and %d",
			cfg.NumEntities, cfg.NumRelations, meta.NumEntities, meta.NumRelations)
	}
	return cfg, cfg.Validate()
}

// NewModel builds the model a checkpoint holds: its configuration from the
// metadata, every parameter tensor from the param rows. The checkpoint must hold exactly
// the model's parameter tensors, each with the shape [rows, cols] the configuration gives.
// The parameters are copied.
func NewModel(ck *artifact.Checkpoint, kernels compute.Kernels[float32]) (*model.Model[float32], error) {
	cfg, err := ModelConfig(&ck.Meta)
	if err != nil {
		return nil, err
	}
	if err := checkpointHolds(ck, cfg); err != nil {
		return nil, err
	}
	m, err := model.New(cfg, kernels)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, t := range m.Params.Tensors() {
		want[t.Name] = true
		src := ck.Tensor(t.Name, artifact.RoleParam)
		if src == nil {
			return nil, fmt.Errorf("checkpoint has no parameter %s (model %s, dim %d)", t.Name, cfg.Variant, cfg.Dim)
		}
		if len(src.Shape) != 2 || src.Shape[0] != int64(t.Rows) || src.Shape[1] != int64(t.Cols) {
			return nil, fmt.Errorf("checkpoint parameter %s has shape %v, the model (%s, dim %d) needs [%d %d]",
				t.Name, src.Shape, cfg.Variant, cfg.Dim, t.Rows, t.Cols)
		}
		copy(t.Data, src.Values)
	}
	for _, t := range ck.Tensors {
		if t.Role == artifact.RoleParam && !want[t.Name] {
			return nil, fmt.Errorf("checkpoint has parameter %s, which model %s does not", t.Name, cfg.Variant)
		}
	}
	return m, nil
}

// checkpointHolds refuses a configuration that asks for more parameter values than the
// checkpoint's param tensors hold. model.New allocates the parameters before their shapes
// are compared with the tensors, so without this a corrupt or forged configuration (a
// billion entities in a file of kilobytes) would make it ask for terabytes, a fatal
// out-of-memory. Every model has the entity and relation tables (Dim values a row) and
// the intersection weights (6·Dim² values), which bound what it needs from below.
func checkpointHolds(ck *artifact.Checkpoint, cfg model.Config) error {
	var held int64
	for i := range ck.Tensors {
		if ck.Tensors[i].Role == artifact.RoleParam {
			held += int64(len(ck.Tensors[i].Values))
		}
	}
	d, nE, nR := int64(cfg.Dim), int64(cfg.NumEntities), int64(cfg.NumRelations)
	if d > held || nE > held || nR > held || d*(nE+nR+6*d) > held {
		return fmt.Errorf("checkpoint model_config (%s, dim %d, %d entities, %d relations) needs more parameter values than the checkpoint's %d",
			cfg.Variant, cfg.Dim, cfg.NumEntities, cfg.NumRelations, held)
	}
	return nil
}

// Tensors lays out a model's parameters (model.Params.Tensors order) as checkpoint
// tensors, the inverse of [NewModel]: each parameter as RoleParam with shape [rows, cols],
// followed, when m and v are given (Adam's first and second moments, one per parameter in
// the same order), by its moments as RoleAdamM and RoleAdamV. The values are not copied.
func Tensors(params []model.Tensor[float32], m, v [][]float32) []artifact.Tensor {
	out := make([]artifact.Tensor, 0, len(params)*3)
	for i, p := range params {
		shape := []int64{int64(p.Rows), int64(p.Cols)}
		out = append(out, artifact.Tensor{Name: p.Name, Role: artifact.RoleParam, Shape: shape, Values: p.Data})
		if m != nil || v != nil {
			out = append(out,
				artifact.Tensor{Name: p.Name, Role: artifact.RoleAdamM, Shape: shape, Values: m[i]},
				artifact.Tensor{Name: p.Name, Role: artifact.RoleAdamV, Shape: shape, Values: v[i]})
		}
	}
	return out
}
