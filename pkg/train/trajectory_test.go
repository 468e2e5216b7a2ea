package train

import (
	"bytes"
	"context"
	"maps"
	"os"
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

// TestMissingSteps: the train steps a log lacks in a range, as messages name them.
func TestMissingSteps(t *testing.T) {
	rows := func(steps ...int64) []artifact.TrainLogRow {
		var out []artifact.TrainLogRow
		for _, s := range steps {
			out = append(out, artifact.TrainLogRow{Step: s, Kind: artifact.LogTrain},
				artifact.TrainLogRow{Step: s + 100, Kind: artifact.LogValid}) // valid rows count for nothing
		}
		return out
	}
	for _, tc := range []struct {
		rows     []artifact.TrainLogRow
		from, to int64
		want     string
	}{
		{rows(0, 1, 2, 3), 0, 4, ""},
		{rows(0, 1, 2, 3, 4, 5), 0, 4, ""}, // past the range: not missing
		{rows(2, 3), 2, 4, ""},
		{nil, 0, 0, ""},
		{rows(0, 1, 3), 0, 4, "step 2"},
		{rows(0, 1), 0, 4, "steps 2 to 3"},
		{rows(1, 1, 2), 0, 3, "step 0"}, // a step twice is one step
		{nil, 0, 3, "steps 0 to 2"},
		{rows(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 30, 31), 0, 32, "steps 20 to 29"},
		{rows(1, 3, 4, 7), 0, 8, "steps 0, 2 and 5 to 6"},
		{rows(1, 3, 4, 7), 0, 9, "steps 0, 2, 5 to 6 and 1 more range"},
		{rows(1, 3, 5, 7), 0, 10, "steps 0, 2, 4 and 2 more ranges"},
	} {
		if got := MissingSteps(tc.rows, tc.from, tc.to); got != tc.want {
			t.Errorf("MissingSteps(%v, %d, %d) = %q, want %q", tc.rows, tc.from, tc.to, got, tc.want)
		}
	}
}

// TestResumeLogGap: a run resumed with --log "" goes on without its log; resuming it
// later into that log, which lacks the steps in between, used to append to it silently,
// leaving a log with a hole that metrics took for another run's. It is refused, naming the
// log, its last step, the checkpoint's and what to do, and no file changes. A new --log
// starts at the checkpoint's step, as a missing log does; a log that goes on past the
// checkpoint is cut back to it, and that is said.
func TestResumeLogGap(t *testing.T) {
	train, _ := files(t)
	dir := t.TempDir()
	cfg := tinyConfig("rocone")
	cfg.EvalEvery, cfg.Steps = 0, 40
	opts := Options{Train: train, Checkpoint: filepath.Join(dir, "m.arrow"), Log: filepath.Join(dir, "m-log.arrow"), StopAfter: 20}
	run(t, cfg, opts)
	noLog := opts
	noLog.Log, noLog.StopAfter = "", 30
	resume(t, cfg.Steps, noLog)

	files := func() map[string]string {
		m := map[string]string{}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			m[e.Name()] = string(b)
		}
		return m
	}
	before := files()
	saved, done, err := ReadCheckpointConfig(opts.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	rcfg, err := ResumeConfig(saved, done, nil)
	if err != nil {
		t.Fatal(err)
	}
	gap := opts
	gap.Resume, gap.StopAfter = true, 0
	_, err = Run(context.Background(), rcfg, gap)
	want := opts.Log + " lacks the train rows of steps 20 to 29 of the 30 steps the checkpoint " + opts.Checkpoint + " holds (its last is step 19)"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `give --log "" to resume without a log, or a new --log path to start one at step 30`) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
	if !maps.Equal(before, files()) {
		t.Error("the refused resume changed a file")
	}

	// A new log starts at the checkpoint's step; it is said.
	var said bytes.Buffer
	fresh := gap
	fresh.Log, fresh.StopAfter, fresh.Progress = filepath.Join(dir, "new-log.arrow"), 35, &said
	run(t, rcfg, fresh)
	if !strings.Contains(said.String(), "train log "+fresh.Log+" not found; starting a new one") {
		t.Errorf("a new log is not said:\n%s", said.String())
	}
	// A log past the checkpoint (here: the new one, with an older copy of the run's
	// checkpoint) is cut back to it, and that is said.
	older := filepath.Join(dir, "older.arrow")
	if b, err := os.ReadFile(opts.Checkpoint); err != nil || os.WriteFile(older, b, 0o644) != nil { // 35 steps now
		t.Fatal("copying the checkpoint")
	}
	said.Reset()
	fresh.StopAfter = 38
	run(t, rcfg, fresh) // the log goes on to step 37
	back := fresh
	back.Checkpoint, back.StopAfter = older, 36
	run(t, rcfg, back)
	if !strings.Contains(said.String(), "train log "+fresh.Log+" goes on to step 37, past the 35 steps of the checkpoint "+older+
		": its rows from step 35 on are dropped, and written again as the run goes on") {
		t.Errorf("cutting the log back is not said:\n%s", said.String())
	}
}

// TestTrajectoryGap: the steps of a checkpoint's trajectory ("STEPS:DIGEST") that the log
// has no train row for; "" when it has them all, or when the trajectory is unreadable or
// holds no step (there is nothing to compare).
func TestTrajectoryGap(t *testing.T) {
	rows := []artifact.TrainLogRow{{Step: 0, Kind: artifact.LogTrain}, {Step: 1, Kind: artifact.LogTrain}, {Step: 3, Kind: artifact.LogTrain}}
	for _, tc := range []struct{ recorded, want string }{
		{"2:abc", ""},
		{"4:abc", "step 2"},
		{"6:abc", "steps 2 and 4 to 5"},
		{"6", "steps 2 and 4 to 5"},
		{"0:abc", ""},
		{"-3:abc", ""},
		{"x:abc", ""},
		{"", ""},
	} {
		if got := TrajectoryGap(rows, tc.recorded); got != tc.want {
			t.Errorf("TrajectoryGap(%q) = %q, want %q", tc.recorded, got, tc.want)
		}
	}
}
