package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/device"
	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/pipeline"
	"github.com/rocone/rocone/pkg/qecone"
)

// qeconeDir is a checkpoint written by QE-ConE's own code (make_fixtures.py checkpoint),
// with queries of every structure and QE-ConE's filtered ranks of their answers.
var qeconeDir = filepath.Join("..", "..", "testdata", "reference", "qecone-checkpoint")

// TestImportQEConERanks: `train import-qecone` converts QE-ConE's checkpoint, and `rank`
// (the stage's own function) on it reproduces QE-ConE's ranks of every query, all 16
// structures and custom ones, on a model whose angles are partly saturated at ±π.
func TestImportQEConERanks(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "model.arrow")
	if err := runApp("import-qecone", "--from", qeconeDir, "-o", ck); err != nil {
		t.Fatal(err)
	}
	meta, err := artifact.ReadCheckpointMeta(ck)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Model != "cone" || meta.Dim != 16 || meta.NumEntities != 300 || meta.Dataset != "synthetic" {
		t.Fatalf("imported metadata %+v", meta)
	}

	b, err := os.ReadFile(filepath.Join(qeconeDir, "ranks.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rf struct {
		NumEntities  int                   `json:"num_entities"`
		NumRelations int                   `json:"num_relations"`
		Queries      []qecone.FixtureQuery `json:"queries"`
		Ranks        [][]int               `json:"ranks"`
	}
	if err := json.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	var qs []artifact.Query
	for i, q := range rf.Queries {
		qs = append(qs, artifact.Query{ID: int64(i), Type: q.Type, Structure: q.Structure, Anchors: q.Anchors,
			Relations: q.Relations, Easy: []int32{}, Hard: q.Answers})
	}
	qf := filepath.Join(dir, "queries.arrow")
	if err := artifact.WriteQueries(qf, artifact.QueriesMeta{Split: "test", Dataset: "synthetic",
		NumEntities: rf.NumEntities, NumRelations: rf.NumRelations}, qs); err != nil {
		t.Fatal(err)
	}
	ch, err := device.Open("cpu", 1)
	if err != nil {
		t.Fatal(err)
	}
	rk := filepath.Join(dir, "ranks.arrow")
	if err := pipeline.Rank(pipeline.RankConfig{Checkpoint: ck, Queries: qf, Output: rk, Kernels: ch.Kernels}); err != nil {
		t.Fatal(err)
	}
	_, rows, err := artifact.ReadRanks(rk)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64][]int{}
	for _, r := range rows {
		got[r.ID] = append(got[r.ID], int(r.Rank))
	}
	for i, q := range rf.Queries {
		g := got[int64(i)]
		sort.Ints(g)
		if len(g) != len(rf.Ranks[i]) {
			t.Fatalf("query %d (%s): %d ranks, QE-ConE %d", i, q.Name, len(g), len(rf.Ranks[i]))
		}
		for j := range g {
			if g[j] != rf.Ranks[i][j] {
				t.Errorf("query %d (%s): ranks %v, QE-ConE's %v", i, q.Name, g, rf.Ranks[i])
				break
			}
		}
	}
}

