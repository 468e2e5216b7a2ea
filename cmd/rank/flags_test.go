package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"

	"github.com/rocone/rocone/internal/traintest"
	"github.com/rocone/rocone/pkg/artifact"
)

// TestFlagValuesEndToEnd runs the binary on option values that used to be ignored, panic
// or be silently wrong: each exits 1 with one "rank: " prefix and a message naming the
// flag, and no file changes; a huge --batch is capped at the number of queries.
func TestFlagValuesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := stagetest.Build(t)
	dir := t.TempDir()
	queries, cks := stagetest.Fixtures(t, dir, "rocone-1")
	ck := cks["rocone-1"]
	nan := filepath.Join(dir, "nan.arrow")
	stagetest.WithNaN(t, ck, nan)
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
	common := []string{"--queries", queries, "-q", "-o", out}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"negative top", []string{"--checkpoint", ck, "--top", "-1"}, []string{"--top -1"}},
		{"top 0", []string{"--checkpoint", ck, "--top", "0"}, []string{"--top 0: want a number of at least 1 (leave --top out for none"}},
		{"data without top", []string{"--checkpoint", ck, "--data", traintest.Dir()}, []string{"it needs --top K"}},
		{"batch 0", []string{"--checkpoint", ck, "--batch", "0"}, []string{"--batch 0: want a positive number"}},
		{"negative batch", []string{"--checkpoint", ck, "--batch", "-5"}, []string{"--batch -5"}},
		{"negative workers", []string{"--checkpoint", ck, "--workers", "-1"}, []string{"--workers -1"}},
		{"workers 0", []string{"--checkpoint", ck, "--workers", "0"}, []string{"--workers 0: want a number of at least 1 (leave --workers out for every core)"}},
		{"names from another KG", []string{"--checkpoint", ck, "--top", "3", "--data", other}, []string{"is another KG (digest", "was trained on", "though its counts agree"}},
		{"NaN checkpoint", []string{"--checkpoint", nan}, []string{"nan.arrow: parameter entity[0, 1] is NaN"}},
		{"--checkpoint twice", []string{"--checkpoint", ck, "--checkpoint", nan}, []string{"--checkpoint is given twice"}},
		{"a flag after the queries", []string{"--checkpoint", ck, "extra.arrow", "--top", "3"}, []string{`--top comes after the file name "extra.arrow"`}},
		// An empty value would pass for the flag's default, or fail as an unnamed path.
		{"empty device", []string{"--checkpoint", ck, "--device", ""}, []string{`--device "": an empty value; give a DEVICE, or leave --device out (default: cpu)`}},
		{"empty profile", []string{"--checkpoint", ck, "--profile", ""}, []string{`--profile "": an empty value; give a FILE, or leave --profile out`}},
		{"empty cones", []string{"--checkpoint", ck, "--cones", ""}, []string{`--cones "": an empty value; give a FILE, or leave --cones out (default: embed the queries here)`}},
		{"empty data", []string{"--checkpoint", ck, "--top", "3", "--data", ""}, []string{`--data "": an empty value; give a DIR`}},
		{"empty checkpoint", []string{"--checkpoint", ""}, []string{`--checkpoint "": an empty value; give a FILE`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := stagetest.SnapshotDir(t, dir)
			code, stderr := stagetest.Run(t, bin, append(append([]string{}, common...), tc.args...)...)
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
			stagetest.SameDir(t, "files", before, stagetest.SnapshotDir(t, dir))
		})
	}
	// --batch 1e18 (as an integer) ranks as the default batch does.
	def, huge := filepath.Join(dir, "def.arrow"), filepath.Join(dir, "huge.arrow")
	for _, run := range []struct {
		out   string
		extra []string
	}{{def, nil}, {huge, []string{"--batch", "1000000000000000000"}}} {
		args := append([]string{"--checkpoint", ck, "--queries", queries, "-q", "-o", run.out}, run.extra...)
		if code, stderr := stagetest.Run(t, bin, args...); code != 0 {
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
	if code, stderr := stagetest.Run(t, bin, "--checkpoint", ck, "--queries", queries, "--top", "3", "--data", traintest.Dir(), "-q", "-o", filepath.Join(dir, "top.arrow")); code != 0 {
		t.Fatalf("--top --data: exit %d: %s", code, stderr)
	}
}
