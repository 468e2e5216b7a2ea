package train

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rocone/rocone/internal/traintest"
	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/checkpoint"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/model"
)

var (
	filesOnce            sync.Once
	trainFile, validFile string
	filesDir             string
)

// files returns the tiny train and valid files, made once for the package's tests.
func files(t *testing.T) (string, string) {
	t.Helper()
	filesOnce.Do(func() {
		dir, err := os.MkdirTemp("", "train-test-")
		if err != nil {
			t.Fatal(err)
		}
		filesDir = dir
		trainFile = traintest.Generate(t, dir, "train.arrow", "train", nil, 1)
		validFile = traintest.Generate(t, dir, "valid.arrow", "valid", nil, 2)
	})
	if trainFile == "" {
		t.Fatal("test files could not be made")
	}
	return trainFile, validFile
}

func TestMain(m *testing.M) {
	code := m.Run()
	if filesDir != "" {
		os.RemoveAll(filesDir)
	}
	os.Exit(code)
}

// tinyConfig is a configuration that trains in milliseconds, with lr drops after steps
// 10 and 15 of 20.
func tinyConfig(variant string) Config {
	c := Default()
	c.Model = variant
	c.Dim, c.Batch, c.Negatives = 8, 16, 4
	c.Gamma, c.LR, c.Lambda, c.Dropout = 12, 0.01, 0.1, 0.2
	c.Steps, c.EvalEvery, c.CheckpointEvery = 20, 6, 0
	c.Seed = 11
	if variant == string(model.ConE) {
		c.ConeHidden = 12
	}
	return c
}

