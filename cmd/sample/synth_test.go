package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSynthEndToEnd: sample synth writes a dataset that sample generate then grounds
// queries on; a second synth into the same folder is refused and leaves it as it was;
// bad flags are errors naming the flag.
func TestSynthEndToEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kg")
	if _, err := runSample(t, "synth", "--entities", "300", "--relations", "5", "--edges", "4000", "--seed", "3", "-q", "-o", dir); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "q.arrow")
	if stderr, err := runSample(t, "generate", "--data", dir, "--split", "test", "--count", "1p=20,2p=20,2in=10", "--types", "1p,2p,2in", "-q", "-o", out); err != nil {
		t.Fatalf("generate on the synthetic KG: %v\n%s", err, stderr)
	}
	before := snapshot(t, dir)
	_, err := runSample(t, "synth", "--entities", "300", "--relations", "5", "--edges", "4000", "--seed", "4", "-q", "-o", dir)
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second synth into %s: got %v", dir, err)
	}
	after := snapshot(t, dir)
	if len(before) != len(after) {
		t.Fatalf("the refused synth changed the folder: %d files before, %d after", len(before), len(after))
	}
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("the refused synth changed %s", k)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--entities", "10", "--relations", "1", "--edges", "5"}, "--edges 5 is below --entities 10"},
		{[]string{"--entities", "100", "--relations", "2", "--edges", "500", "--skew", "1"}, "--skew 1"},
		{[]string{"--entities", "100", "--relations", "2", "--edges", "500", "--skew", "0"}, "--skew 0: want a number in (0, 1)"},
	} {
		_, err := runSample(t, append(append([]string{"synth"}, c.args...), "-o", filepath.Join(t.TempDir(), "x"))...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "synth.json")); err != nil {
		t.Fatal(err)
	}
}
