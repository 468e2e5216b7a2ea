package pipeline

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rocone/rocone/internal/traintest"
	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute/cpu"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/train"
)

// TestRankAgreesWithValidation trains a model on the fast CPU backend, then ranks its
// valid file with `rank` from stored cones and from the checkpoint: both must give
// exactly the per-type metrics training's last validation logged.
func TestRankAgreesWithValidation(t *testing.T) {
	dir := t.TempDir()
	trainFile := traintest.Generate(t, dir, "train.arrow", "train", nil, 1)
	validFile := traintest.Generate(t, dir, "valid.arrow", "valid", nil, 2)
	cfg, err := train.NewConfig("", []train.Setting{{Key: "dim", Value: 8}, {Key: "steps", Value: 6}, {Key: "eval_every", Value: 3},
		{Key: "batch", Value: 16}, {Key: "negatives", Value: 4}, {Key: "lr", Value: 0.01}})
	if err != nil {
		t.Fatal(err)
	}
	ck, logPath := filepath.Join(dir, "model.arrow"), filepath.Join(dir, "log.arrow")
	kernels := cpu.New(cpu.Options{})
	if _, err := train.Run(context.Background(), cfg, train.Options{Train: trainFile, Valid: validFile, Checkpoint: ck, Log: logPath, Kernels: kernels}); err != nil {
		t.Fatal(err)
	}
	_, log, err := artifact.ReadTrainLog(logPath)
	if err != nil {
		t.Fatal(err)
	}
	logged := map[string]float64{}
	last := int64(-1)
	for _, r := range log {
		if r.Kind == artifact.LogValid && r.Step >= last {
			if r.Step > last {
				logged, last = map[string]float64{}, r.Step
			}
			logged[r.Type] = r.MRR
		}
	}
	cones := filepath.Join(dir, "cones.arrow")
	if err := Embed(EmbedConfig{Checkpoint: ck, Queries: validFile, Output: cones, Kernels: kernels}); err != nil {
		t.Fatal(err)
	}
	for _, withCones := range []string{"", cones} {
		out := filepath.Join(dir, "ranks.arrow")
		if err := Rank(RankConfig{Checkpoint: ck, Queries: validFile, Cones: withCones, Output: out, Kernels: kernels}); err != nil {
			t.Fatal(err)
		}
		_, rows, err := artifact.ReadRanks(out)
		if err != nil {
			t.Fatal(err)
		}
		per := map[int64][]int32{}
		typ := map[int64]string{}
		var order []int64
		for _, r := range rows {
			if _, ok := per[r.ID]; !ok {
				order = append(order, r.ID)
			}
			per[r.ID] = append(per[r.ID], r.Rank)
			typ[r.ID] = r.Type
		}
		var acc eval.Accumulator
		for _, id := range order {
			if err := acc.Add(typ[id], per[id]); err != nil {
				t.Fatal(err)
			}
		}
		sum := acc.Summary()
		if len(sum.Types) != 14 {
			t.Fatalf("%d types ranked", len(sum.Types))
		}
		for _, tr := range sum.Types {
			if want, ok := logged[tr.Type]; !ok || tr.MRR != want {
				t.Errorf("cones %q: %s MRR %v, training logged %v", withCones, tr.Type, tr.MRR, want)
			}
		}
	}
}