func run(t *testing.T, cfg Config, opts Options) *Result {
	t.Helper()
	res, err := Run(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// resume continues the checkpoint at opts.Checkpoint up to steps, with the
// configuration ResumeConfig gives.
func resume(t *testing.T, steps int, opts Options) *Result {
	t.Helper()
	saved, done, err := ReadCheckpointConfig(opts.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ResumeConfig(saved, done, []Setting{{Key: "steps", Value: steps, Source: "--steps"}})
	if err != nil {
		t.Fatal(err)
	}
	opts.Resume = true
	return run(t, cfg, opts)
}

// sameCheckpoints compares two checkpoints: every tensor byte for byte, the metadata,
// and the state apart from its timings.
func sameCheckpoints(t *testing.T, a, b string) {
	t.Helper()
	ca, err := artifact.ReadCheckpoint(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := artifact.ReadCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	diff, err := CheckpointDiff(ca, cb)
	if err != nil {
		t.Fatal(err)
	}
	if diff != "" {
		t.Fatalf("%s and %s differ: %s", a, b, diff)
	}
}

// logCurves returns a train log's rows without their elapsed times.
func logCurves(t *testing.T, path string) []artifact.TrainLogRow {
	t.Helper()
	_, rows, err := artifact.ReadTrainLog(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		rows[i].ElapsedS = 0
	}
	return rows
}

func sameRows(a, b []artifact.TrainLogRow) bool {
	if len(a) != len(b) {
		return false
	}
	eq := func(x, y float64) bool {
		return math.Float64bits(x) == math.Float64bits(y) || (math.IsNaN(x) && math.IsNaN(y))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Step != y.Step || x.Kind != y.Kind || x.Type != y.Type || x.Queries != y.Queries ||
			!eq(x.LR, y.LR) || !eq(x.Loss, y.Loss) || !eq(x.LossPath, y.LossPath) || !eq(x.LossOther, y.LossOther) ||
			!eq(x.MRR, y.MRR) || !eq(x.Hits1, y.Hits1) || !eq(x.Hits3, y.Hits3) || !eq(x.Hits10, y.Hits10) {
			return false
		}
	}
	return true
}

// TestResumeBitIdentical trains 20 steps straight, and again in three runs (stopped after
// 7 and 12 steps, across the first lr drop and Adam reset), and compares every parameter,
// Adam moment and piece of state byte for byte, and the train logs. The runs use
// different numbers of workers, which must not matter.
func TestResumeBitIdentical(t *testing.T) {
	train, valid := files(t)
	for _, variant := range []string{"rocone", "cone"} {
		t.Run(variant, func(t *testing.T) {
			dir := t.TempDir()
			cfg := tinyConfig(variant)
			straight := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "a.arrow"),
				Log: filepath.Join(dir, "a-log.arrow"), Workers: 1}
			run(t, cfg, straight)

			parts := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "b.arrow"),
				Log: filepath.Join(dir, "b-log.arrow"), Workers: 2, StopAfter: 7}
			if res := run(t, cfg, parts); res.StepsDone != 7 {
				t.Fatalf("stopped after %d steps, want 7", res.StepsDone)
			}
			first := logTimings(t, parts.Log)
			parts.StopAfter = 12
			if res := resume(t, cfg.Steps, parts); res.StepsDone != 12 {
				t.Fatalf("stopped after %d steps, want 12", res.StepsDone)
			}
			parts.StopAfter, parts.Workers = 0, 3
			if res := resume(t, cfg.Steps, parts); res.StepsDone != 20 {
				t.Fatalf("ended after %d steps, want 20", res.StepsDone)
			}
			// The timings go on from the log's across the resumes: its elapsed column
			// never goes back.
			if end := logTimings(t, parts.Log); !(first.Total > 0 && end.Total > first.Total && end.Sampling >= first.Sampling) {
				t.Errorf("the timings were not continued from the log: %+v after 7 steps, %+v after 20", first, end)
			}
			_, rows, err := artifact.ReadTrainLog(parts.Log)
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i < len(rows); i++ {
				if rows[i].ElapsedS < rows[i-1].ElapsedS {
					t.Fatalf("elapsed_s goes back at step %d: %g after %g", rows[i].Step, rows[i].ElapsedS, rows[i-1].ElapsedS)
				}
			}
			sameCheckpoints(t, straight.Checkpoint, parts.Checkpoint)
			// The files too, byte for byte: a checkpoint holds nothing of the clock (the
			// timings are the log's), so that the ranks and cones made from it, which name
			// it by its SHA-256, are the same too.
			a, _ := os.ReadFile(straight.Checkpoint)
			b, _ := os.ReadFile(parts.Checkpoint)
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Errorf("the checkpoint files differ (%d and %d bytes)", len(a), len(b))
			}
			la, lb := logCurves(t, straight.Log), logCurves(t, parts.Log)
			if !sameRows(la, lb) {
				t.Fatalf("train logs differ:\n%v\n%v", la, lb)
			}
			if len(la) < 20 {
				t.Fatalf("log has %d rows", len(la))
			}
		})
	}
}

// logTimings is the timings a train log records.
func logTimings(t *testing.T, path string) Timings {
	t.Helper()
	meta, _, err := artifact.ReadTrainLog(path)
	if err != nil {
		t.Fatal(err)
	}
	var tm Timings
	if err := json.Unmarshal([]byte(meta.Timings), &tm); err != nil {
		t.Fatal(err)
	}
	return tm
}