// TestImportQEConEErrors: what import-qecone refuses, each with a message naming it.
// TestImportQEConELineage: with --data the imported checkpoint records the KG's digest
// and name, so that queries of another KG with the same sizes are refused as for a model
// trained here; a KG of other sizes is refused at import.
func TestImportQEConELineage(t *testing.T) {
	dir := t.TempDir()
	// mkKG writes an ids-format KG of entities 0 … maxEnt and relations 0 … 19.
	mkKG := func(name string, maxEnt int, extra string) string {
		d := filepath.Join(dir, name)
		var train strings.Builder
		for e := range maxEnt + 1 { // both directions, as BetaE's id files
			r, f := 2*(e%10), (e+1)%(maxEnt+1)
			fmt.Fprintf(&train, "%d\t%d\t%d\n%d\t%d\t%d\n", e, r, f, f, r+1, e)
		}
		train.WriteString(extra)
		for split, text := range map[string]string{"train": train.String(), "valid": "", "test": ""} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, split+".tsv"), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	same, other := mkKG("same", 299, ""), mkKG("other", 299, "3\t2\t7\n7\t3\t3\n")
	ck := filepath.Join(dir, "model.arrow")
	if err := runApp("import-qecone", "--from", qeconeDir, "--data", same, "-o", ck); err != nil {
		t.Fatal(err)
	}
	meta, err := artifact.ReadCheckpointMeta(ck)
	if err != nil {
		t.Fatal(err)
	}
	g, err := kg.Load(same, kg.FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	if meta.KGDigest != g.Digest() || meta.Dataset != "same" {
		t.Fatalf("imported lineage: digest %q dataset %q, want %q and %q", meta.KGDigest, meta.Dataset, g.Digest(), "same")
	}
	// Queries of another KG of the same sizes and name: refused by the digest.
	qf := filepath.Join(dir, "queries.arrow")
	o, err := kg.Load(other, kg.FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	if err := artifact.WriteQueries(qf, artifact.QueriesMeta{Split: "test", Dataset: "same", NumEntities: 300, NumRelations: 20,
		KGDigest: o.Digest()}, []artifact.Query{{Type: "1p", Structure: "('e',('r',))", Anchors: []int32{0}, Relations: []int32{1},
		Easy: []int32{}, Hard: []int32{2}}}); err != nil {
		t.Fatal(err)
	}
	ch, err := device.Open("cpu", 1)
	if err != nil {
		t.Fatal(err)
	}
	err = pipeline.Rank(pipeline.RankConfig{Checkpoint: ck, Queries: qf, Output: filepath.Join(dir, "ranks.arrow"), Kernels: ch.Kernels})
	if err == nil || !strings.Contains(err.Error(), "another KG") {
		t.Fatalf("rank with queries of another KG: %v", err)
	}
	err = runApp("import-qecone", "--from", qeconeDir, "--data", mkKG("bigger", 300, ""), "-o", filepath.Join(dir, "b.arrow"))
	if err == nil || !strings.Contains(err.Error(), "not the KG the model was trained on") {
		t.Fatalf("import with a KG of other sizes: %v", err)
	}
}

func TestImportQEConEErrors(t *testing.T) {
	dir := t.TempDir()
	notTorch := filepath.Join(dir, "checkpoint")
	if err := os.WriteFile(notTorch, []byte("not a torch file"), 0o644); err != nil {
		t.Fatal(err)
	}
	emptyCfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(emptyCfg, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	negCfg := filepath.Join(dir, "neg.json")
	if err := os.WriteFile(negCfg, []byte(`{"center_reg": -1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	strCfg := filepath.Join(dir, "str.json")
	if err := os.WriteFile(strCfg, []byte(`{"center_reg": "0.5"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no from", []string{"-o", filepath.Join(dir, "a.arrow")}, "--from is required"},
		{"no output", []string{"--from", qeconeDir}, "-o is required"},
		{"missing", []string{"--from", filepath.Join(dir, "none"), "-o", filepath.Join(dir, "b.arrow")}, "no such file"},
		{"not torch", []string{"--from", notTorch, "--lambda", "1", "-o", filepath.Join(dir, "c.arrow")}, "not a readable PyTorch file"},
		{"bad config", []string{"--from", filepath.Join(qeconeDir, "checkpoint"), "--config", notTorch, "-o", filepath.Join(dir, "d.arrow")}, "QE-ConE config"},
		{"no lambda", []string{"--from", filepath.Join(qeconeDir, "checkpoint"), "--config", emptyCfg, "-o", filepath.Join(dir, "d.arrow")}, "center_reg"},
		{"negative lambda", []string{"--from", qeconeDir, "--lambda", "-1", "-o", filepath.Join(dir, "e.arrow")}, "--lambda -1: λ (ConE's center_reg, the weight of the inside distance) must be a finite number ≥ 0"},
		{"NaN lambda", []string{"--from", qeconeDir, "--lambda", "NaN", "-o", filepath.Join(dir, "e.arrow")}, "--lambda NaN: λ (ConE's center_reg, the weight of the inside distance) must be a finite number ≥ 0"},
		{"infinite lambda", []string{"--from", filepath.Join(qeconeDir, "checkpoint"), "--config", emptyCfg, "--lambda", "+Inf", "-o", filepath.Join(dir, "e.arrow")}, "--lambda +Inf: λ"},
		{"negative center_reg", []string{"--from", filepath.Join(qeconeDir, "checkpoint"), "--config", negCfg, "-o", filepath.Join(dir, "e.arrow")}, negCfg + "'s center_reg -1: λ (the weight of the inside distance) must be a finite number ≥ 0"},
		{"center_reg not a number", []string{"--from", filepath.Join(qeconeDir, "checkpoint"), "--config", strCfg, "-o", filepath.Join(dir, "e.arrow")}, strCfg + "'s center_reg is 0.5, not a number"},
		{"lambda disagrees", []string{"--from", qeconeDir, "--lambda", "0.25", "-o", filepath.Join(dir, "e.arrow")}, "disagrees"},
		{"no such KG", []string{"--from", qeconeDir, "--data", filepath.Join(dir, "none"), "-o", filepath.Join(dir, "f.arrow")}, "no such file"},
		{"KG not a folder", []string{"--from", qeconeDir, "--data", notTorch, "-o", filepath.Join(dir, "g.arrow")}, "not a folder"},
		// An empty value would pass for the flag's default: refused.
		{"empty dataset", []string{"--from", qeconeDir, "--dataset", "", "-o", filepath.Join(dir, "h.arrow")},
			`--dataset "": an empty value; give a NAME, or leave --dataset out (default: --data's folder name, else config.json's data_path's last element)`},
		{"empty data", []string{"--from", qeconeDir, "--data", "", "-o", filepath.Join(dir, "h.arrow")}, `--data "": an empty value; give a DIR`},
		{"blank dataset", []string{"--from", qeconeDir, "--dataset", " ", "-o", filepath.Join(dir, "h.arrow")}, `--dataset " ": the dataset name is blank`},
		{"a | in the dataset", []string{"--from", qeconeDir, "--dataset", "syn|thetic", "-o", filepath.Join(dir, "h.arrow")}, `--dataset "syn|thetic": the dataset name holds '|'`},
		{"empty config", []string{"--from", qeconeDir, "--config", "", "-o", filepath.Join(dir, "h.arrow")}, `--config "": an empty value; give a FILE`},
		{"overwrite input", []string{"--from", qeconeDir, "-o", filepath.Join(qeconeDir, "checkpoint")}, "same file"},
		// config.json is read when --config is not given: an implicit input, protected too.
		{"overwrite the implicit config", []string{"--from", qeconeDir, "-o", filepath.Join(qeconeDir, "config.json")},
			"-o " + filepath.Join(qeconeDir, "config.json") + " is the same file as --from " + filepath.Join(qeconeDir, "config.json")},
	} {
		err := runApp(append([]string{"import-qecone"}, c.args...)...)
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func contains(s, sub string) bool {
	return strings.Contains(s, sub)
}

// copyQEConE copies the QE-ConE fixture's checkpoint and config.json into a new folder
// (tests that could damage or replace them work on the copy).
func copyQEConE(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "qc")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"checkpoint", "config.json"} {
		b, err := os.ReadFile(filepath.Join(qeconeDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestImportQEConEImplicitConfigFromFile: --from naming the checkpoint file reads the
// config.json beside it, so -o may not name that config.json either.
func TestImportQEConEImplicitConfigFromFile(t *testing.T) {
	dir := copyQEConE(t)
	cfg := filepath.Join(dir, "config.json")
	before, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = runApp("import-qecone", "--from", filepath.Join(dir, "checkpoint"), "-o", cfg)
	if want := "-o " + cfg + " is the same file as --from " + cfg; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("-o naming the implicit config.json of --from FILE: error %v, want one containing %q", err, want)
	}
	if after, _ := os.ReadFile(cfg); string(after) != string(before) {
		t.Fatalf("config.json was replaced")
	}
	// With --config naming another file, the one beside the checkpoint is not read.
	other := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(other, before, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runApp("import-qecone", "--from", filepath.Join(dir, "checkpoint"), "--config", other, "-o", filepath.Join(dir, "model.arrow")); err != nil {
		t.Fatal(err)
	}
	// A checkpoint file without a config.json beside it imports with --lambda.
	lone := filepath.Join(t.TempDir(), "checkpoint")
	b, err := os.ReadFile(filepath.Join(dir, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lone, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runApp("import-qecone", "--from", lone, "--lambda", "0.5", "-o", filepath.Join(filepath.Dir(lone), "model.arrow")); err != nil {
		t.Fatal(err)
	}
}

// TestImportQEConEOverwrite: -o may replace an earlier import of the same QE-ConE
// checkpoint; any other existing file (a text file, another import) needs --overwrite.
func TestImportQEConEOverwrite(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "model.arrow")
	if err := os.WriteFile(out, []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := runApp("import-qecone", "--from", qeconeDir, "-o", out)
	if want := "-o " + out + " exists and is not a checkpoint this import may replace"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("-o naming a text file: error %v, want one containing %q", err, want)
	}
	if b, _ := os.ReadFile(out); string(b) != "notes\n" {
		t.Fatalf("the text file was replaced")
	}
	if err := runApp("import-qecone", "--from", qeconeDir, "--overwrite", "-o", out); err != nil {
		t.Fatalf("--overwrite: %v", err)
	}
	// The same import again: no flag needed.
	if err := runApp("import-qecone", "--from", filepath.Join(qeconeDir, "checkpoint"), "-o", out); err != nil {
		t.Fatalf("re-import of the same checkpoint: %v", err)
	}
	// The import of another QE-ConE checkpoint (a copy elsewhere) is another file.
	other := copyQEConE(t)
	err = runApp("import-qecone", "--from", other, "-o", out)
	if want := "-o " + out + " holds the import of another QE-ConE checkpoint"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("-o holding another import: error %v, want one containing %q", err, want)
	}
	if err := runApp("import-qecone", "--from", other, "--overwrite", "-o", out); err != nil {
		t.Fatalf("--overwrite: %v", err)
	}
}

// TestImportQEConENoResume: an imported checkpoint holds no training state; train
// --resume refuses it saying so, not with an error about a stream it lacks.
func TestImportQEConENoResume(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "model.arrow")
	if err := runApp("import-qecone", "--from", qeconeDir, "-o", ck); err != nil {
		t.Fatal(err)
	}
	tr := filepath.Join(dir, "train.arrow")
	if err := artifact.WriteQueries(tr, artifact.QueriesMeta{Split: "train", Dataset: "synthetic", NumEntities: 300, NumRelations: 20},
		[]artifact.Query{{Type: "1p", Structure: "('e',('r',))", Anchors: []int32{0}, Relations: []int32{1}, Easy: []int32{}, Hard: []int32{2}}}); err != nil {
		t.Fatal(err)
	}
	err := runApp("--train", tr, "--checkpoint", ck, "--resume", "-q")
	if want := ck + ": an imported QE-ConE checkpoint cannot be resumed: "; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("train --resume on an import: error %v, want one containing %q", err, want)
	}
}
