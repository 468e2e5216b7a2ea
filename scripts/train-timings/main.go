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
//
// The log must be the checkpoint's run, ending where the checkpoint does: the same
// lineage, the train rows of every step the checkpoint holds, as its trajectory records,
// and none after. Another run's log would divide its times by the wrong steps.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/train"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: train-timings CHECKPOINT LOG")
		os.Exit(2)
	}
	line, err := timings(os.Args[1], os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "train-timings:", err)
		os.Exit(1)
	}
	fmt.Println(line)
}

// timings returns the line main prints for the checkpoint at ckPath and the log at logPath.
func timings(ckPath, logPath string) (string, error) {
	meta, err := artifact.ReadCheckpointMeta(ckPath)
	if err != nil {
		return "", err
	}
	updates := 3 * float64(meta.Step)
	if updates == 0 {
		return "", fmt.Errorf("%s holds no steps", ckPath)
	}
	logMeta, rows, err := artifact.ReadTrainLog(logPath)
	if err != nil {
		return "", err
	}
	if err := sameRun(ckPath, meta, logPath, logMeta, rows); err != nil {
		return "", err
	}
	var t struct{ Sampling, Embedding, Distance, Optimizer, Checkpoint, Total float64 }
	if err := json.Unmarshal([]byte(logMeta.Timings), &t); err != nil {
		return "", fmt.Errorf("%s: timings: %v", logPath, err)
	}
	var elapsed []float64
	for _, r := range rows {
		if r.Kind == artifact.LogTrain {
			elapsed = append(elapsed, r.ElapsedS)
		}
	}
	if len(elapsed) < 2 {
		return "", fmt.Errorf("%s: %d steps logged; the steady time needs two", logPath, len(elapsed))
	}
	steady := (elapsed[len(elapsed)-1] - elapsed[0]) / float64(3*(len(elapsed)-1))
	return fmt.Sprintf("%.0f\t%.5f\t%.5f\t%.5f\t%.5f\t%.5f\t%.5f", updates, (t.Total-t.Checkpoint)/updates,
		t.Sampling/updates, t.Embedding/updates, t.Distance/updates, t.Optimizer/updates, steady), nil
}

// sameRun checks that the log is of the checkpoint's run and ends at its last step.
func sameRun(ckPath string, meta artifact.CheckpointMeta, logPath string, logMeta artifact.TrainLogMeta, rows []artifact.TrainLogRow) error {
	if logMeta.Dataset != meta.Dataset || logMeta.Model != meta.Model || logMeta.KGDigest != meta.KGDigest || logMeta.TrainFingerprint != meta.TrainFingerprint {
		return fmt.Errorf("%s is not the log of %s: a %s run on %s (KG %.12s, train file %s), the checkpoint %s on %s (KG %.12s, train file %s)",
			logPath, ckPath, logMeta.Model, logMeta.Dataset, logMeta.KGDigest, logMeta.TrainFingerprint, meta.Model, meta.Dataset, meta.KGDigest, meta.TrainFingerprint)
	}
	traj := train.CheckpointTrajectory(meta)
	if traj == "" {
		return fmt.Errorf("%s records no trajectory: cannot check that %s is its run's log", ckPath, logPath)
	}
	same, why, err := train.SameTrajectory(rows, traj)
	if err != nil {
		return fmt.Errorf("%s: %w", ckPath, err)
	}
	if !same {
		return fmt.Errorf("%s is not the log of %s: %s", logPath, ckPath, why)
	}
	for _, r := range rows {
		if r.Kind == artifact.LogTrain && r.Step >= meta.Step {
			return fmt.Errorf("%s goes on past %s (a train row of step %d, the checkpoint holds %d steps): its timings are of more steps than the checkpoint's",
				logPath, ckPath, r.Step, meta.Step)
		}
	}
	return nil
}
