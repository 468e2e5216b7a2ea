// Package traintest makes the small query files that the tests of pkg/train and
// cmd/train train on: queries grounded on testdata/tiny (82 entities, 10 relation ids)
// by pkg/sample, with small counts so that training on them takes milliseconds.
package traintest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"

	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/sample"
)

// Dir is testdata/tiny: next to this source file, or, for a test binary built elsewhere
// and run from a copy of the repository (scripts/cuda/gpu-check.sh --prebuilt), found
// from the working directory upwards.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "tiny")
	if _, err := os.Stat(dir); err == nil {
		return dir
	}
	for up, _ := os.Getwd(); ; {
		cand := filepath.Join(up, "testdata", "tiny")
		if _, err := os.Stat(cand); err == nil {
			return cand
		}
		parent := filepath.Dir(up)
		if parent == up {
			return dir
		}
		up = parent
	}
}

// TrainCounts are the per-type counts of the train file: every train type, both pools.
var TrainCounts = map[string]int{
	"1p": 40, "2p": 20, "3p": 12, "2i": 20, "3i": 12,
	"2in": 8, "3in": 6, "inp": 6, "pin": 6, "pni": 6,
}

// ValidCounts are the per-type counts of the valid file: all 14 evaluation types.
var ValidCounts = map[string]int{
	"1p": 15, "2p": 6, "3p": 6, "2i": 6, "3i": 6, "ip": 6, "pi": 6, "2u": 6, "up": 6,
	"2in": 5, "3in": 5, "inp": 5, "pin": 5, "pni": 5,
}

// Generate writes split queries of the given types and counts (nil: the counts above) to
// dir/NAME and returns the path. The dataset is named "tiny".
func Generate(tb testing.TB, dir, name, split string, counts map[string]int, seed uint64) string {
	tb.Helper()
	if counts == nil {
		counts = TrainCounts
		if split != "train" {
			counts = ValidCounts
		}
	}
	var types []string
	for _, t := range []string{"1p", "2p", "3p", "2i", "3i", "ip", "pi", "2u", "up", "2in", "3in", "inp", "pin", "pni"} {
		if _, ok := counts[t]; ok {
			types = append(types, t)
		}
	}
	var custom []string
	for t := range counts {
		if len(t) > 0 && t[0] == '(' {
			custom = append(custom, t)
		}
	}
	sort.Strings(custom)
	types = append(types, custom...)
	out := filepath.Join(dir, name)
	src := sample.Source{Dir: Dir(), Format: kg.FormatAuto, Dataset: "tiny"}
	opts := sample.Options{Types: types, Counts: counts, Seed: seed, Workers: 1}
	if err := sample.GenerateToFile(context.Background(), src, split, opts, out, io.Discard); err != nil {
		tb.Fatal(err)
	}
	return out
}
