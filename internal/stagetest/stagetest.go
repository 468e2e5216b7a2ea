// Package stagetest holds the helpers the end-to-end tests of cmd/* share: building the
// stage under test, running it, snapshots of a folder's bytes, small trained fixtures and
// corrupted copies of an artifact. It is for tests only.
package stagetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocone/rocone/internal/outfiletest"
	"github.com/rocone/rocone/internal/stagebuild"
	"github.com/rocone/rocone/internal/traintest"
	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/sample"
	"github.com/rocone/rocone/pkg/train"
)

// RepoRoot is the folder holding go.mod, above the test's working directory.
func RepoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// Build builds the command in the test's working folder (its package) into a temporary folder.
func Build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stage")
	if out, err := stagebuild.Command(bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// Run runs the binary and returns its exit status and stderr.
func Run(t *testing.T, bin string, args ...string) (int, string) {
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

// SnapshotDir returns every file of dir and its bytes.
func SnapshotDir(t *testing.T, dir string) map[string][]byte {
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

// SameDir reports every file of before that is missing or changed in after.
func SameDir(t *testing.T, what string, before, after map[string][]byte) {
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

// Fixtures makes, in dir, a small test queries file of the tiny KG and trained
// checkpoints (2 steps) named by variant and seed, e.g. "rocone-1".
func Fixtures(t *testing.T, dir string, models ...string) (string, map[string]string) {
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

// WithNaN writes a copy of the checkpoint src with one entity parameter set to NaN.
func WithNaN(t *testing.T, src, dst string) {
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

// Corruptions returns copies of an artifact with one byte changed, at positions spread
// over its footer (the last 10 bytes, the footer before them, and the index entries
// within it) and over the rest, plus each 4-byte word of the footer's last 64 bytes set to
// a huge length.
func Corruptions(t *testing.T, path string) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	footerLen := int(binary.LittleEndian.Uint32(data[len(data)-10:]))
	footer := len(data) - 10 - footerLen
	add := func(i int, how string, edit func(b []byte)) {
		if i < 0 || i+4 > len(data) {
			return
		}
		b := append([]byte(nil), data...)
		edit(b)
		out[how+" at "+strconv.Itoa(i)] = b
	}
	for i := footer; i < len(data); i += max(1, footerLen/24) {
		add(i, "^0xff", func(b []byte) { b[i] ^= 0xff })
	}
	for i := len(data) - 10; i < len(data)-4; i++ {
		add(i, "^0x80", func(b []byte) { b[i] ^= 0x80 })
	}
	for i := len(data) - 64; i < len(data)-10; i += 4 {
		add(i, "=0x7fffff00", func(b []byte) { binary.LittleEndian.PutUint32(b[i:], 0x7fffff00) })
	}
	for i := 8; i < footer; i += max(1, footer/12) {
		add(i, "^0xff", func(b []byte) { b[i] ^= 0xff })
	}
	return out
}

// CorruptInputs runs the stage under test (through outfiletest.Run: the test binary is the
// stage) on checkpoints and queries files with one byte changed in their footer or body,
// writing output: every run ends with a clean exit (0, when the change hit bytes that do
// not matter, or 1 with a message naming the file and no output left), never a panic
// (exit status 2) or a fatal out-of-memory, and changes no file.
func CorruptInputs(t *testing.T, output string) {
	t.Helper()
	f := outfiletest.Make(t)
	for _, in := range []struct{ flag, path string }{{"--checkpoint", f.Checkpoint}, {"--queries", f.Test}} {
		for how, data := range Corruptions(t, in.path) {
			t.Run(strings.TrimPrefix(in.flag, "--")+" "+how, func(t *testing.T) {
				dir := t.TempDir()
				bad := filepath.Join(dir, "bad.arrow")
				os.WriteFile(bad, data, 0o644)
				args := []string{"--checkpoint", f.Checkpoint, "--queries", f.Test, "-q", "-o", filepath.Join(dir, output)}
				for i := range args {
					if args[i] == in.flag {
						args[i+1] = bad
					}
				}
				before := outfiletest.Take(t, f.Dir, bad)
				r := outfiletest.Run(t, time.Minute, args...)
				if strings.Contains(r.Stderr, "panic") || strings.Contains(r.Stderr, "goroutine ") || strings.Contains(r.Stderr, "out of memory") {
					t.Fatalf("exit %d:\n%s", r.Code, r.Stderr)
				}
				switch r.Code {
				case 0:
				case 1:
					if !strings.Contains(r.Stderr, bad) {
						t.Errorf("the message does not name %s:\n%s", bad, r.Stderr)
					}
					if _, err := os.Stat(filepath.Join(dir, output)); err == nil {
						t.Error("an output was left")
					}
				default:
					t.Errorf("exit status %d:\n%s", r.Code, r.Stderr)
				}
				before.Unchanged(t)
			})
		}
	}
}

// RunIn runs the binary with stdin read from the file at path and returns its exit
// status and stderr.
func RunIn(t *testing.T, path, bin string, args ...string) (int, string) {
	t.Helper()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
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

// Lineage is a set of artifacts whose lineage differs in one thing at a time, for the
// end-to-end tests of the lineage checks: two KGs of the same name ("tiny") and counts,
// without name tables (ids only), that differ in one fact, queries sampled on each,
// models trained on them (2 steps) with their train logs.
type Lineage struct {
	KG, OtherKG string // dataset folders: tiny's facts; the same with one valid fact's tail changed
	// Train files: on KG (sampling seed 1), on KG again (sampling seed 2), on OtherKG (seed 1).
	Train, OtherTrain, TrainOnOther string
	Test, TestOnOther               string // test queries on KG and on OtherKG
	// Models, each with its train log (the same path, .log.arrow): Model1 and Model2 are
	// seeds 1 and 2 on Train, ModelOtherTrain seed 3 on OtherTrain, ModelOnOther seed 1
	// on TrainOnOther.
	Model1, Model2, ModelOtherTrain, ModelOnOther string
}

// Log is the train log of a model of a Lineage.
func (Lineage) Log(model string) string { return strings.TrimSuffix(model, ".arrow") + ".log.arrow" }

// MakeLineage makes a Lineage in dir.
func MakeLineage(t *testing.T, dir string) Lineage {
	t.Helper()
	l := Lineage{KG: filepath.Join(dir, "a", "tiny"), OtherKG: filepath.Join(dir, "b", "tiny")}
	for _, kgDir := range []string{l.KG, l.OtherKG} {
		if err := os.MkdirAll(kgDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, split := range kg.Splits {
			b, err := os.ReadFile(filepath.Join(traintest.Dir(), split+".tsv"))
			if err != nil {
				t.Fatal(err)
			}
			if kgDir == l.OtherKG && split == "valid" {
				// tiny's first valid fact, 2 -6-> 43 (and 43 -7-> 2), becomes 2 -6-> 44:
				// the same entities and relations, another KG.
				b = bytes.Replace(b, []byte("2\t6\t43\n43\t7\t2\n"), []byte("2\t6\t44\n44\t7\t2\n"), 1)
			}
			if err := os.WriteFile(filepath.Join(kgDir, split+".tsv"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	gen := func(kgDir, name, split string, counts map[string]int, seed uint64) string {
		out := filepath.Join(dir, name)
		var types []string
		for _, typ := range []string{"1p", "2p", "3p", "2i", "3i", "2in", "3in", "inp", "pin", "pni"} {
			if counts[typ] > 0 {
				types = append(types, typ)
			}
		}
		if err := sample.GenerateToFile(context.Background(), sample.Source{Dir: kgDir, Format: kg.FormatAuto}, split,
			sample.Options{Types: types, Counts: counts, Seed: seed, Workers: 1}, out, nil); err != nil {
			t.Fatal(err)
		}
		return out
	}
	test := map[string]int{"1p": 20, "2p": 8, "2in": 6}
	l.Train = gen(l.KG, "train.arrow", "train", traintest.TrainCounts, 1)
	l.OtherTrain = gen(l.KG, "train-2.arrow", "train", traintest.TrainCounts, 2)
	l.TrainOnOther = gen(l.OtherKG, "train-other-kg.arrow", "train", traintest.TrainCounts, 1)
	l.Test = gen(l.KG, "test.arrow", "test", test, 3)
	l.TestOnOther = gen(l.OtherKG, "test-other-kg.arrow", "test", test, 3)
	trainOn := func(trainFile, name string, seed uint64) string {
		cfg := train.Default()
		cfg.Model, cfg.Dim, cfg.Batch, cfg.Negatives, cfg.Gamma, cfg.LR = "rocone", 8, 16, 4, 12, 0.01
		cfg.Steps, cfg.EvalEvery, cfg.CheckpointEvery, cfg.Seed = 2, 0, 0, seed
		path := filepath.Join(dir, name)
		if _, err := train.Run(context.Background(), cfg, train.Options{Train: trainFile, Checkpoint: path, Log: l.Log(path)}); err != nil {
			t.Fatal(err)
		}
		return path
	}
	l.Model1 = trainOn(l.Train, "m1.arrow", 1)
	l.Model2 = trainOn(l.Train, "m2.arrow", 2)
	l.ModelOtherTrain = trainOn(l.OtherTrain, "m-other-train.arrow", 3)
	l.ModelOnOther = trainOn(l.TrainOnOther, "m-other-kg.arrow", 1)
	return l
}
