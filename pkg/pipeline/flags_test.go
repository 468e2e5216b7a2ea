package pipeline

import (
	"bytes"
	"cmp"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/model"
)

// editCheckpoint rewrites a checkpoint with edit applied.
func editCheckpoint(t *testing.T, src, dst string, edit func(*artifact.Checkpoint)) {
	t.Helper()
	ck, err := artifact.ReadCheckpoint(src)
	if err != nil {
		t.Fatal(err)
	}
	edit(ck)
	if err := artifact.WriteCheckpoint(dst, ck); err != nil {
		t.Fatal(err)
	}
}

// trainConfig is a training configuration in the JSON a checkpoint records.
func trainConfig(model string, dim int, seed uint64) string {
	return `{"model":"` + model + `","dim":` + itoa(dim) + `,"lambda":0.02,"seed":` + itoa(int(seed)) + `,"eval_every":3}`
}

func itoa(n int) string { return strconv.Itoa(n) }

// snapshot returns every file of dir and its bytes.
func snapshot(t *testing.T, dir string) map[string][]byte {
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

func sameFiles(t *testing.T, before, after map[string][]byte) {
	t.Helper()
	for name, b := range before {
		if a, ok := after[name]; !ok || !bytes.Equal(a, b) {
			t.Errorf("%s changed or vanished", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s appeared", name)
		}
	}
}

// TestSeedsRule: metrics averages distinct checkpoints of one model and configuration and
// refuses anything else, naming what differs; --models puts models side by side.
func TestSeedsRule(t *testing.T) {
	dir := t.TempDir()
	queries := fixture(t, dir)
	ref := compute.Reference[float32]{}
	// Checkpoints: rocone seeds 1 and 2, a cone seed 1, rocone seed 3 of dim 6 (another
	// configuration), each with its training configuration recorded.
	type ck struct {
		name    string
		variant model.Variant
		dim     int
		seed    uint64
	}
	ranks := map[string]string{}
	for _, c := range []ck{{"r1", model.RoConE, 8, 1}, {"r2", model.RoConE, 8, 2}, {"c1", model.ConE, 8, 1}, {"w3", model.RoConE, 6, 3}} {
		path := filepath.Join(dir, c.name+"-model.arrow")
		writeCheckpoint(t, path, c.variant, c.dim, c.seed)
		editCheckpoint(t, path, path, func(k *artifact.Checkpoint) { k.Meta.Config = trainConfig(string(c.variant), c.dim, c.seed) })
		out := filepath.Join(dir, c.name+".arrow")
		if err := Rank(RankConfig{Checkpoint: path, Queries: queries, Output: out, Kernels: ref}); err != nil {
			t.Fatal(err)
		}
		ranks[c.name] = out
	}
	// r1 again, through stored cones: the same checkpoint, the same ranks.
	cones := filepath.Join(dir, "r1-cones.arrow")
	if err := Embed(EmbedConfig{Checkpoint: filepath.Join(dir, "r1-model.arrow"), Queries: queries, Output: cones, Kernels: ref}); err != nil {
		t.Fatal(err)
	}
	ranks["r1cones"] = filepath.Join(dir, "r1-viacones.arrow")
	if err := Rank(RankConfig{Checkpoint: filepath.Join(dir, "r1-model.arrow"), Queries: queries, Cones: cones, Output: ranks["r1cones"], Kernels: ref}); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "r1-link.arrow")
	if err := os.Symlink(ranks["r1"], link); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "metrics.arrow")
	tests := []struct {
		name   string
		cfg    MetricsConfig
		want   []string // error substrings; nil: success
		output []string // with success: substrings of the table
	}{
		{"two seeds", MetricsConfig{Ranks: []string{ranks["r1"], ranks["r2"]}, Resamples: 40}, nil, []string{"2 seed(s)", "rocone (2 seeds)"}},
		{"one file twice", MetricsConfig{Ranks: []string{ranks["r1"], ranks["r1"]}, Output: out}, []string{"r1.arrow and", "are the same file"}, nil},
		{"one file under a link", MetricsConfig{Ranks: []string{ranks["r1"], link}, Output: out}, []string{"r1-link.arrow are the same file"}, nil},
		{"with and without --cones", MetricsConfig{Ranks: []string{ranks["r1"], ranks["r1cones"]}, Output: out}, []string{"rank the same checkpoint"}, nil},
		{"cone and rocone", MetricsConfig{Ranks: []string{ranks["r1"], ranks["c1"]}, Output: out}, []string{"c1.arrow ranks a cone model", "--models"}, nil},
		{"another configuration", MetricsConfig{Ranks: []string{ranks["r2"], ranks["w3"]}, Output: out}, []string{"different configurations (dim 8 vs 6)"}, nil},
		{"negative resamples", MetricsConfig{Ranks: []string{ranks["r1"]}, Resamples: -5, Output: out}, []string{"--resamples -5"}, nil},
		{"models side by side", MetricsConfig{Ranks: []string{ranks["r1"], ranks["c1"], ranks["r2"], ranks["w3"]}, Models: true, Resamples: 40}, nil,
			[]string{"3 model(s)", "| rocone (dim 8) (2 seeds) |", "| cone  ", "| rocone (dim 6)  ", "rocone (dim 8) (2 seeds) Hits@10"}},
		{"compare with no published rows", MetricsConfig{Ranks: []string{ranks["r1"]}, Compare: true}, nil, []string{"(--compare: no published results for dataset"}},
		{"models compare with no published rows", MetricsConfig{Ranks: []string{ranks["r1"], ranks["c1"]}, Models: true, Compare: true}, nil, []string{"(--compare: no published results for dataset"}},
		{"models: a seed twice", MetricsConfig{Ranks: []string{ranks["r1"], ranks["c1"], ranks["r1cones"]}, Models: true}, []string{"rank the same checkpoint"}, nil},
		{"models with -o", MetricsConfig{Ranks: []string{ranks["r1"], ranks["c1"]}, Models: true, Output: out}, []string{"--models prints the side-by-side table only"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, dir)
			var table bytes.Buffer
			err := Metrics(tc.cfg, &table)
			sameFiles(t, before, snapshot(t, dir))
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range tc.output {
					if !strings.Contains(table.String(), w) {
						t.Errorf("table lacks %q:\n%s", w, table.String())
					}
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.HasPrefix(err.Error(), "metrics:") {
				t.Errorf("error %q starts with the stage's name, which main adds", err)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("metrics artifact written")
			}
		})
	}

	// --resamples 0: no bootstrap; the artifact says so and its intervals are NaN.
	if err := Metrics(MetricsConfig{Ranks: []string{ranks["r1"]}, Output: out}, io.Discard); err != nil {
		t.Fatal(err)
	}
	meta, rows, err := artifact.ReadMetrics(out)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Resamples != 0 || !math.IsNaN(rows[0].MRR.Lo) || math.IsNaN(rows[0].MRR.Mean) {
		t.Errorf("--resamples 0: resamples %d, first row %+v", meta.Resamples, rows[0].MRR)
	}
	// The ranks artifact carries the checkpoint's training configuration.
	rm, _, err := artifact.ReadRanks(ranks["w3"])
	if err != nil || rm.TrainConfig != trainConfig("rocone", 6, 3) {
		t.Errorf("train_config %q, %v", rm.TrainConfig, err)
	}
}

