package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/traintest"
	"github.com/rocone/rocone/pkg/artifact"
)

func TestParseBestMetric(t *testing.T) {
	for _, tc := range []struct {
		in, want, logType, err string
	}{
		{"mrr:epfo", "mrr:epfo", "AVG-EPFO", ""},
		{"mrr", "mrr:epfo", "AVG-EPFO", ""},
		{"MRR:AVG-EPFO", "mrr:epfo", "AVG-EPFO", ""},
		{" hits@10 : 2p ", "hits@10:2p", "2p", ""},
		{"hits@1:neg", "hits@1:neg", "AVG-neg", ""},
		{"Hits@3:avg", "hits@3:avg", "AVG", ""},
		{"mrr:(i,(p,(e)),(p,(e)))", "mrr:(i,(p,(e)),(p,(e)))", "(i,(p,(e)),(p,(e)))", ""},
		{"hits@5:epfo", "", "", `unknown measure "hits@5"`},
		{"", "", "", `unknown measure ""`},
		{"auc:1p", "", "", "MEASURE[:GROUP]"},
	} {
		m, err := ParseBestMetric(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || m.String() != tc.want || m.LogType() != tc.logType {
			t.Errorf("%q: %v (log type %s), %v; want %s (%s)", tc.in, m, m.LogType(), err, tc.want, tc.logType)
		}
	}
}

func TestBestPath(t *testing.T) {
	for in, want := range map[string]string{
		"model.arrow":          "model.best.arrow",
		"out/seed0/m.arrow":    "out/seed0/m.best.arrow",
		"out/model":            "out/model.best",
		"out.d/model":          "out.d/model.best",
		"a.b.arrow":            "a.b.best.arrow",
		"/tmp/x/.hidden":       "/tmp/x/.hidden.best",
		"/tmp/x/.hidden.arrow": "/tmp/x/.hidden.best.arrow",
	} {
		if got := BestPath(in); got != want {
			t.Errorf("BestPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestImprove: the first validation is the best, only a strictly higher value replaces
// it (a tie keeps the earlier), and each other validation counts towards the patience.
func TestImprove(t *testing.T) {
	var b *bestState
	for i, tc := range []struct {
		v        float64
		improved bool
		best     float64
		step     int
		since    int
	}{
		{0.10, true, 0.10, 0, 0},
		{0.05, false, 0.10, 0, 1},
		{0.10, false, 0.10, 0, 2},
		{0.11, true, 0.11, 3, 0},
		{math.NaN(), false, 0.11, 3, 1},
		{0.12, true, 0.12, 5, 0},
	} {
		var ok bool
		b, ok = improve(b, i, tc.v)
		if ok != tc.improved || b.Value != tc.best || b.Step != tc.step || b.Since != tc.since {
			t.Fatalf("validation %d (%v): improved %v, best %+v; want %v, {%v %d %d}", i, tc.v, ok, *b, tc.improved, tc.best, tc.step, tc.since)
		}
	}
	if b, ok := improve(nil, 0, math.NaN()); b != nil || ok {
		t.Errorf("a NaN first validation: %+v, %v", b, ok)
	}
	c := Config{Patience: 2}
	if c.stopped(&bestState{Since: 1}) || !c.stopped(&bestState{Since: 2}) || c.stopped(nil) || (Config{}).stopped(&bestState{Since: 9}) {
		t.Error("stopped: wrong")
	}
}

func TestBestConfigErrors(t *testing.T) {
	set := func(kv ...any) []Setting {
		var s []Setting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, Setting{Key: kv[i].(string), Value: kv[i+1], Source: "--" + kv[i].(string)})
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		settings []Setting
		want     string
	}{
		{"patience without eval", set("patience", 3, "eval_every", 0), "eval-every is 0"},
		{"keep-best without eval", set("keep_best", true, "eval_every", 0), "give --eval-every N"},
		{"metric alone", set("best_metric", "mrr:2p"), "give --keep-best or --patience N"},
		{"negative patience", set("patience", -1), "patience must not be negative"},
		{"unknown measure", set("keep_best", true, "best_metric", "ndcg:epfo"), `unknown measure "ndcg"`},
		{"metric not a string", set("keep_best", true, "best_metric", 3), "want a metric"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewConfig("", tc.settings)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	c, err := NewConfig("", set("patience", 2))
	if err != nil || c.BestMetric != DefaultBestMetric {
		t.Fatalf("--patience alone: %+v, %v; want best_metric %s", c, err, DefaultBestMetric)
	}
	if c, err := NewConfig("", set("keep_best", true, "best_metric", "HITS@10:AVG-neg")); err != nil || c.BestMetric != "hits@10:neg" {
		t.Fatalf("canonical metric: %q, %v", c.BestMetric, err)
	}
	// A run that kept no best cannot start counting patience when resumed.
	plain, _ := NewConfig("", nil)
	if _, err := ResumeConfig(plain, 3, set("patience", 2)); err == nil || !strings.Contains(err.Error(), "kept no best validation") {
		t.Fatalf("resume adding patience: %v", err)
	}
	// Nor change what best means.
	kept, _ := NewConfig("", set("keep_best", true))
	if _, err := ResumeConfig(kept, 3, set("best_metric", "mrr:avg")); err == nil || !strings.Contains(err.Error(), "conflicts with the checkpoint") {
		t.Fatalf("resume with another metric: %v", err)
	}
}

// bestConfig trains 40 steps with a validation every 2 (every 8 from step 26), keeping
// the best by the EPFO MRR and stopping after 2 validations without improvement.
func bestConfig() Config {
	c := tinyConfig("rocone")
	c.Steps, c.EvalEvery = 40, 2
	c.KeepBest, c.Patience = true, 2
	c.Normalize()
	return c
}

// resumeFrom continues the run of opts (from ResumeSource) with the checkpoint's
// configuration.
func resumeFrom(t *testing.T, opts Options) *Result {
	t.Helper()
	saved, done, err := ReadCheckpointConfig(ResumeSource(opts))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ResumeConfig(saved, done, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.Resume = true
	return run(t, cfg, opts)
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// sameRun checks that the run in opts ended as the straight one: the same final and best
// checkpoints (every tensor bit for bit, the state but its timings), the same train log
// and the same early stop; and that --partial is gone.
func sameRun(t *testing.T, straight, opts Options, want, got *Result) {
	t.Helper()
	sameCheckpoints(t, straight.Checkpoint, opts.Checkpoint)
	sameCheckpoints(t, straight.bestPath(), opts.bestPath())
	if la, lb := logCurves(t, straight.Log), logCurves(t, opts.Log); !sameRows(la, lb) {
		t.Fatalf("train logs differ:\n%v\n%v", la, lb)
	}
	ma, _, _ := artifact.ReadTrainLog(straight.Log)
	mb, _, _ := artifact.ReadTrainLog(opts.Log)
	if ma.Best != mb.Best || ma.EarlyStop != mb.EarlyStop {
		t.Fatalf("log metadata: best %s, early_stop %s; straight: %s, %s", mb.Best, mb.EarlyStop, ma.Best, ma.EarlyStop)
	}
	if (want.EarlyStop == nil) != (got.EarlyStop == nil) || (want.EarlyStop != nil && want.EarlyStop.Step != got.EarlyStop.Step) ||
		got.StepsDone != want.StepsDone || *got.Best != (Best{Metric: want.Best.Metric, Step: want.Best.Step, Value: want.Best.Value, Path: opts.bestPath()}) {
		t.Fatalf("resumed run ended %+v (early stop %+v, best %+v); straight %+v (%+v, %+v)", got, got.EarlyStop, got.Best, want, want.EarlyStop, want.Best)
	}
	if opts.Partial != "" && exists(t, opts.Partial) {
		t.Fatalf("--partial %s is left after the run finished", opts.Partial)
	}
}

// TestKeepBestResumeExact: a run that keeps its best validation's checkpoint and stops
// early, interrupted after every one of its steps and during every one of its
// validations, then resumed, ends bit for bit as the uninterrupted run: the same best
// checkpoint, the same final checkpoint at the same (early) step, the same log. The
// interrupted runs keep their checkpoint in --partial, and --checkpoint appears only
// when the run is finished.
func TestKeepBestResumeExact(t *testing.T) {
	train, valid := files(t)
	cfg := bestConfig()
	dir := t.TempDir()
	straight := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "a.arrow"), Log: filepath.Join(dir, "a-log.arrow"), Workers: 1}
	want := run(t, cfg, straight)
	if want.EarlyStop == nil || want.StepsDone >= cfg.Steps || want.Best == nil || want.Best.Step >= want.EarlyStop.Step {
		t.Fatalf("the straight run should stop early after its best: %+v, early stop %+v, best %+v", want, want.EarlyStop, want.Best)
	}
	if want.Best.Path != straight.bestPath() || !exists(t, straight.bestPath()) {
		t.Fatalf("no best checkpoint at %s (%+v)", straight.bestPath(), want.Best)
	}
	best, err := artifact.ReadCheckpointMeta(straight.bestPath())
	if err != nil || best.Step != int64(want.Best.Step+1) {
		t.Fatalf("the best checkpoint holds %d steps (%v), want %d", best.Step, err, want.Best.Step+1)
	}
	meta, _, err := artifact.ReadTrainLog(straight.Log)
	if err != nil {
		t.Fatal(err)
	}
	var early map[string]any
	if err := json.Unmarshal([]byte(meta.EarlyStop), &early); err != nil || early["step"] != float64(want.EarlyStop.Step) ||
		early["best_step"] != float64(want.Best.Step) || early["patience"] != float64(2) || early["metric"] != "mrr:epfo" {
		t.Fatalf("train log early_stop %q (%v)", meta.EarlyStop, err)
	}
	t.Logf("best after step %d (%.4f), stopped after step %d", want.Best.Step, want.Best.Value, want.EarlyStop.Step)

	t.Run("after every step", func(t *testing.T) {
		for k := 1; k <= want.StepsDone; k++ {
			d := t.TempDir()
			opts := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(d, "b.arrow"), Partial: filepath.Join(d, "b.partial.arrow"),
				Log: filepath.Join(d, "b-log.arrow"), Workers: 2, StopAfter: k}
			first := run(t, cfg, opts)
			if first.StepsDone != k {
				t.Fatalf("stopped after %d steps, want %d", first.StepsDone, k)
			}
			if k < want.StepsDone && (exists(t, opts.Checkpoint) || !exists(t, opts.Partial) || first.Written != opts.Partial) {
				t.Fatalf("after %d steps: --checkpoint there %v, --partial there %v (written %s); want only --partial",
					k, exists(t, opts.Checkpoint), exists(t, opts.Partial), first.Written)
			}
			opts.StopAfter = 0
			got := resumeFrom(t, opts)
			sameRun(t, straight, opts, want, got)
		}
	})
	t.Run("during every validation", func(t *testing.T) {
		for v := 2; v <= want.EarlyStop.Step; v += 2 {
			d := t.TempDir()
			opts := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(d, "b.arrow"), Partial: filepath.Join(d, "b.partial.arrow"),
				Log: filepath.Join(d, "b-log.arrow"), Workers: 1}
			ctx, cancel := context.WithCancel(context.Background())
			testHookBeforeValidation = func(s int) {
				if s == v {
					cancel()
				}
			}
			first, err := Run(ctx, cfg, opts)
			testHookBeforeValidation = nil
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if !first.Interrupted || first.StepsDone != v+1 || exists(t, opts.Checkpoint) {
				t.Fatalf("interrupted in the validation of step %d: %+v, --checkpoint there %v", v, first, exists(t, opts.Checkpoint))
			}
			ck, err := artifact.ReadCheckpointMeta(opts.Partial)
			if err != nil || !strings.Contains(ck.State, `"pending_valid":{"step":`) {
				t.Fatalf("the partial checkpoint does not hold the cut-short validation: %v %s", err, ck.State)
			}
			got := resumeFrom(t, opts)
			sameRun(t, straight, opts, want, got)
		}
	})
	t.Run("during the last validation", func(t *testing.T) {
		c := tinyConfig("rocone")
		c.KeepBest = true
		c.Normalize()
		d := t.TempDir()
		whole := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(d, "a.arrow"), Log: filepath.Join(d, "a-log.arrow")}
		w := run(t, c, whole)
		opts := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(d, "b.arrow"), Partial: filepath.Join(d, "b.partial.arrow"),
			Log: filepath.Join(d, "b-log.arrow")}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		testHookBeforeValidation = func(s int) {
			if s == c.Steps-1 {
				cancel()
			}
		}
		first, err := Run(ctx, c, opts)
		testHookBeforeValidation = nil
		if err != nil || !first.Interrupted || first.StepsDone != c.Steps || exists(t, opts.Checkpoint) {
			t.Fatalf("%v: %+v; want all %d steps in --partial, the last validation pending", err, first, c.Steps)
		}
		got := resumeFrom(t, opts)
		sameRun(t, whole, opts, w, got)
	})
}

// TestPatienceRaisedOnResume: a run stopped early is finished (a resume has nothing to
// do) until it is resumed with a larger patience, which continues it.
func TestPatienceRaisedOnResume(t *testing.T) {
	train, valid := files(t)
	cfg := bestConfig()
	d := t.TempDir()
	opts := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(d, "a.arrow"), Log: filepath.Join(d, "a-log.arrow")}
	first := run(t, cfg, opts)
	if first.EarlyStop == nil {
		t.Fatal("no early stop")
	}
	if again := resumeFrom(t, opts); again.StepsDone != first.StepsDone || again.EarlyStop == nil {
		t.Fatalf("resuming an early-stopped run: %+v", again)
	}
	saved, done, _ := ReadCheckpointConfig(opts.Checkpoint)
	more, err := ResumeConfig(saved, done, []Setting{{Key: "patience", Value: 0, Source: "--patience"}})
	if err != nil {
		t.Fatal(err)
	}
	opts.Resume = true
	if res := run(t, more, opts); res.StepsDone != cfg.Steps || res.EarlyStop != nil {
		t.Fatalf("with patience 0 the run should go on to step %d: %+v", cfg.Steps, res)
	}
}

// TestAutoResume: AutoResume continues only an unfinished run of the same configuration
// (checkpoint_every aside) and train file, from --partial; otherwise it starts afresh.
func TestAutoResume(t *testing.T) {
	train, valid := files(t)
	cfg := tinyConfig("rocone")
	cfg.CheckpointEvery = 3
	d := t.TempDir()
	straight := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(d, "a.arrow"), Log: filepath.Join(d, "a-log.arrow")}
	run(t, cfg, straight)
	opts := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(d, "b.arrow"), Partial: filepath.Join(d, "b.partial.arrow"),
		Log: filepath.Join(d, "b-log.arrow"), AutoResume: true, StopAfter: 7}
	if res := run(t, cfg, opts); res.Resumed || res.StepsDone != 7 || !exists(t, opts.Partial) || exists(t, opts.Checkpoint) {
		t.Fatalf("first run: %+v", res)
	}
	// checkpoint_every may differ: it changes nothing computed.
	c2 := cfg
	c2.CheckpointEvery = 5
	opts.StopAfter = 12
	if res := run(t, c2, opts); !res.Resumed || res.StepsDone != 12 {
		t.Fatalf("second run should resume: %+v", res)
	}
	opts.StopAfter = 0
	if res := run(t, cfg, opts); !res.Resumed || res.StepsDone != cfg.Steps || exists(t, opts.Partial) {
		t.Fatalf("third run should resume to the end: %+v", res)
	}
	sameCheckpoints(t, straight.Checkpoint, opts.Checkpoint)
	// Finished: the same command trains afresh (what make does when an input changed),
	// to the same model.
	if res := run(t, cfg, opts); res.Resumed || res.StepsDone != cfg.Steps {
		t.Fatalf("a run over a finished checkpoint should start afresh: %+v", res)
	}
	sameCheckpoints(t, straight.Checkpoint, opts.Checkpoint)

	// Another configuration's unfinished run is not continued, and not replaced without
	// Overwrite.
	opts.StopAfter = 4
	os.Remove(opts.Checkpoint)
	run(t, cfg, opts)
	other := cfg
	other.Dim = 12
	opts.StopAfter = 0
	if _, err := Run(context.Background(), other, opts); err == nil || !strings.Contains(err.Error(), "--partial") ||
		!strings.Contains(err.Error(), "dim 8 vs 12") {
		t.Fatalf("another configuration over a partial run: %v", err)
	}
	opts.Overwrite = true
	if res := run(t, other, opts); res.Resumed || res.StepsDone != other.Steps {
		t.Fatalf("another configuration with Overwrite: %+v", res)
	}

	// Other train queries: the partial run is not continued.
	opts.StopAfter = 4
	run(t, cfg, opts)
	otherTrain := traintest.Generate(t, t.TempDir(), "train.arrow", "train", nil, 3)
	opts.Train, opts.StopAfter = otherTrain, 0
	var progress strings.Builder
	opts.Progress = &progress
	if res := run(t, cfg, opts); res.Resumed {
		t.Fatalf("a partial run of other train queries was continued: %+v", res)
	}
	if !strings.Contains(progress.String(), "was trained on other train queries") {
		t.Errorf("progress does not say why it started afresh:\n%s", progress.String())
	}
}

