// Command train-timings prints the per-phase training time a run's train log records (its
// timings metadata, in seconds at full precision), divided by the number of updates its
// checkpoint holds (three per step), for make bench-scale:
//
//	go run ./scripts/train-timings CHECKPOINT LOG
//
// prints "updates total sampling embedding distance optimizer steady" with all but the
// first per update. A log written only at the end of its run (with its one checkpoint)
// records the run's time up to then, so no checkpoint writing is counted. steady is the time per
// update after the first step, from the train log's elapsed times (the first step's
// updates also pay one-time costs: the first update of dense Adam maps the moments'
// memory when train did not, first batches of a structure allocate).
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/rocone/rocone/pkg/artifact"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: train-timings CHECKPOINT LOG")
		os.Exit(2)
	}
	meta, err := artifact.ReadCheckpointMeta(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "train-timings:", err)
		os.Exit(1)
	}
	updates := 3 * float64(meta.Step)
	if updates == 0 {
		fmt.Fprintf(os.Stderr, "train-timings: %s holds no steps\n", os.Args[1])
		os.Exit(1)
	}
	logMeta, rows, err := artifact.ReadTrainLog(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "train-timings:", err)
		os.Exit(1)
	}
	var t struct{ Sampling, Embedding, Distance, Optimizer, Checkpoint, Total float64 }
	if err := json.Unmarshal([]byte(logMeta.Timings), &t); err != nil {
		fmt.Fprintf(os.Stderr, "train-timings: %s: timings: %v\n", os.Args[2], err)
		os.Exit(1)
	}
	var elapsed []float64
	for _, r := range rows {
		if r.Kind == artifact.LogTrain {
			elapsed = append(elapsed, r.ElapsedS)
		}
	}
	if len(elapsed) < 2 {
		fmt.Fprintf(os.Stderr, "train-timings: %s: %d steps logged; the steady time needs two\n", os.Args[2], len(elapsed))
		os.Exit(1)
	}
	steady := (elapsed[len(elapsed)-1] - elapsed[0]) / float64(3*(len(elapsed)-1))
	fmt.Printf("%.0f\t%.5f\t%.5f\t%.5f\t%.5f\t%.5f\t%.5f\n", updates, (t.Total-t.Checkpoint)/updates,
		t.Sampling/updates, t.Embedding/updates, t.Distance/updates, t.Optimizer/updates, steady)
}