// TestRankFlags: rank's option values that were ignored or silently wrong are errors; a
// huge batch is capped at the number of queries.
func TestRankFlags(t *testing.T) {
	dir := t.TempDir()
	queries := fixture(t, dir)
	ck := filepath.Join(dir, "m.arrow")
	writeCheckpoint(t, ck, model.RoConE, 8, 1)
	ref := compute.Reference[float32]{}
	out := filepath.Join(dir, "ranks.arrow")
	tests := []struct {
		name string
		cfg  RankConfig
		want string
	}{
		{"negative top", RankConfig{TopK: -1}, "--top -1"},
		{"data without top", RankConfig{Data: "../../testdata/tiny"}, "--data ../../testdata/tiny names the entities of the top-K lists; it needs --top K"},
		{"negative batch", RankConfig{Batch: -3}, "--batch -3"},
		{"negative workers", RankConfig{Workers: -1}, "--workers -1"},
		{"queries and cones on stdin", RankConfig{Queries: "-", Cones: "-"}, "--queries and --cones cannot both read stdin"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, dir)
			cfg := tc.cfg
			cfg.Checkpoint, cfg.Queries, cfg.Output, cfg.Kernels = ck, cmp.Or(cfg.Queries, queries), out, ref
			err := Rank(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			sameFiles(t, before, snapshot(t, dir))
		})
	}
	// A batch of 10^18 is the whole query set: the same ranks as the default batch.
	def, huge := filepath.Join(dir, "def.arrow"), filepath.Join(dir, "huge.arrow")
	if err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: def, Kernels: ref}); err != nil {
		t.Fatal(err)
	}
	if err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: huge, Kernels: ref, Batch: 1e18}); err != nil {
		t.Fatal(err)
	}
	_, a, _ := artifact.ReadRanks(def)
	_, b, _ := artifact.ReadRanks(huge)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("%d and %d rows", len(a), len(b))
	}
	for i := range a {
		if a[i].Rank != b[i].Rank {
			t.Fatalf("row %d: rank %d with the default batch, %d with a huge one", i, a[i].Rank, b[i].Rank)
		}
	}
}

