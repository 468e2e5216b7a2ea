// Command train-timings prints the per-phase training time a checkpoint records (the
// timings of its training state, in seconds at full precision), divided by the number of
// updates it holds (three per step), for make bench-scale:
//
//	go run ./scripts/train-timings CHECKPOINT
//
// prints "updates total sampling embedding distance optimizer" with the last five per
// update. A checkpoint written only at the end of its run records the run's time up to
// that checkpoint, so no checkpoint writing is counted.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/rocone/rocone/pkg/artifact"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: train-timings CHECKPOINT")
		os.Exit(2)
	}
	meta, err := artifact.ReadCheckpointMeta(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "train-timings:", err)
		os.Exit(1)
	}
	var st struct {
		Timings struct {
			Sampling, Embedding, Distance, Optimizer, Checkpoint, Total float64
		} `json:"timings"`
	}
	if err := json.Unmarshal([]byte(meta.State), &st); err != nil {
		fmt.Fprintf(os.Stderr, "train-timings: %s: training state: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	updates := 3 * float64(meta.Step)
	if updates == 0 {
		fmt.Fprintf(os.Stderr, "train-timings: %s holds no steps\n", os.Args[1])
		os.Exit(1)
	}
	t := st.Timings
	fmt.Printf("%.0f\t%.5f\t%.5f\t%.5f\t%.5f\t%.5f\n", updates, (t.Total-t.Checkpoint)/updates,
		t.Sampling/updates, t.Embedding/updates, t.Distance/updates, t.Optimizer/updates)
}