// TestScheduleInRun checks the lr column of the log, the Adam reset and the validation
// steps of a run against a hand computation: Steps 20 gives warm_up_steps 10, so lr/5
// after step 10 (then 15.0) and lr/25 after step 15 (then 22.5); the validation interval
// 6 becomes 24 at step 2·20//3 = 13, so validation after steps 6 and 12, and the final one
// after 19.
// newAdamAfterStep10 checks the checkpoint written after step 10 of a tiny run (Steps 20),
// whose learning-rate drop made a new Adam: 11 steps done, Adam's step 0, learning rate
// lr, warm_up_steps 15, and every moment zero.
func newAdamAfterStep10(t *testing.T, path string, lr float64) {
	t.Helper()
	ck, err := artifact.ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Meta.Step != 11 || ck.Meta.AdamStep != 0 || ck.Meta.LR != lr || ck.Meta.WarmUpSteps != 15 {
		t.Fatalf("after step 10: step %d adam_step %d lr %g warm_up %g; want 11, 0 (a new Adam), %g, 15",
			ck.Meta.Step, ck.Meta.AdamStep, ck.Meta.LR, ck.Meta.WarmUpSteps, lr)
	}
	for _, tn := range ck.Tensors {
		if tn.Role != artifact.RoleParam && slices.ContainsFunc(tn.Values, func(x float32) bool { return x != 0 }) {
			t.Fatalf("%s of %s is not zero after the reset", tn.Role, tn.Name)
		}
	}
}

func TestScheduleInRun(t *testing.T) {
	train, valid := files(t)
	dir := t.TempDir()
	cfg := tinyConfig("rocone")
	opts := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "c.arrow"), Log: filepath.Join(dir, "l.arrow"), StopAfter: 11}
	run(t, cfg, opts)
	newAdamAfterStep10(t, opts.Checkpoint, cfg.LR/5)
	opts.StopAfter = 0
	resume(t, cfg.Steps, opts)
	ck, err := artifact.ReadCheckpoint(opts.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	// Steps 16 … 19 since the reset after step 15, three updates each.
	if ck.Meta.AdamStep != 12 || ck.Meta.LR != cfg.LR/25 || ck.Meta.WarmUpSteps != 22.5 {
		t.Fatalf("at the end: adam_step %d lr %g warm_up %g; want 12, %g, 22.5", ck.Meta.AdamStep, ck.Meta.LR, ck.Meta.WarmUpSteps, cfg.LR/25)
	}
	var validSteps []int64
	for _, r := range logCurves(t, opts.Log) {
		if r.Kind == artifact.LogValid {
			if r.Type == "AVG" {
				validSteps = append(validSteps, r.Step)
			}
			continue
		}
		want := cfg.LR
		switch {
		case r.Step > 15:
			want = cfg.LR / 25
		case r.Step > 10:
			want = cfg.LR / 5
		}
		if r.LR != want {
			t.Errorf("step %d: lr %g, want %g", r.Step, r.LR, want)
		}
		if math.IsNaN(r.LossPath) || math.IsNaN(r.LossOther) || !(r.Loss > 0) {
			t.Errorf("step %d: losses %g %g %g", r.Step, r.Loss, r.LossPath, r.LossOther)
		}
	}
	if !slices.Equal(validSteps, []int64{6, 12, 19}) {
		t.Errorf("validation after steps %v, want [6 12 19]", validSteps)
	}
}

func TestSchedule(t *testing.T) {
	s := newSchedule(Config{LR: 1, Steps: 300001, EvalEvery: 30000})
	var drops []int
	var evals []int
	for step := 0; step < 300001; step++ {
		s.beforeStep(step, 300001)
		if s.afterStep(step) {
			drops = append(drops, step)
		}
		if s.evalDue(step) {
			evals = append(evals, step)
		}
	}
	if !slices.Equal(drops, []int{150000, 225000}) || s.LR != 1.0/25 {
		t.Errorf("lr drops after steps %v, final lr %g; want [150000 225000], 0.04", drops, s.LR)
	}
	// Interval 30000 up to step 200000, then 120000.
	want := []int{30000, 60000, 90000, 120000, 150000, 180000, 240000}
	if !slices.Equal(evals, want) {
		t.Errorf("validation after %v, want %v", evals, want)
	}
	// An odd max_steps: warm-up 500, then 750, 1125, 1687.5 (a drop after step 1688).
	s = newSchedule(Config{LR: 1, Steps: 1001})
	drops = nil
	for step := 0; step < 2000; step++ {
		if s.afterStep(step) {
			drops = append(drops, step)
		}
	}
	if !slices.Equal(drops, []int{500, 750, 1125, 1688}) {
		t.Errorf("drops %v", drops)
	}
}