// TestBestSetupErrors: what keep-best and early stopping need is checked before any
// work, and nothing is written.
func TestBestSetupErrors(t *testing.T) {
	train, valid := files(t)
	few := traintest.Generate(t, t.TempDir(), "valid.arrow", "valid", map[string]int{"1p": 5, "2p": 5, "2in": 5}, 4)
	kept := bestConfig()
	noNeg := bestConfig()
	noNeg.BestMetric = "mrr:neg"
	typ := bestConfig()
	typ.BestMetric = "hits@10:3p"
	for _, tc := range []struct {
		name string
		cfg  Config
		opts Options
		want string
	}{
		{"keep-best without valid", kept, Options{Train: train}, "--keep-best compares validations: give the held-out queries with --valid"},
		{"best without keep-best", tinyConfig("rocone"), Options{Train: train, Valid: valid, Best: "x.arrow"}, "give --keep-best with it"},
		{"resume and auto-resume", kept, Options{Train: train, Valid: valid, Resume: true, AutoResume: true}, "give one of them"},
		{"epfo average incomplete", kept, Options{Train: train, Valid: few}, "has no 3p, 2i, 3i, pi, ip, 2u, up queries"},
		{"negation average incomplete", noNeg, Options{Train: train, Valid: few}, "has no 3in, inp, pin, pni queries"},
		{"type missing", typ, Options{Train: train, Valid: few}, "has no 3p queries (it has 1p 2in 2p)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			tc.opts.Checkpoint = filepath.Join(d, "m.arrow")
			tc.opts.Log = filepath.Join(d, "m-log.arrow")
			if tc.opts.Best != "" {
				tc.opts.Best = filepath.Join(d, tc.opts.Best)
			}
			_, err := Run(context.Background(), tc.cfg, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if es, _ := os.ReadDir(d); len(es) != 0 {
				t.Errorf("wrote %v", es)
			}
		})
	}
	// The best checkpoint of another run is not replaced without Overwrite.
	d := t.TempDir()
	other := tinyConfig("rocone")
	other.Dim, other.Steps = 12, 2
	run(t, other, Options{Train: train, Checkpoint: filepath.Join(d, "m.best.arrow")})
	_, err := Run(context.Background(), kept, Options{Train: train, Valid: valid, Checkpoint: filepath.Join(d, "m.arrow")})
	if err == nil || !strings.Contains(err.Error(), "--best "+filepath.Join(d, "m.best.arrow")+" holds the checkpoint of another run") {
		t.Fatalf("another run's checkpoint at --best: %v", err)
	}
}

