package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"
)

// TestFlagValuesEndToEnd runs `sample generate` on flag values that used to be ignored,
// silently changed or accepted only to fail much later: each exits 1 at once with a
// message naming the flag, writes nothing and leaves the pre-existing output as it was.
func TestFlagValuesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := stagetest.Build(t)
	data := "../../testdata/tiny"
	// An empty test split: the tiny KG with an empty test.tsv.
	emptyTest := filepath.Join(t.TempDir(), "tiny")
	os.MkdirAll(emptyTest, 0o755)
	for _, f := range []string{"train.tsv", "valid.tsv", "entities.tsv", "relations.tsv"} {
		b, _ := os.ReadFile(filepath.Join(data, f))
		os.WriteFile(filepath.Join(emptyTest, f), b, 0o644)
	}
	os.WriteFile(filepath.Join(emptyTest, "test.tsv"), nil, 0o644)

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"type twice", []string{"--data", data, "--split", "valid", "--types", "1p,1p"}, []string{"--types", "1p is given twice"}},
		{"type twice by notation", []string{"--data", data, "--split", "valid", "--types", "2p,('e',('r','r'))"}, []string{"2p is given twice"}},
		{"empty types", []string{"--data", data, "--split", "valid", "--types", ""}, []string{`--types "": no types`}},
		{"count for a type not sampled", []string{"--data", data, "--split", "valid", "--types", "1p", "--count", "2p=5"}, []string{"--count 2p=5", "not among the types to sample"}},
		{"max-answers 0", []string{"--data", data, "--split", "valid", "--max-answers", "0"}, []string{"--max-answers 0", "at least 1"}},
		{"max-answers -1", []string{"--data", data, "--split", "valid", "--types", "2p", "--max-answers", "-1"}, []string{"--max-answers -1"}},
		{"count of 10^30", []string{"--data", data, "--split", "valid", "--count", "2p=1000000000000000000000000000000"}, []string{"is too large"}},
		{"negative workers", []string{"--data", data, "--split", "valid", "--workers", "-1"}, []string{"--workers -1"}},
		{"workers 0", []string{"--data", data, "--split", "valid", "--workers", "0"}, []string{"--workers 0: want a number of at least 1 (leave --workers out for every core)"}},
		{"empty split not asked for", []string{"--data", emptyTest, "--split", "test", "--types", "1p"}, []string{"sampling 1p: no query found", "--count 1p=0"}},
		{"empty --format", []string{"--data", data, "--split", "valid", "--format", ""}, []string{`--format "": an empty value; give a FORMAT, or leave --format out (default: auto)`}},
		{"empty --split", []string{"--data", data, "--split", ""}, []string{`--split "": an empty value`}},
	}
	outDir := t.TempDir()
	out := filepath.Join(outDir, "q.arrow")
	os.WriteFile(out, []byte("an older file the failed run must leave alone"), 0o644)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, beforeData := stagetest.SnapshotDir(t, outDir), stagetest.SnapshotDir(t, data)
			code, stderr := stagetest.Run(t, bin, append(append([]string{"generate"}, tc.args...), "-q", "-o", out)...)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr %q", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			// The dataset's warnings (rows dropped) come first whatever -q, then the error.
			var msg []string
			for _, line := range strings.SplitAfter(stderr, "\n") {
				if !strings.HasPrefix(line, "warning: ") {
					msg = append(msg, line)
				}
			}
			if m := strings.Join(msg, ""); !strings.HasPrefix(m, "sample: ") || strings.Count(m, "sample: ") != 1 {
				t.Errorf("stderr %q: want one \"sample: \" prefix", stderr)
			}
			for what, pair := range map[string][2]map[string][]byte{"output folder": {before, stagetest.SnapshotDir(t, outDir)}, "dataset": {beforeData, stagetest.SnapshotDir(t, data)}} {
				if len(pair[0]) != len(pair[1]) {
					t.Errorf("%s: %d files before, %d after", what, len(pair[0]), len(pair[1]))
				}
				for name, b := range pair[0] {
					if !bytes.Equal(pair[1][name], b) {
						t.Errorf("%s: %s changed", what, name)
					}
				}
			}
		})
	}
	// Asked for: an explicit --count 1p=0 on the empty split is a valid (empty) file.
	if code, stderr := stagetest.Run(t, bin, "generate", "--data", emptyTest, "--split", "test", "--types", "1p", "--count", "1p=0", "-q", "-o", out); code != 0 {
		t.Fatalf("--count 1p=0: exit %d: %s", code, stderr)
	}
}