// TestNaNStop poisons the entity table before an update of step 7: the run must stop with
// an error naming the step and pool, and leave the checkpoint of step 5 as it was.
func TestNaNStop(t *testing.T) {
	train, _ := files(t)
	dir := t.TempDir()
	cfg := tinyConfig("rocone")
	cfg.CheckpointEvery = 5
	opts := Options{Train: train, Checkpoint: filepath.Join(dir, "c.arrow"), Log: filepath.Join(dir, "l.arrow")}
	var saved, savedLog []byte
	opts.AfterCheckpoint = func(done int) {
		var err error
		if saved, err = os.ReadFile(opts.Checkpoint); err != nil {
			t.Error(err)
		}
		if savedLog, err = os.ReadFile(opts.Log); err != nil {
			t.Error(err)
		}
	}
	testHookBeforeUpdate = func(step int, pool string, m *model.Model[float32]) {
		if step == 7 && pool == PoolOther {
			for i := range m.Params.Entity {
				m.Params.Entity[i] = float32(math.NaN())
			}
		}
	}
	defer func() { testHookBeforeUpdate = nil }()
	_, err := Run(context.Background(), cfg, opts)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"step 7", "other-pool", "NaN", "5 steps"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	now, _ := os.ReadFile(opts.Checkpoint)
	nowLog, _ := os.ReadFile(opts.Log)
	if !bytes.Equal(now, saved) || !bytes.Equal(nowLog, savedLog) {
		t.Error("the checkpoint or log changed after the last good checkpoint")
	}
	meta, err := artifact.ReadCheckpointMeta(opts.Checkpoint)
	if err != nil || meta.Step != 5 {
		t.Fatalf("checkpoint: %v, step %d; want 5", err, meta.Step)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("directory holds %d entries, want the checkpoint and the log", len(entries))
	}
}

