package train

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/traintest"
	"github.com/rocone/rocone/pkg/artifact"
)

// TestValidateRefuses: every configuration value outside its meaning is an error naming
// the key.
func TestValidateRefuses(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string // "" for valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"lambda 0", func(c *Config) { c.Lambda = 0 }, ""},
		{"negative lambda", func(c *Config) { c.Lambda = -0.1 }, "lambda"},
		{"NaN lambda", func(c *Config) { c.Lambda = nanValue() }, "lambda"},
		{"negative gamma", func(c *Config) { c.Gamma = -1 }, "gamma"},
		{"zero lr", func(c *Config) { c.LR = 0 }, "lr"},
		{"negative lr", func(c *Config) { c.LR = -1e-3 }, "lr"},
		{"dropout 1", func(c *Config) { c.Dropout = 1 }, "dropout"},
		{"negative dropout", func(c *Config) { c.Dropout = -0.1 }, "dropout"},
		{"zero dim", func(c *Config) { c.Dim = 0 }, "dim"},
		{"zero batch", func(c *Config) { c.Batch = 0 }, "batch"},
		{"zero negatives", func(c *Config) { c.Negatives = 0 }, "negatives"},
		{"zero steps", func(c *Config) { c.Steps = 0 }, "steps"},
		{"negative eval-every", func(c *Config) { c.EvalEvery = -1 }, "eval-every"},
		{"negative checkpoint-every", func(c *Config) { c.CheckpointEvery = -1 }, "checkpoint-every"},
		{"cone-hidden on rocone", func(c *Config) { c.ConeHidden = 32 }, "applies to --model cone only"},
		{"cone-hidden on cone", func(c *Config) { c.Model, c.ConeHidden = "cone", 32 }, ""},
		{"unknown model", func(c *Config) { c.Model = "transe" }, "transe"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func nanValue() float64 { z := 0.0; return z / z }

// TestRunGuards: a fresh run refuses to replace another run's checkpoint or log unless
// told to; a resumed run refuses another run's log; a train file is no valid file. Every
// refusal leaves the files as they were.
func TestRunGuards(t *testing.T) {
	tr, va := files(t)
	dir := t.TempDir()
	ck := filepath.Join(dir, "m.arrow")
	log := filepath.Join(dir, "m-log.arrow")
	cfg := tinyConfig("rocone")
	cfg.Steps, cfg.EvalEvery = 2, 0
	run(t, cfg, Options{Train: tr, Checkpoint: ck, Log: log})
	other := cfg
	other.Dim = 16
	otherCk, otherLog := filepath.Join(dir, "o.arrow"), filepath.Join(dir, "o-log.arrow")
	run(t, other, Options{Train: tr, Checkpoint: otherCk, Log: otherLog})
	saved, _, err := ReadCheckpointConfig(ck)
	if err != nil {
		t.Fatal(err)
	}
	// A valid file of no queries (sample --count 1p=0), with a best and early stopping
	// that it would decide on nothing.
	emptyValid := traintest.Generate(t, t.TempDir(), "empty-valid.arrow", "valid", map[string]int{"1p": 0}, 3)
	emptyValidCfg := cfg
	emptyValidCfg.EvalEvery, emptyValidCfg.KeepBest, emptyValidCfg.BestMetric, emptyValidCfg.Patience = 1, true, "mrr:avg", 1
	notArtifact := filepath.Join(dir, "notes.txt")
	os.WriteFile(notArtifact, []byte("my notes\n"), 0o644)

	snapshot := func() map[string][]byte {
		m := map[string][]byte{}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			m[e.Name()] = b
		}
		return m
	}
	tests := []struct {
		name string
		cfg  Config
		opts Options
		want string // "" for success
	}{
		{"other configuration's checkpoint", other, Options{Train: tr, Checkpoint: ck, Log: ""}, "holds the checkpoint of another run (dim 8 vs 16); give --overwrite"},
		{"other configuration's log", other, Options{Train: tr, Checkpoint: filepath.Join(dir, "new.arrow"), Log: log}, "holds the train log of another run (dim 8 vs 16)"},
		{"not a checkpoint", cfg, Options{Train: tr, Checkpoint: notArtifact, Log: ""}, "exists and is not a checkpoint"},
		{"resume with another run's log", saved, Options{Train: tr, Checkpoint: ck, Log: otherLog, Resume: true}, "is the log of another run (dim 16 vs 8)"},
		{"absurd dim", withDim(cfg, 100_000_000), Options{Train: tr, Checkpoint: filepath.Join(dir, "new.arrow"), Log: ""}, "dim 100000000, batch 16 and negatives 4 on 82 entities need at least"},
		{"absurd negatives", withNegatives(cfg, 1_000_000_000_000), Options{Train: tr, Checkpoint: filepath.Join(dir, "new.arrow"), Log: ""}, "negatives 1000000000000"},
		// The MLP's hidden width is the cost here, not dim, batch or negatives: it is named.
		{"absurd cone-hidden", withConeHidden(cfg, 10_000_000), Options{Train: tr, Checkpoint: filepath.Join(dir, "new.arrow"), Log: ""},
			"dim 8, batch 16, negatives 4 and cone-hidden 10000000 on 82 entities need at least 1490121.0 GiB (the projection MLP of hidden width 10000000 alone 1490121.0 GiB)"},
		{"train file as valid", cfg, Options{Train: tr, Valid: tr, Checkpoint: filepath.Join(dir, "new.arrow"), Log: ""}, "a train queries file; --valid needs held-out queries"},
		{"valid file without queries", emptyValidCfg, Options{Train: tr, Valid: emptyValid, Checkpoint: filepath.Join(dir, "new.arrow"), Log: ""},
			emptyValid + ": no queries: a validation would measure nothing; give held-out queries, or leave --valid out"},
		{"train and valid on stdin", cfg, Options{Train: "-", Valid: "-", Checkpoint: filepath.Join(dir, "new.arrow"), Log: ""}, "--train and --valid cannot both read stdin: give one of them a FILE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot()
			_, err := Run(context.Background(), tc.cfg, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			after := snapshot()
			if len(after) != len(before) {
				t.Errorf("files %d before, %d after", len(before), len(after))
			}
			for name, b := range before {
				if !bytes.Equal(after[name], b) {
					t.Errorf("%s changed", name)
				}
			}
		})
	}

	// Allowed: the same configuration on the same train queries again (a run started over),
	// and another configuration with Overwrite.
	var said bytes.Buffer
	run(t, cfg, Options{Train: tr, Checkpoint: ck, Log: log, Progress: &said})
	if !strings.Contains(said.String(), "replacing --checkpoint "+ck+": the checkpoint of an earlier run of the same configuration") {
		t.Errorf("replacing a run of the same configuration is not said:\n%s", said.String())
	}
	run(t, other, Options{Train: tr, Valid: va, Checkpoint: ck, Log: log, Overwrite: true})
	meta, err := artifact.ReadCheckpointMeta(ck)
	if err != nil || meta.Dim != 16 {
		t.Fatalf("overwrite: dim %d, %v", meta.Dim, err)
	}
	qmeta, _, err := artifact.ReadQueries(tr)
	if err != nil {
		t.Fatal(err)
	}
	if qmeta.EntitiesDigest == "" || meta.EntitiesDigest != qmeta.EntitiesDigest {
		t.Errorf("checkpoint entities_digest %q, train file's %q", meta.EntitiesDigest, qmeta.EntitiesDigest)
	}
}

func withDim(c Config, d int) Config       { c.Dim = d; return c }
func withNegatives(c Config, n int) Config { c.Negatives = n; return c }
func withConeHidden(c Config, h int) Config {
	c.Model, c.ConeHidden = "cone", h
	return c
}

// TestResumeOtherValid: a run continues only on the valid queries it validated on. A
// resume with other ones is refused, naming both, and changes nothing; --auto-resume
// starts afresh, saying why; without --valid it continues, and the next resume still
// knows the run's valid queries.
func TestResumeOtherValid(t *testing.T) {
	tr, va := files(t)
	dir := t.TempDir()
	other := traintest.Generate(t, dir, "other-valid.arrow", "valid", nil, 3)
	cfg := tinyConfig("rocone")
	opts := Options{Train: tr, Valid: va, Checkpoint: filepath.Join(dir, "m.arrow"), Log: filepath.Join(dir, "m-log.arrow"), StopAfter: 5}
	run(t, cfg, opts)
	saved, done, err := ReadCheckpointConfig(opts.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	resumeCfg, err := ResumeConfig(saved, done, nil)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(opts.Checkpoint)
	onOther := opts
	onOther.Valid, onOther.Resume, onOther.StopAfter = other, true, 8
	_, err = Run(context.Background(), resumeCfg, onOther)
	if err == nil || !strings.Contains(err.Error(), "the run validated on other queries (digest ") || !strings.Contains(err.Error(), "--valid "+other) {
		t.Fatalf("resume on other valid queries: %v", err)
	}
	if after, _ := os.ReadFile(opts.Checkpoint); !bytes.Equal(after, before) {
		t.Fatal("the refused resume changed the checkpoint")
	}

	var said bytes.Buffer
	auto := onOther
	auto.Resume, auto.AutoResume, auto.Overwrite, auto.Progress = false, true, true, &said
	if res := run(t, cfg, auto); res.Resumed || !strings.Contains(said.String(), "was validated on other valid queries") {
		t.Errorf("--auto-resume on other valid queries: resumed %v, said:\n%s", res.Resumed, said.String())
	}

	// Without --valid the run goes on; given again, other valid queries are still refused.
	run(t, cfg, opts) // the run on va again, stopped after 5 steps
	noValid := opts
	noValid.Valid, noValid.Resume, noValid.StopAfter = "", true, 8
	run(t, resumeCfg, noValid)
	onOther.StopAfter = 12
	if _, err := Run(context.Background(), resumeCfg, onOther); err == nil || !strings.Contains(err.Error(), "the run validated on other queries") {
		t.Errorf("after a resume without --valid, other valid queries: %v", err)
	}
}

// TestAutoResumeSaysAfterChecks: --auto-resume says what it chose only once the run's
// checks have passed. Over a file that is not a checkpoint it used to say "starting a new
// run" and then refuse to replace that file; now the refusal is all it says, and the file
// is left as it was. With --overwrite the fresh start is said, and happens.
func TestAutoResumeSaysAfterChecks(t *testing.T) {
	tr, va := files(t)
	dir := t.TempDir()
	ck := filepath.Join(dir, "m.arrow")
	cfg := tinyConfig("rocone")
	cfg.Steps, cfg.EvalEvery = 2, 0
	run(t, cfg, Options{Train: tr, Checkpoint: ck, Log: ""})
	whole, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.arrow")
	if err := os.WriteFile(cut, whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	var said bytes.Buffer
	opts := Options{Train: tr, Valid: va, Checkpoint: cut, Log: "", AutoResume: true, Progress: &said}
	_, err = Run(context.Background(), cfg, opts)
	if err == nil || !strings.Contains(err.Error(), "--checkpoint "+cut+" exists and is not a checkpoint this run may replace") {
		t.Fatalf("error %v, want the refusal to replace %s", err, cut)
	}
	if said.Len() > 0 {
		t.Errorf("a refused run said:\n%s", said.String())
	}
	if b, _ := os.ReadFile(cut); !bytes.Equal(b, whole[:len(whole)/2]) {
		t.Error("the refused run changed the file")
	}
	opts.Overwrite = true
	if res := run(t, cfg, opts); res.Resumed || !strings.HasPrefix(said.String(), "starting a new run: "+cut+" is not a checkpoint to continue") {
		t.Errorf("with --overwrite: resumed %v, said:\n%s", res.Resumed, said.String())
	}
}
