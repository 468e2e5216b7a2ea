package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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

// TestFlagValuesEndToEnd: configuration values outside their meaning, a train file as
// --valid, replacing another run's checkpoint or log, and resuming into another run's log
// are refused at once by the binary (exit 1, one "train: " prefix, a message saying what
// and how to proceed), and no file changes.
func TestFlagValuesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	tr, va := data(t)
	bin := buildStage(t)
	dir := t.TempDir()
	ck, log := filepath.Join(dir, "m.arrow"), filepath.Join(dir, "m-log.arrow")
	base := append([]string{"--train", tr, "--steps", "2", "--eval-every", "0"}, tiny...)
	if code, stderr := runStage(t, bin, append(slices.Clone(base), "--checkpoint", ck)...); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	otherLog := filepath.Join(dir, "o-log.arrow")
	if code, stderr := runStage(t, bin, append(slices.Clone(base), "--dim", "16", "--checkpoint", filepath.Join(dir, "o.arrow"), "--log", otherLog)...); code != 0 {
		t.Fatalf("second run: exit %d: %s", code, stderr)
	}
	fresh := filepath.Join(dir, "fresh.arrow")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"negative lambda", []string{"--lambda", "-0.5", "--checkpoint", fresh}, []string{"lambda", "≥ 0", "-0.5"}},
		{"dropout 1", []string{"--dropout", "1", "--checkpoint", fresh}, []string{"dropout must be in [0, 1)"}},
		{"zero lr", []string{"--lr", "0", "--checkpoint", fresh}, []string{"lr must be"}},
		{"negative gamma", []string{"--gamma", "-1", "--checkpoint", fresh}, []string{"gamma"}},
		{"zero dim", []string{"--dim", "0", "--checkpoint", fresh}, []string{"dim must be positive"}},
		{"negative steps", []string{"--steps", "-3", "--checkpoint", fresh}, []string{"steps must be positive"}},
		{"cone-hidden on rocone", []string{"--cone-hidden", "32", "--checkpoint", fresh}, []string{"--model cone only"}},
		{"negative workers", []string{"--workers", "-2", "--checkpoint", fresh}, []string{"--workers -2"}},
		{"train file as valid", []string{"--valid", tr, "--checkpoint", fresh}, []string{"--valid needs held-out queries"}},
		{"another run's checkpoint", []string{"--dim", "32", "--checkpoint", ck}, []string{"holds the checkpoint of another run (dim 8 vs 32)", "--overwrite"}},
		{"resume and overwrite", []string{"--checkpoint", ck, "--resume", "--overwrite"}, []string{"give one of them"}},
		{"resume into another run's log", []string{"--checkpoint", ck, "--resume", "--steps", "3", "--log", otherLog}, []string{"is the log of another run (dim 16 vs 8)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, inputs := snapshotDir(t, dir), snapshotDir(t, filepath.Dir(tr))
			args := append(slices.Clone(base), tc.args...)
			code, stderr := runStage(t, bin, args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr %q", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			if !strings.HasPrefix(stderr, "train: ") || strings.Contains(stderr, "train: train:") {
				t.Errorf("stderr %q: want one \"train: \" prefix", stderr)
			}
			sameDir(t, "run folder", before, snapshotDir(t, dir))
			sameDir(t, "inputs", inputs, snapshotDir(t, filepath.Dir(tr)))
		})
	}
	// Allowed: the same configuration again, and another one with --overwrite.
	if code, stderr := runStage(t, bin, append(slices.Clone(base), "--checkpoint", ck)...); code != 0 {
		t.Fatalf("same configuration again: exit %d: %s", code, stderr)
	}
	if code, stderr := runStage(t, bin, append(slices.Clone(base), "--valid", va, "--dim", "32", "--checkpoint", ck, "--overwrite")...); code != 0 {
		t.Fatalf("--overwrite: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(log); err != nil {
		t.Fatal(err)
	}
}
