package checkpoint_test

import (
	"encoding/json"
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
			} {
				_, err := checkpoint.NewModel(&artifact.Checkpoint{Meta: meta, Tensors: c.tensors}, nil)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: got %v, want %q", c.name, err, c.want)
				}
			}
		})
	}
}