// TestBestKeptWhereSaid: the checkpoint records the best validation but not the file it
// was kept in, so a resumed run may meet a --best that does not hold it: a copy of the
// checkpoint resumed under another name (whose default --best is another file), or
// another --best. The run used to say the best was "kept in" that file all the same.
// Now it says at the start that the file does not hold it (even quiet, on Warnings),
// and the result and final line name a file only when it holds the best (written by the
// resumed run at a better validation); a --best that holds something else is refused and
// left as it was; a resume with the run's own --best finds its best there.
func TestBestKeptWhereSaid(t *testing.T) {
	train, valid := files(t)
	cfg := bestConfig()
	cfg.Patience = 0
	cfg.Normalize()
	dir := t.TempDir()
	first := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "m.arrow"), Log: "", StopAfter: 8}
	res := run(t, cfg, first)
	if res.Best == nil || res.Best.Step != 6 || res.Best.Path != first.bestPath() || !exists(t, first.bestPath()) {
		t.Fatalf("the first run kept no best at %s: %+v", first.bestPath(), res.Best)
	}
	original, err := os.ReadFile(first.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(name string) string { // a copy of the first run's checkpoint
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, original, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// The best file of the same run gone on to step 12 (a better best after step 10),
	// beside the checkpoint after 8: a crash after writing the best, before the next
	// checkpoint. The resumed run replays those steps and writes that best again.
	ahead := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(t.TempDir(), "m.arrow"), Log: "", StopAfter: 12}
	if res := run(t, cfg, ahead); res.Best == nil || res.Best.Step != 10 {
		t.Fatalf("the run to step 12 found no better best after step 10: %+v", res.Best)
	}
	aheadBest, err := os.ReadFile(ahead.bestPath())
	if err != nil {
		t.Fatal(err)
	}
	notCheckpoint := filepath.Join(dir, "notes.best.arrow")
	os.WriteFile(notCheckpoint, []byte("my notes\n"), 0o644)

	// The first run's best is after step 6; the validation after step 8 is below it, the
	// one after step 10 above: resumed up to 10 steps, a run finds no better one, up to 12
	// it writes its own.
	tests := []struct {
		name        string
		opts        func() Options
		steps       int // StopAfter
		quiet       bool
		note        bool   // the start says --best does not hold the best
		wantErr     string // "" for a run
		wantOwnBest bool   // the best is found at --best
		wantPath    bool   // the result names a best file
	}{
		{"a copy under another name", func() Options { return Options{Checkpoint: fresh("copy.arrow")} }, 10, false, true, "", false, false},
		{"a copy, quiet", func() Options { return Options{Checkpoint: fresh("copy.arrow")} }, 10, true, true, "", false, false},
		{"a copy that finds a better one", func() Options { return Options{Checkpoint: fresh("copy.arrow")} }, 12, false, true, "", false, true},
		{"another --best", func() Options {
			return Options{Checkpoint: fresh("m.arrow"), Best: filepath.Join(t.TempDir(), "elsewhere.arrow")}
		}, 10, false, true, "", false, false},
		{"--best holds no checkpoint", func() Options { return Options{Checkpoint: fresh("m.arrow"), Best: notCheckpoint} }, 10, false, false,
			"--best " + notCheckpoint + " exists and is not a checkpoint", false, false},
		{"the run's own --best", func() Options { return Options{Checkpoint: fresh("m.arrow"), Best: first.bestPath()} }, 10, false, false, "", true, true},
		{"a best ahead of the checkpoint (a crash)", func() Options {
			ck := fresh("m.arrow")
			if err := os.WriteFile(BestPath(ck), aheadBest, 0o644); err != nil {
				t.Fatal(err)
			}
			return Options{Checkpoint: ck}
		}, 12, false, false, "", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts()
			opts.Train, opts.Valid, opts.Log, opts.StopAfter = train, valid, "", tc.steps
			var progress, warnings bytes.Buffer
			opts.Progress, opts.Warnings = &progress, &warnings
			if tc.quiet {
				opts.Progress = nil
			}
			said := func() string { return progress.String() + warnings.String() }
			notes, _ := os.ReadFile(notCheckpoint)
			saved, done, err := ReadCheckpointConfig(opts.Checkpoint)
			if err != nil {
				t.Fatal(err)
			}
			rcfg, err := ResumeConfig(saved, done, nil)
			if err != nil {
				t.Fatal(err)
			}
			opts.Resume = true
			got, err := Run(context.Background(), rcfg, opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if after, _ := os.ReadFile(notCheckpoint); !bytes.Equal(after, notes) || said() != "" {
					t.Fatalf("the refused run changed %s or said %q", notCheckpoint, said())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			note := "note: --best " + opts.bestPath() + " does not hold this run's best validation so far"
			if strings.Contains(said(), note) != tc.note || (tc.quiet && !strings.Contains(warnings.String(), note)) {
				t.Errorf("said (want the note %v):\n%s", tc.note, said())
			}
			// Whatever the run said, a best path it names holds the best.
			b := got.Best
			if (b.Path != "") != tc.wantPath {
				t.Errorf("best %+v: want a path %v", *b, tc.wantPath)
			}
			switch {
			case b.Path != "":
				meta, err := artifact.ReadCheckpointMeta(b.Path)
				if err != nil || b.Path != opts.bestPath() || meta.Step != int64(b.Step+1) {
					t.Errorf("best %+v: %s holds %d steps (%v)", b, b.Path, meta.Step, err)
				}
			case tc.wantOwnBest:
				t.Errorf("the run's own best at %s is not found: %+v", opts.bestPath(), b)
			case exists(t, opts.bestPath()):
				t.Errorf("%s was written, but the result names no best file: %+v", opts.bestPath(), b)
			case !tc.quiet && !strings.Contains(progress.String(), "; not kept in "+opts.bestPath()+", which did not hold it when the run was resumed (no such file)"):
				t.Errorf("the final line does not say the best is not kept:\n%s", progress.String())
			}
			if !tc.quiet && b.Path != "" && !strings.Contains(progress.String(), "kept in "+b.Path) {
				t.Errorf("the final line does not name %s:\n%s", b.Path, progress.String())
			}
		})
	}
}
