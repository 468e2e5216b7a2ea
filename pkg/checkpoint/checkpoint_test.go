package checkpoint_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/checkpoint"
	"github.com/rocone/rocone/pkg/model"
)

// TestRoundTrip: the tensors Tensors lays out build, through NewModel, a model with the
// same parameters, with and without the Adam moments beside them; and a checkpoint that
// lacks a parameter, has a foreign one or a wrong shape is refused with the name of it.
func TestRoundTrip(t *testing.T) {
	for _, v := range model.Variants {
		t.Run(string(v), func(t *testing.T) {
			cfg := model.Config{Variant: v, NumEntities: 7, NumRelations: 3, Dim: 4, Gamma: 12, CenterReg: 0.02, ConeHidden: 5}
			p := model.NewParams[float32](cfg)
			p.Init(cfg, 1)
			mc, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			meta := artifact.CheckpointMeta{Model: string(v), Dim: cfg.Dim, NumEntities: cfg.NumEntities, NumRelations: cfg.NumRelations, ModelConfig: string(mc)}
			var m, s [][]float32
			for _, tn := range p.Tensors() {
				m, s = append(m, make([]float32, len(tn.Data))), append(s, make([]float32, len(tn.Data)))
			}
			for _, moments := range []bool{false, true} {
				ts, want := checkpoint.Tensors(p.Tensors(), nil, nil), len(p.Tensors())
				if moments {
					ts, want = checkpoint.Tensors(p.Tensors(), m, s), 3*want
				}
				if len(ts) != want {
					t.Fatalf("moments %v: %d tensors, want %d", moments, len(ts), want)
				}
				got, err := checkpoint.NewModel(&artifact.Checkpoint{Meta: meta, Tensors: ts}, nil)
				if err != nil {
					t.Fatalf("moments %v: %v", moments, err)
				}
				if got.Config != cfg {
					t.Errorf("config %+v, want %+v", got.Config, cfg)
				}
				for i, tn := range got.Params.Tensors() {
					if want := p.Tensors()[i]; tn.Name != want.Name || !slices.Equal(tn.Data, want.Data) {
						t.Errorf("moments %v: parameter %s differs", moments, tn.Name)
					}
				}
			}

			all := checkpoint.Tensors(p.Tensors(), nil, nil)
			wrongShape := slices.Clone(all)
			wrongShape[0].Shape = []int64{wrongShape[0].Shape[1], wrongShape[0].Shape[0]}
			for _, c := range []struct {
				name    string
				tensors []artifact.Tensor
				want    string
			}{
				{"missing", all[1:], "checkpoint has no parameter entity"},
				{"foreign", append(slices.Clone(all), artifact.Tensor{Name: "extra", Role: artifact.RoleParam, Shape: []int64{1, 1}, Values: []float32{0}}), "checkpoint has parameter extra, which model"},
				{"shape", wrongShape, "checkpoint parameter entity has shape"},
				{"a row more", reshaped(all, []int64{all[0].Shape[0] + 1, all[0].Shape[1]}), "checkpoint parameter entity has shape"},
				{"a third axis", reshaped(all, append(slices.Clone(all[0].Shape), 1)), "checkpoint parameter entity has shape"},
				{"one axis", reshaped(all, []int64{all[0].Shape[0] * all[0].Shape[1]}), "checkpoint parameter entity has shape"},
			} {
				_, err := checkpoint.NewModel(&artifact.Checkpoint{Meta: meta, Tensors: c.tensors}, nil)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: got %v, want %q", c.name, err, c.want)
				}
			}
		})
	}
}

// reshaped is tensors with the first one's shape replaced, and as many zero values as
// the shape has.
func reshaped(tensors []artifact.Tensor, shape []int64) []artifact.Tensor {
	out := slices.Clone(tensors)
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	out[0].Shape, out[0].Values = shape, make([]float32, n)
	return out
}

// TestModelConfigMismatch: a checkpoint whose model_config disagrees with its plain
// metadata keys (model, dim, num_entities, num_relations), or is no valid configuration,
// is refused, saying which; the two must agree, since tools that read the plain keys
// alone (pyarrow, the CLI's summaries) would describe another model than the one scored.
func TestModelConfigMismatch(t *testing.T) {
	cfg := model.Config{Variant: model.Variants[0], NumEntities: 7, NumRelations: 3, Dim: 4, Gamma: 12, CenterReg: 0.02}
	meta := func(edit func(m *artifact.CheckpointMeta, c *model.Config)) *artifact.CheckpointMeta {
		c := cfg
		m := artifact.CheckpointMeta{Model: string(c.Variant), Dim: c.Dim, NumEntities: c.NumEntities, NumRelations: c.NumRelations}
		edit(&m, &c)
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		m.ModelConfig = string(b)
		return &m
	}
	for _, c := range []struct {
		name string
		meta *artifact.CheckpointMeta
		want string // "": accepted
	}{
		{"agreeing", meta(func(*artifact.CheckpointMeta, *model.Config) {}), ""},
		{"variant", meta(func(m *artifact.CheckpointMeta, _ *model.Config) { m.Model = string(model.Variants[1]) }),
			fmt.Sprintf("checkpoint model_config has variant %q, metadata model is %q", model.Variants[0], model.Variants[1])},
		{"dim", meta(func(m *artifact.CheckpointMeta, _ *model.Config) { m.Dim = 8 }), "checkpoint model_config has dim 4, metadata dim is 8"},
		{"entities", meta(func(m *artifact.CheckpointMeta, _ *model.Config) { m.NumEntities = 8 }),
			"checkpoint model_config has 7 entities and 3 relations, metadata 8 and 3"},
		{"relations", meta(func(m *artifact.CheckpointMeta, _ *model.Config) { m.NumRelations = 4 }),
			"checkpoint model_config has 7 entities and 3 relations, metadata 7 and 4"},
		{"invalid, in agreement", meta(func(_ *artifact.CheckpointMeta, c *model.Config) { c.Drop = 1 }), "Drop must be in [0, 1)"},
		{"not JSON", &artifact.CheckpointMeta{ModelConfig: "{"}, "checkpoint model_config: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := checkpoint.ModelConfig(c.meta)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want == "" && got != cfg:
				t.Errorf("config %+v, want %+v", got, cfg)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}
