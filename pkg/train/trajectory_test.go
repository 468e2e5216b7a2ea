package train

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/artifact"
)

// TestTrajectory: a checkpoint's trajectory is what its log's train rows give back, after
// a resume too; a run of the same seed and configuration but another --steps (another
// learning-rate schedule) does not match it, nor does a log that lacks a step.
func TestTrajectory(t *testing.T) {
	train, _ := files(t)
	dir := t.TempDir()
	cfg := tinyConfig("rocone")
	cfg.EvalEvery = 0
	opts := Options{Train: train, Checkpoint: filepath.Join(dir, "a.arrow"), Log: filepath.Join(dir, "a-log.arrow"), StopAfter: 7}
	run(t, cfg, opts)
	atSeven := trajectoryOf(t, opts.Checkpoint)
	if !strings.HasPrefix(atSeven, "7:") {
		t.Fatalf("trajectory %q, want one of 7 steps", atSeven)
	}
	opts.StopAfter = 0
	resume(t, cfg.Steps, opts)
	_, rows, err := artifact.ReadTrainLog(opts.Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, recorded := range []string{atSeven, trajectoryOf(t, opts.Checkpoint)} {
		if ok, why, err := SameTrajectory(rows, recorded); !ok || err != nil {
			t.Errorf("%s: the run's own log does not match: %s %v", recorded, why, err)
		}
	}

	other := cfg
	other.Steps = 40 // the schedule's drops after steps 20 and 30, not 10 and 15
	otherOpts := Options{Train: train, Checkpoint: filepath.Join(dir, "b.arrow"), Log: filepath.Join(dir, "b-log.arrow")}
	run(t, other, otherOpts)
	_, otherRows, err := artifact.ReadTrainLog(otherOpts.Log)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := SameTrajectory(otherRows, atSeven); !ok {
		t.Errorf("before the first drop the two runs are one: the 40-step run's log should match the 7 steps")
	}
	final := trajectoryOf(t, opts.Checkpoint)
	if ok, why, _ := SameTrajectory(otherRows, final); ok || !strings.Contains(why, "first 20 steps are not the checkpoint's") {
		t.Errorf("the log of a run of another --steps matches: %q", why)
	}
	if ok, why, _ := SameTrajectory(rows[1:], atSeven); ok || !strings.Contains(why, "lacks the train row of step 0") {
		t.Errorf("a log without step 0: %q", why)
	}
	if _, _, err := SameTrajectory(rows, "7:xyz"); err == nil {
		t.Error("a malformed trajectory is accepted")
	}
}

func trajectoryOf(t *testing.T, path string) string {
	t.Helper()
	meta, err := artifact.ReadCheckpointMeta(path)
	if err != nil {
		t.Fatal(err)
	}
	return CheckpointTrajectory(meta)
}

// FuzzSameTrajectory: any checkpoint_trajectory metadata value, as a ranks file carries
// it, is matched against a log's rows or refused with an error; never a panic.
func FuzzSameTrajectory(f *testing.F) {
	rows := []artifact.TrainLogRow{{Step: 0, Kind: artifact.LogTrain, LR: 0.1, Loss: 1}, {Step: 1, Kind: artifact.LogTrain, LR: 0.1, Loss: 0.5}}
	h := trajectoryStart.add(rows[0]).add(rows[1])
	for _, s := range []string{"2:" + h.String(), "0:" + trajectoryStart.String(), "", ":", "7:xyz", "-1:0000000000000000", "99999999999999999999:0", "2:" + h.String() + "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, recorded string) {
		ok, why, err := SameTrajectory(rows, recorded)
		if err != nil && ok {
			t.Fatalf("%q: an error and a match", recorded)
		}
		if err == nil && !ok && why == "" {
			t.Fatalf("%q: no match and no reason", recorded)
		}
		if recorded == "2:"+h.String() && !ok {
			t.Fatalf("the rows' own trajectory does not match: %s %v", why, err)
		}
	})
}
