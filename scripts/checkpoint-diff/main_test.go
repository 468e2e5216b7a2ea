package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/artifact"
)

// TestCompare: checkpoints that differ only in their timings are the same; a changed
// value of any tensor, a metadata key or another state key is a difference, named.
func TestCompare(t *testing.T) {
	dir := t.TempDir()
	write := func(name, state string, step int64, v float32) string {
		path := filepath.Join(dir, name)
		ck := &artifact.Checkpoint{
			Meta: artifact.CheckpointMeta{Model: "rocone", Dim: 2, Dataset: "tiny", NumEntities: 3, NumRelations: 2, Step: step,
				LR: 0.1, Config: "{}", ModelConfig: "{}", State: state},
			Tensors: []artifact.Tensor{
				{Name: "entity", Role: artifact.RoleParam, Shape: []int64{3, 2}, Values: []float32{1, 2, 3, 4, 5, v}},
			},
		}
		if err := artifact.WriteCheckpoint(path, ck); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := write("a.arrow", `{"eval_every":2,"timings":{"total":1.5}}`, 4, 6)
	for _, tc := range []struct {
		name, state string
		step        int64
		v           float32
		want        string
	}{
		{"timings only", `{"timings":{"total":9},"eval_every":2}`, 4, 6, ""},
		{"a value", `{"eval_every":2,"timings":{"total":1.5}}`, 4, 6.0000005, "tensor entity (param), value 5"},
		{"the step", `{"eval_every":2,"timings":{"total":1.5}}`, 5, 6, "metadata"},
		{"the state", `{"eval_every":3,"timings":{"total":1.5}}`, 4, 6, `training state {"eval_every":2} vs {"eval_every":3}`},
	} {
		b := write(tc.name+".arrow", tc.state, tc.step, tc.v)
		got, err := compare(a, b)
		if err != nil {
			t.Fatal(err)
		}
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if _, err := compare(a, filepath.Join(dir, "none.arrow")); err == nil {
		t.Error("a missing file compared")
	}
}
