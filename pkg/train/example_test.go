package train_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/sample"
	"github.com/rocone/rocone/pkg/train"
)

// Train a tiny RoConE model on the CPU: sample train and valid queries on testdata/tiny,
// run 20 steps with a fixed seed, validating at step 10 and at the end, and read the
// checkpoint's configuration and the train log back. (The losses are floats that differ
// in their last bits between the AVX-512, AVX2 and pure-Go paths; this prints what the
// run did, not its numbers.)
func ExampleRun() {
	dir, err := os.MkdirTemp("", "train-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	src := sample.Source{Dir: "../../testdata/tiny", Format: kg.FormatIDs}
	files := map[string]map[string]int{
		"train": {"1p": 40, "2p": 20, "2i": 20, "2in": 8},
		"valid": {"1p": 10, "2i": 5},
	}
	for _, split := range []string{"train", "valid"} {
		var types []string
		for _, t := range []string{"1p", "2p", "2i", "2in"} {
			if files[split][t] > 0 {
				types = append(types, t)
			}
		}
		opts := sample.Options{Types: types, Counts: files[split], Seed: 1}
		if err := sample.GenerateToFile(context.Background(), src, split, opts, filepath.Join(dir, split+".arrow"), nil); err != nil {
			panic(err)
		}
	}

	cfg := train.Default() // then a tiny model, small batches and a raised learning rate
	for key, value := range map[string]any{
		"dim": 8, "batch": 16, "negatives": 4, "gamma": 12.0, "lr": 0.01,
		"steps": 20, "eval_every": 10, "seed": 1,
	} {
		if err := cfg.Set(key, value); err != nil {
			panic(err)
		}
	}
	res, err := train.Run(context.Background(), cfg, train.Options{
		Train:      filepath.Join(dir, "train.arrow"),
		Valid:      filepath.Join(dir, "valid.arrow"),
		Checkpoint: filepath.Join(dir, "model.arrow"),
		Log:        filepath.Join(dir, "log.arrow"),
		Workers:    1,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("steps done:", res.StepsDone, "dataset:", res.Config.Dataset, res.Config.NumEntities, "entities")
	for _, t := range res.Valid.Types {
		fmt.Println("validated", t.Type, "on", t.Queries, "queries")
	}

	saved, steps, err := train.ReadCheckpointConfig(filepath.Join(dir, "model.arrow"))
	if err != nil {
		panic(err)
	}
	fmt.Println("checkpoint:", saved.Model, "d =", saved.Dim, "after", steps, "steps")

	_, rows, err := artifact.ReadTrainLog(filepath.Join(dir, "log.arrow"))
	if err != nil {
		panic(err)
	}
	kinds := map[string]int{}
	for _, r := range rows {
		kinds[r.Kind]++
	}
	fmt.Println("log rows:", kinds)
	var losses []float64 // one per step; the valid rows hold each validation's MRR per type
	for _, r := range rows {
		if r.Kind == artifact.LogTrain {
			losses = append(losses, r.Loss)
		}
	}
	first, last := losses[0], losses[len(losses)-1]
	fmt.Printf("loss at step 0: %.1f; lower at step 19: %v\n", first, last < first)
	// Output:
	// steps done: 20 dataset: tiny 82 entities
	// validated 1p on 10 queries
	// validated 2i on 5 queries
	// checkpoint: rocone d = 8 after 20 steps
	// log rows: map[train:20 valid:6]
	// loss at step 0: 4.7; lower at step 19: true
}