// TestValidationMatchesRankStage checks that the last validation logged in training is
// exactly what ranking the checkpoint's model afresh gives (as the rank stage will).
func TestValidationMatchesRankStage(t *testing.T) {
	train, valid := files(t)
	dir := t.TempDir()
	opts := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "c.arrow"), Log: filepath.Join(dir, "l.arrow")}
	res := run(t, tinyConfig("rocone"), opts)
	m, _, err := checkpoint.Load(opts.Checkpoint, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, rows, err := artifact.ReadQueries(valid)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := eval.QueriesFromArtifact(rows, m.Config.NumEntities, m.Config.NumRelations)
	if err != nil {
		t.Fatal(err)
	}
	ranks, err := eval.RankQueries(context.Background(), m, qs, eval.RankOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := eval.Summarize(qs, ranks)
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid == nil || len(sum.Types) != 14 {
		t.Fatalf("validation %v, %d types", res.Valid, len(sum.Types))
	}
	for i, tr := range sum.Types {
		if tr != res.Valid.Types[i] {
			t.Errorf("type %s: rank stage %+v, training %+v", tr.Type, tr, res.Valid.Types[i])
		}
	}
	logged := 0
	for _, r := range logCurves(t, opts.Log) {
		if r.Kind == artifact.LogValid && r.Step == 19 {
			if tr, ok := sum.Type(r.Type); ok && (tr.MRR != r.MRR || tr.H10 != r.Hits10) {
				t.Errorf("logged %s MRR %g, rank stage %g", r.Type, r.MRR, tr.MRR)
			}
			logged++
		}
	}
	if logged != 14+3 { // 14 types, AVG, AVG-EPFO, AVG-neg
		t.Errorf("%d valid rows at the last step, want 17", logged)
	}
}

func TestNothingToDo(t *testing.T) {
	train, _ := files(t)
	dir := t.TempDir()
	cfg := tinyConfig("rocone")
	cfg.Steps = 3
	opts := Options{Train: train, Checkpoint: filepath.Join(dir, "c.arrow")}
	run(t, cfg, opts)
	before, _ := os.ReadFile(opts.Checkpoint)
	if res := resume(t, 3, opts); res.StepsDone != 3 {
		t.Fatalf("steps done %d", res.StepsDone)
	}
	after, _ := os.ReadFile(opts.Checkpoint)
	if !bytes.Equal(before, after) {
		t.Error("a resumed run with nothing to do rewrote the checkpoint")
	}
}

func TestInterrupt(t *testing.T) {
	train, _ := files(t)
	dir := t.TempDir()
	cfg := tinyConfig("rocone")
	ctx, cancel := context.WithCancel(context.Background())
	opts := Options{Train: train, Checkpoint: filepath.Join(dir, "c.arrow"),
		AfterCheckpoint: func(int) {}}
	testHookBeforeUpdate = func(step int, pool string, m *model.Model[float32]) {
		if step == 4 {
			cancel()
		}
	}
	defer func() { testHookBeforeUpdate = nil }()
	res, err := Run(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.StepsDone != 5 {
		t.Fatalf("interrupted %v after %d steps; want true, 5", res.Interrupted, res.StepsDone)
	}
	if meta, err := artifact.ReadCheckpointMeta(opts.Checkpoint); err != nil || meta.Step != 5 {
		t.Fatalf("checkpoint %v step %d", err, meta.Step)
	}
}

// TestPoolsAndCustomStructures trains on custom structures (a 4-hop chain joins the path
// pool, a three-branch intersection-projection the other pool) and on a path-only file,
// where each step is a single update.
func TestPoolsAndCustomStructures(t *testing.T) {
	dir := t.TempDir()
	const chain4 = "('e',('r','r','r','r'))"
	const other = "((('e',('r',)),('e',('r','n')),('e',('r',))),('r',))"
	custom := traintest.Generate(t, dir, "custom.arrow", "train", map[string]int{"1p": 20, chain4: 10, other: 10}, 4)
	pathOnly := traintest.Generate(t, dir, "path.arrow", "train", map[string]int{"1p": 20, "2p": 10}, 4)

	cfg := tinyConfig("rocone")
	cfg.Steps = 10 // the first lr drop, and a new Adam, after step 5
	res := run(t, cfg, Options{Train: custom, Checkpoint: filepath.Join(dir, "c.arrow"), Log: filepath.Join(dir, "c-log.arrow"), StopAfter: 4})
	if res.StepsDone != 4 {
		t.Fatalf("steps %d", res.StepsDone)
	}
	ck, err := artifact.ReadCheckpoint(filepath.Join(dir, "c.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	var st state
	json.Unmarshal([]byte(ck.Meta.State), &st)
	if st.Loaders[PoolPath].Queries != 30 || st.Loaders[PoolOther].Queries != 10 || ck.Meta.AdamStep != 12 {
		t.Errorf("pools %+v, adam_step %d; want 30 path, 10 other, 12 updates", st.Loaders, ck.Meta.AdamStep)
	}

	run(t, cfg, Options{Train: pathOnly, Checkpoint: filepath.Join(dir, "p.arrow"), Log: filepath.Join(dir, "p-log.arrow"), StopAfter: 4})
	meta, err := artifact.ReadCheckpointMeta(filepath.Join(dir, "p.arrow"))
	if err != nil || meta.AdamStep != 4 {
		t.Fatalf("path-only: %v, adam_step %d, want 4 (one update per step)", err, meta.AdamStep)
	}
	for _, r := range logCurves(t, filepath.Join(dir, "p-log.arrow")) {
		if !math.IsNaN(r.LossOther) || r.Loss != r.LossPath {
			t.Errorf("path-only step %d: loss %g path %g other %g", r.Step, r.Loss, r.LossPath, r.LossOther)
		}
	}
}
