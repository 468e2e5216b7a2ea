package main

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/kg"
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

// withNaN writes a copy of the checkpoint src with one entity parameter set to NaN.
func withNaN(t *testing.T, src, dst string) {
	t.Helper()
	ck, err := artifact.ReadCheckpoint(src)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ck.Tensors {
		if ck.Tensors[i].Name == "entity" && ck.Tensors[i].Role == artifact.RoleParam {
			ck.Tensors[i].Values[1] = float32(math.NaN())
		}
	}
	if err := artifact.WriteCheckpoint(dst, ck); err != nil {
		t.Fatal(err)
	}
}

// TestFlagValuesEndToEnd: embed refuses the checkpoint rank refuses, with the same
// message (one check, pipeline.checkFinite), exit 1 and no file changed.
func TestFlagValuesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := buildStage(t)
	dir := t.TempDir()
	queries, cks := fixtures(t, dir, "rocone-1")
	nan := filepath.Join(dir, "nan.arrow")
	withNaN(t, cks["rocone-1"], nan)
	out := filepath.Join(dir, "cones.arrow")
	before := snapshotDir(t, dir)
	code, stderr := runStage(t, bin, "--checkpoint", nan, "--queries", queries, "-q", "-o", out)
	if code != 1 || !strings.Contains(stderr, "nan.arrow: parameter entity[0, 1] is NaN") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !strings.HasPrefix(stderr, "embed: ") || strings.Contains(stderr, "embed: embed:") {
		t.Errorf("stderr %q: want one \"embed: \" prefix", stderr)
	}
	sameDir(t, "files", before, snapshotDir(t, dir))
	if code, stderr := runStage(t, bin, "--checkpoint", cks["rocone-1"], "--queries", queries, "-q", "-o", out); code != 0 {
		t.Fatalf("a finite checkpoint: exit %d: %s", code, stderr)
	}
}
