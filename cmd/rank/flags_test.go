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

// TestFlagValuesEndToEnd runs the binary on option values that used to be ignored, panic
// or be silently wrong: each exits 1 with one "rank: " prefix and a message naming the
// flag, and no file changes; a huge --batch is capped at the number of queries.
func TestFlagValuesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := buildStage(t)
	dir := t.TempDir()
	queries, cks := fixtures(t, dir, "rocone-1")
	ck := cks["rocone-1"]
	nan := filepath.Join(dir, "nan.arrow")
	withNaN(t, ck, nan)
	// Another KG of the same counts: tiny with one entity renamed.
	other := filepath.Join(t.TempDir(), "tiny")
	os.MkdirAll(other, 0o755)
	for _, f := range []string{"train.tsv", "valid.tsv", "test.tsv", "relations.tsv", "entities.tsv"} {
		b, err := os.ReadFile(filepath.Join(traintest.Dir(), f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "entities.tsv" {
			b = bytes.Replace(b, []byte("\tent5\n"), []byte("\tsomeone-else\n"), 1)
		}
		os.WriteFile(filepath.Join(other, f), b, 0o644)
	}
	out := filepath.Join(dir, "ranks.arrow")
	os.WriteFile(out, []byte("an older file the failed run must leave alone"), 0o644)
	common := []string{"--checkpoint", ck, "--queries", queries, "-q", "-o", out}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"negative top", []string{"--top", "-1"}, []string{"--top -1"}},
		{"data without top", []string{"--data", traintest.Dir()}, []string{"it needs --top K"}},
		{"batch 0", []string{"--batch", "0"}, []string{"--batch 0: want a positive number"}},
		{"negative batch", []string{"--batch", "-5"}, []string{"--batch -5"}},
		{"negative workers", []string{"--workers", "-1"}, []string{"--workers -1"}},
		{"names from another KG", []string{"--top", "3", "--data", other}, []string{"its entity table", "is not the one", "was trained on"}},
		{"NaN checkpoint", []string{"--checkpoint", nan}, []string{"nan.arrow: parameter entity[0, 1] is NaN"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshotDir(t, dir)
			code, stderr := runStage(t, bin, append(append([]string{}, common...), tc.args...)...)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr %q", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			if !strings.HasPrefix(stderr, "rank: ") || strings.Contains(stderr, "rank: rank:") {
				t.Errorf("stderr %q: want one \"rank: \" prefix", stderr)
			}
			sameDir(t, "files", before, snapshotDir(t, dir))
		})
	}
	// --batch 1e18 (as an integer) ranks as the default batch does.
	def, huge := filepath.Join(dir, "def.arrow"), filepath.Join(dir, "huge.arrow")
	for _, run := range []struct {
		out   string
		extra []string
	}{{def, nil}, {huge, []string{"--batch", "1000000000000000000"}}} {
		args := append([]string{"--checkpoint", ck, "--queries", queries, "-q", "-o", run.out}, run.extra...)
		if code, stderr := runStage(t, bin, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", run.extra, code, stderr)
		}
	}
	_, a, err := artifact.ReadRanks(def)
	if err != nil {
		t.Fatal(err)
	}
	_, b, err := artifact.ReadRanks(huge)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("%d and %d rows", len(a), len(b))
	}
	for i := range a {
		if a[i].Rank != b[i].Rank {
			t.Fatalf("row %d: rank %d vs %d", i, a[i].Rank, b[i].Rank)
		}
	}
	// The same KG names the top entities.
	if code, stderr := runStage(t, bin, "--checkpoint", ck, "--queries", queries, "--top", "3", "--data", traintest.Dir(), "-q", "-o", filepath.Join(dir, "top.arrow")); code != 0 {
		t.Fatalf("--top --data: exit %d: %s", code, stderr)
	}
}
