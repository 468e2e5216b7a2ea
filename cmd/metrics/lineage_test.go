package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/pipeline"
	"github.com/rocone/rocone/pkg/train"
)

// TestLineage: metrics averages as seeds only runs of models trained on one train file
// of one KG, and plots beside the ranks only the train log of a run ranked: a --log of
// another seed, another train file, another KG or another --steps (another schedule) is
// refused, naming the log and the ranks file, and the log of the ranked run resumed with
// more steps accepted. Each refusal exits 1 with one message, writes nothing, changes no file.
func TestLineage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := stagetest.Build(t)
	dir := t.TempDir()
	l := stagetest.MakeLineage(t, dir)
	ranksOf := func(model string) string {
		out := strings.TrimSuffix(model, ".arrow") + "-ranks.arrow"
		if err := pipeline.Rank(pipeline.RankConfig{Checkpoint: model, Queries: l.Test, Output: out, Kernels: compute.Reference[float32]{}}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	r1, r2, rOther := ranksOf(l.Model1), ranksOf(l.Model2), ranksOf(l.ModelOtherTrain)
	// Model1's configuration and seed for 8 and for 20 steps: two runs, though their
	// configurations differ only in what a resume may change, since the learning rate
	// drops after steps 4 and 6 in one and 10 and 15 in the other.
	cfg, _, err := train.ReadCheckpointConfig(l.Model1)
	if err != nil {
		t.Fatal(err)
	}
	// The same run as Model1's with another margin, and as a cone model: another
	// configuration, another model.
	short, longer := filepath.Join(dir, "m1-8-steps.arrow"), filepath.Join(dir, "m1-20-steps.arrow")
	otherGamma, cone := filepath.Join(dir, "m1-gamma.arrow"), filepath.Join(dir, "m1-cone.arrow")
	for _, c := range []struct {
		path string
		edit func(*train.Config)
	}{
		{short, func(c *train.Config) { c.Steps = 8 }},
		{longer, func(c *train.Config) { c.Steps = 20 }},
		{otherGamma, func(c *train.Config) { c.Steps, c.Gamma = 8, c.Gamma+1 }},
		{cone, func(c *train.Config) { c.Steps, c.Model, c.ConeHidden = 8, "cone", 16 }},
	} {
		edited := cfg
		c.edit(&edited)
		if _, err := train.Run(context.Background(), edited, train.Options{Train: l.Train, Checkpoint: c.path, Log: l.Log(c.path)}); err != nil {
			t.Fatal(err)
		}
	}
	rShort := ranksOf(short)
	out, curves := filepath.Join(dir, "metrics.arrow"), filepath.Join(dir, "curves.svg")
	withLog := func(log string, ranks ...string) []string {
		return append([]string{"--resamples", "0", "-o", out, "--log", log, "--curves", curves}, ranks...)
	}
	for _, tc := range []struct {
		name string
		args []string
		msg  []string // in the message, in order
	}{
		{"seeds of two train files", []string{"--resamples", "0", "-o", out, r1, rOther},
			[]string{"metrics: " + rOther + " ranks a model trained on another train file (fingerprint ", ") than " + r1 + " (fingerprint ", "seeds of one model are trained on one train file"}},
		{"the log of another seed", withLog(l.Log(l.Model2), r1),
			[]string{"metrics: --log " + l.Log(l.Model2) + " is not the log of a run ranked: it is the log of seed 2, " + r1 + " ranks a checkpoint of seed 1"}},
		{"the log of another train file", withLog(l.Log(l.ModelOtherTrain), r1),
			[]string{"metrics: --log " + l.Log(l.ModelOtherTrain) + " is not the log of a run ranked: it is the log of a run on KG ", " and train file ", r1 + " ranks a model of KG "}},
		{"the log of another KG", withLog(l.Log(l.ModelOnOther), r1, r2),
			[]string{"metrics: --log " + l.Log(l.ModelOnOther) + " is not the log of a run ranked: it is the log of a run on KG ", r2 + " ranks a model of KG "}},
		{"the log of a run of another --steps", withLog(l.Log(longer), rShort),
			[]string{"metrics: --log " + l.Log(longer) + " is not the log of a run ranked: it is the log of another run than the one " + rShort + " ranks: its first 8 steps are not the checkpoint's"}},
		{"the log of another configuration", withLog(l.Log(otherGamma), rShort),
			[]string{fmt.Sprintf("metrics: --log %s is not the log of a run ranked: it is the log of another configuration than %s's (gamma %v vs %v)", l.Log(otherGamma), rShort, cfg.Gamma+1, cfg.Gamma)}},
		{"the log of another model", withLog(l.Log(cone), rShort),
			[]string{"metrics: --log " + l.Log(cone) + " is not the log of a run ranked: it is the log of a cone model on tiny, " + rShort + " ranks a rocone model on tiny"}},
		{"--models with --log", append([]string{"--models"}, withLog(l.Log(l.Model1), r1)[4:]...),
			[]string{"metrics: --models prints the side-by-side table only; -o, --plot, --label and --log describe one model"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := stagetest.SnapshotDir(t, dir)
			code, stderr := stagetest.Run(t, bin, tc.args...)
			at := 0
			for _, m := range tc.msg {
				i := strings.Index(stderr[at:], m)
				if i < 0 {
					t.Errorf("exit %d, stderr %q: no %q (in order)", code, stderr, m)
					break
				}
				at += i + len(m)
			}
			if code != 1 || strings.Count(stderr, "metrics: ") != 1 {
				t.Errorf("exit %d, stderr %q; want 1 and one message", code, stderr)
			}
			stagetest.SameDir(t, tc.name, before, stagetest.SnapshotDir(t, dir))
		})
	}
	// The 8-step run resumed for 20 steps: its log goes on past the checkpoint ranked,
	// one run.
	resumed := filepath.Join(t.TempDir(), "m1.arrow")
	for _, c := range [][2]string{{short, resumed}, {l.Log(short), l.Log(resumed)}} {
		b, err := os.ReadFile(c[0])
		if err != nil || os.WriteFile(c[1], b, 0o644) != nil {
			t.Fatal("copying the 8-step run")
		}
	}
	cfg.Steps = 20
	if _, err := train.Run(context.Background(), cfg, train.Options{Train: l.Train, Checkpoint: resumed, Log: l.Log(resumed), Resume: true}); err != nil {
		t.Fatal(err)
	}
	if code, stderr := stagetest.Run(t, bin, withLog(l.Log(resumed), rShort)...); code != 0 {
		t.Fatalf("the log of the ranked run, resumed with --steps 20: exit %d: %s", code, stderr)
	}
	// The 8-step run resumed for 20 steps into a new log: the log of the run ranked, but
	// without its first 8 steps. It is said to be incomplete, not another run's.
	holed := filepath.Join(t.TempDir(), "m1.arrow")
	if b, err := os.ReadFile(short); err != nil || os.WriteFile(holed, b, 0o644) != nil {
		t.Fatal("copying the 8-step run")
	}
	if _, err := train.Run(context.Background(), cfg, train.Options{Train: l.Train, Checkpoint: holed, Log: l.Log(holed), Resume: true}); err != nil {
		t.Fatal(err)
	}
	rHoled := ranksOf(holed)
	before := stagetest.SnapshotDir(t, dir)
	code, stderr := stagetest.Run(t, bin, withLog(l.Log(holed), rHoled)...)
	if want := "metrics: --log " + l.Log(holed) + " is incomplete: it is of the run " + rHoled +
		" ranks (configuration, seed, KG and train file), but lacks its train rows of steps 0 to 7"; code != 1 || !strings.HasPrefix(stderr, want) {
		t.Errorf("a log without the first steps of the run ranked: exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	stagetest.SameDir(t, "an incomplete log", before, stagetest.SnapshotDir(t, dir))
	// Seeds of one train file with the log of one of them: accepted.
	if code, stderr := stagetest.Run(t, bin, withLog(l.Log(l.Model2), r1, r2)...); code != 0 {
		t.Fatalf("two seeds and the log of one: exit %d: %s", code, stderr)
	}
	// Side by side, models of two train files are two rows, told apart by the train file.
	table, err := exec.Command(bin, "--resamples", "0", "--models", r1, rOther).Output()
	if err != nil {
		t.Fatalf("--models: %v", err)
	}
	if !strings.Contains(string(table), "2 model(s)") || strings.Count(string(table), "| rocone (train file ") != 8 { // MRR and 3 Hits rows each
		t.Errorf("--models of two train files:\n%s", table)
	}
}
