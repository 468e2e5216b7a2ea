package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/pipeline"
)

// TestFlagValuesEndToEnd: the binary averages only seeds of one model (distinct
// checkpoints of one model and configuration) and refuses anything else naming what
// differs; --models puts models side by side; bad --resamples and patterns --top are
// errors. Every refusal exits 1 with one "metrics: " prefix and changes no file.
func TestFlagValuesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := stagetest.Build(t)
	dir := t.TempDir()
	queries, cks := stagetest.Fixtures(t, dir, "rocone-1", "rocone-2", "cone-1")
	ranks := map[string]string{}
	for name, ck := range cks {
		ranks[name] = filepath.Join(dir, "ranks-"+name+".arrow")
		if err := pipeline.Rank(pipeline.RankConfig{Checkpoint: ck, Queries: queries, Output: ranks[name], Kernels: compute.Reference[float32]{}}); err != nil {
			t.Fatal(err)
		}
	}
	cones := filepath.Join(dir, "cones.arrow")
	if err := pipeline.Embed(pipeline.EmbedConfig{Checkpoint: cks["rocone-1"], Queries: queries, Output: cones, Kernels: compute.Reference[float32]{}}); err != nil {
		t.Fatal(err)
	}
	viaCones := filepath.Join(dir, "ranks-via-cones.arrow")
	if err := pipeline.Rank(pipeline.RankConfig{Checkpoint: cks["rocone-1"], Queries: queries, Cones: cones, Output: viaCones, Kernels: compute.Reference[float32]{}}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "metrics.arrow")
	os.WriteFile(out, []byte("an older file the failed run must leave alone"), 0o644)
	r1, r2, c1 := ranks["rocone-1"], ranks["rocone-2"], ranks["cone-1"]
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no ranks", []string{"-o", out}, []string{"metrics: no ranks files given"}},
		{"one file twice", []string{"-o", out, r1, r1}, []string{"are the same file"}},
		{"one file as ./name", []string{"-o", out, r1, filepath.Dir(r1) + "/./" + filepath.Base(r1)}, []string{"are the same file"}},
		{"with and without --cones", []string{"-o", out, r1, viaCones}, []string{"rank the same checkpoint"}},
		{"cone and rocone", []string{"-o", out, r1, c1}, []string{"ranks a cone model", "--models"}},
		{"negative resamples", []string{"-o", out, "--resamples", "-5", r1}, []string{"--resamples -5"}},
		{"resamples past what memory allows", []string{"-o", out, "--resamples", "1000000000", r1}, []string{"--resamples 1000000000: at most 100000"}},
		{"one resample", []string{"-o", out, "--resamples", "1", r1}, []string{"--resamples 1: too few for a 95% percentile interval", "at least 40, or 0"}},
		{"39 resamples", []string{"-o", out, "--resamples", "39", r1}, []string{"--resamples 39: too few"}},
		{"resamples 1e18", []string{"-o", out, "--resamples", "1e18", r1}, []string{`invalid value "1e18" for flag -resamples`}},
		{"--log without --curves", []string{"-o", out, "--log", r1, r1}, []string{"metrics: --log needs --curves FILE (or --plot, to put the curves beside it)"}},
		{"--curves without --log", []string{"-o", out, "--curves", filepath.Join(dir, "curves.svg"), r1}, []string{"metrics: a training log (--log) and a curve plot (--curves) go together"}},
		{"models with -o", []string{"--models", "-o", out, r1, c1}, []string{"--models prints the side-by-side table only"}},
		{"patterns --top -3", []string{"patterns", "--checkpoint", cks["rocone-1"], "--top", "-3"}, []string{"--top -3"}},
		// An empty value would pass for leaving the flag out, or fail as an unnamed path.
		{"empty -o", []string{"-o", "", r1}, []string{`-o "": an empty value; give a FILE, or leave -o out`}},
		{"empty --plot", []string{"--plot", "", r1}, []string{`--plot "": an empty value`}},
		{"empty --readme", []string{"results", "--readme", "", dir}, []string{`--readme "": an empty value`}},
		{"empty --csv", []string{"curves", "--csv", "", r1}, []string{`--csv "": an empty value`}},
		{"empty --checkpoint", []string{"patterns", "--checkpoint", ""}, []string{`--checkpoint "": an empty value; give a FILE`}},
		{"a | in --label", []string{"--label", "a|b", r1}, []string{`--label "a|b": want a name for our row`}},
		{"a newline in --label", []string{"--label", "a\nb", r1}, []string{`--label "a\nb"`}},
		{"a blank --label", []string{"--label", "  ", r1}, []string{`--label "  "`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := stagetest.SnapshotDir(t, dir)
			code, stderr := stagetest.Run(t, bin, tc.args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr %q", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			if !strings.HasPrefix(stderr, "metrics: ") || strings.Contains(stderr, "metrics: metrics:") {
				t.Errorf("stderr %q: want one \"metrics: \" prefix", stderr)
			}
			stagetest.SameDir(t, "files", before, stagetest.SnapshotDir(t, dir))
		})
	}
	// Seeds of one model, and --models with one row per model.
	for _, args := range [][]string{{"--resamples", "40", r1, r2}, {"--models", "--resamples", "0", r1, c1, r2}} {
		cmd := exec.Command(bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v: %s", args, err, stderr.String())
		}
		want := []string{"rocone, 2 seed(s)", "| rocone (2 seeds) |"}
		if args[0] == "--models" {
			want = []string{"2 model(s)", "| rocone (2 seeds) |", "| cone  "}
		}
		for _, w := range want {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("%v: table lacks %q:\n%s", args, w, stdout.String())
			}
		}
	}
}