// TestTopNamesCheckKG: rank --top --data takes entity names only from the checkpoint's KG:
// another entity table of the same counts is refused (by the digest the checkpoint
// records), and a checkpoint without a digest is checked by the dataset's name, with a
// warning.
func TestTopNamesCheckKG(t *testing.T) {
	dir := t.TempDir()
	queries := fixture(t, dir)
	d, err := kg.Load("../../testdata/tiny", kg.FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old.arrow")
	writeCheckpoint(t, old, model.RoConE, 8, 1)
	withDigest := filepath.Join(dir, "new.arrow")
	editCheckpoint(t, old, withDigest, func(k *artifact.Checkpoint) { k.Meta.EntitiesDigest = d.EntityDigest() })
	// Another KG of the same counts: tiny with one entity renamed, under the same name.
	other := filepath.Join(t.TempDir(), "tiny")
	os.MkdirAll(other, 0o755)
	for _, f := range []string{"train.tsv", "valid.tsv", "test.tsv", "relations.tsv", "entities.tsv"} {
		b, err := os.ReadFile(filepath.Join("../../testdata/tiny", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "entities.tsv" {
			b = bytes.Replace(b, []byte("\tent5\n"), []byte("\tsomeone-else\n"), 1)
		}
		os.WriteFile(filepath.Join(other, f), b, 0o644)
	}
	renamed := filepath.Join(t.TempDir(), "nell")
	os.Rename(other, renamed)
	out := filepath.Join(dir, "ranks.arrow")
	tests := []struct {
		name, ck, data string
		want           string // error substring; "" for success
		warn           string
	}{
		// These checkpoints record no KG digest (as one imported from QE-ConE): said on the log.
		{"same KG", withDigest, "../../testdata/tiny", "", "records no KG digest (trained outside this pipeline?): that " + queries + " is of its KG is checked by dataset name and counts only"},
		{"other entity table", withDigest, renamed, "is not the one", ""},
		{"old checkpoint, same name", old, "../../testdata/tiny", "", "records no entity-table digest"},
		{"old checkpoint, other name", old, renamed, `is dataset "nell", but`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(out)
			var log bytes.Buffer
			err := Rank(RankConfig{Checkpoint: tc.ck, Queries: queries, Output: out, TopK: 3, Data: tc.data, Kernels: compute.Reference[float32]{}, Log: &log})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(log.String(), tc.warn) {
					t.Errorf("log %q lacks %q", log.String(), tc.warn)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("ranks written")
			}
		})
	}
	// The queries artifact records the digest it was sampled with.
	qm, _, err := artifact.ReadQueries(queries)
	if err != nil || qm.EntitiesDigest != d.EntityDigest() || qm.EntitiesDigest == "" {
		t.Errorf("queries entities_digest %q, want %q (%v)", qm.EntitiesDigest, d.EntityDigest(), err)
	}
}

// TestNonFiniteCheckpoint: embed, rank and metrics patterns refuse the same checkpoint,
// with the same message, through one check.
func TestNonFiniteCheckpoint(t *testing.T) {
	dir := t.TempDir()
	queries := fixture(t, dir)
	good := filepath.Join(dir, "good.arrow")
	writeCheckpoint(t, good, model.RoConE, 8, 1)
	bad := filepath.Join(dir, "nan.arrow")
	editCheckpoint(t, good, bad, func(k *artifact.Checkpoint) {
		for i := range k.Tensors {
			if k.Tensors[i].Name == "entity" && k.Tensors[i].Role == artifact.RoleParam {
				k.Tensors[i].Values[3*8+2] = float32(math.NaN())
			}
		}
	})
	out := filepath.Join(dir, "out.arrow")
	ref := compute.Reference[float32]{}
	for name, run := range map[string]func() error{
		"embed":    func() error { return Embed(EmbedConfig{Checkpoint: bad, Queries: queries, Output: out, Kernels: ref}) },
		"rank":     func() error { return Rank(RankConfig{Checkpoint: bad, Queries: queries, Output: out, Kernels: ref}) },
		"patterns": func() error { return Patterns(PatternsConfig{Checkpoint: bad, Top: 3}, io.Discard) },
	} {
		before := snapshot(t, dir)
		err := run()
		if err == nil || !strings.Contains(err.Error(), "nan.arrow: parameter entity[3, 2] is NaN") {
			t.Errorf("%s: error %v", name, err)
		}
		sameFiles(t, before, snapshot(t, dir))
	}
	if err := Patterns(PatternsConfig{Checkpoint: good, Top: -3}, io.Discard); err == nil || !strings.Contains(err.Error(), "--top -3") {
		t.Errorf("patterns --top -3: %v", err)
	}
	if err := Patterns(PatternsConfig{Checkpoint: good, Top: 0}, io.Discard); err == nil || !strings.Contains(err.Error(), "--top 0") {
		t.Errorf("patterns --top 0: %v", err)
	}
}

// TestComparable: the published rows (test-split results of three datasets) go beside
// ours only where they compare; otherwise the table says why they are left out.
func TestComparable(t *testing.T) {
	for _, c := range []struct {
		compare        bool
		dataset, split string
		want           bool
		note           string
	}{
		{false, "FB15k-237", "test", false, ""},
		{true, "FB15k-237", "test", true, ""},
		{true, "nell", "test", true, ""},
		{true, "FB15k-237", "valid", false, "(--compare: the published rows are of the test queries, these ranks of the valid split: not comparable, left out)"},
		{true, "tiny", "test", false, "(--compare: no published results for dataset \"tiny\""},
	} {
		got, note := comparable(c.compare, c.dataset, c.split)
		if got != c.want || !strings.HasPrefix(note, c.note) || (c.note == "") != (note == "") {
			t.Errorf("comparable(%v, %q, %q) = %v, %q; want %v, %q...", c.compare, c.dataset, c.split, got, note, c.want, c.note)
		}
	}
}
