package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/pipeline"
	"github.com/rocone/rocone/pkg/sample"
	"github.com/rocone/rocone/pkg/train"
	"github.com/rocone/rocone/pkg/train/traintest"
)

// buildStage builds this command into a temporary folder.
func buildStage(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stage")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runStage runs the binary and returns its exit status and stderr.
func runStage(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stderr.String()
	}
	t.Fatalf("%s: %v", bin, err)
	return 0, ""
}

// snapshotDir returns every file of dir and its bytes.
func snapshotDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
			m[e.Name()] = b
		}
	}
	return m
}

func sameDir(t *testing.T, what string, before, after map[string][]byte) {
	t.Helper()
	if len(before) != len(after) {
		t.Errorf("%s: %d files before, %d after", what, len(before), len(after))
	}
	for name, b := range before {
		if !bytes.Equal(after[name], b) {
			t.Errorf("%s: %s changed", what, name)
		}
	}
}

// fixtures makes, in dir, a small test queries file of the tiny KG and trained
// checkpoints (2 steps) named by variant and seed, e.g. "rocone-1".
func fixtures(t *testing.T, dir string, models ...string) (string, map[string]string) {
	t.Helper()
	trainQ := traintest.Generate(t, dir, "train.arrow", "train", nil, 1)
	queries := filepath.Join(dir, "test-queries.arrow")
	if err := sample.GenerateToFile(context.Background(), sample.Source{Dir: traintest.Dir(), Format: kg.FormatAuto}, "test",
		sample.Options{Types: []string{"1p", "2p", "2in"}, Counts: map[string]int{"1p": 20, "2p": 8, "2in": 6}, Seed: 3, Workers: 1}, queries, nil); err != nil {
		t.Fatal(err)
	}
	cks := map[string]string{}
	for _, m := range models {
		variant, seed, _ := strings.Cut(m, "-")
		cfg := train.Default()
		cfg.Model, cfg.Dim, cfg.Batch, cfg.Negatives, cfg.Gamma, cfg.LR = variant, 8, 16, 4, 12, 0.01
		cfg.Steps, cfg.EvalEvery, cfg.CheckpointEvery = 2, 0, 0
		if variant == "cone" {
			cfg.ConeHidden = 12
		}
		n, err := strconv.ParseUint(seed, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Seed = n
		path := filepath.Join(dir, m+".arrow")
		if _, err := train.Run(context.Background(), cfg, train.Options{Train: trainQ, Checkpoint: path}); err != nil {
			t.Fatal(err)
		}
		cks[m] = path
	}
	return queries, cks
}

// TestFlagValuesEndToEnd: the binary averages only seeds of one model (distinct
// checkpoints of one model and configuration) and refuses anything else naming what
// differs; --models puts models side by side; bad --resamples and patterns --top are
// errors. Every refusal exits 1 with one "metrics: " prefix and changes no file.
func TestFlagValuesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := buildStage(t)
	dir := t.TempDir()
	queries, cks := fixtures(t, dir, "rocone-1", "rocone-2", "cone-1")
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
		{"models with -o", []string{"--models", "-o", out, r1, c1}, []string{"--models prints the side-by-side table only"}},
		{"patterns --top -3", []string{"patterns", "--checkpoint", cks["rocone-1"], "--top", "-3"}, []string{"--top -3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshotDir(t, dir)
			code, stderr := runStage(t, bin, tc.args...)
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
			sameDir(t, "files", before, snapshotDir(t, dir))
		})
	}
	// Seeds of one model, and --models with one row per model.
	for _, args := range [][]string{{"--resamples", "20", r1, r2}, {"--models", "--resamples", "0", r1, c1, r2}} {
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
