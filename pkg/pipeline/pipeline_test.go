package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/ipc"

	"github.com/rocone/rocone/internal/artifacttest"
	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/checkpoint"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
	"github.com/rocone/rocone/pkg/sample"
)

// fixture writes test queries for the tiny KG (every named type but the train-only
// structures, a few of each) and returns their path.
func fixture(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "test-queries.arrow")
	counts := map[string]int{"1p": 30}
	var types []string
	for _, typ := range query.Types {
		types = append(types, typ.Name)
		if typ.Name != "1p" {
			counts[typ.Name] = 12
		}
	}
	err := sample.GenerateToFile(context.Background(), sample.Source{Dir: "../../testdata/tiny"}, "test",
		sample.Options{Types: types, Counts: counts, Seed: 5}, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// writeCheckpoint writes a randomly initialised model of the tiny KG as a checkpoint.
func writeCheckpoint(t *testing.T, path string, variant model.Variant, dim int, seed uint64) {
	t.Helper()
	cfg := model.Config{Variant: variant, NumEntities: 82, NumRelations: 10, Dim: dim, Gamma: 12, CenterReg: 0.02, ConeHidden: 16, Seed: seed}
	p := model.NewParams[float32](cfg)
	p.Init(cfg, seed)
	mc, _ := json.Marshal(cfg)
	ck := &artifact.Checkpoint{Meta: artifact.CheckpointMeta{Model: string(variant), Dim: dim, Dataset: "tiny", NumEntities: 82, NumRelations: 10,
		LR: 1e-4, Config: `{"Seed":` + strings.TrimSpace(string(must(json.Marshal(seed)))) + `}`, ModelConfig: string(mc), State: "{}"},
		Tensors: checkpoint.Tensors(p.Tensors(), nil, nil)}
	if err := artifact.WriteCheckpoint(path, ck); err != nil {
		t.Fatal(err)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestThreeWaysAgree: ranks from stored cones, ranks embedding the queries in `rank`, and
// ranks computed here from the model's own scorer are the same, bit for bit.
func TestThreeWaysAgree(t *testing.T) {
	dir := t.TempDir()
	queries := fixture(t, dir)
	for _, variant := range []model.Variant{model.RoConE, model.ConE} {
		ck := filepath.Join(dir, string(variant)+".arrow")
		writeCheckpoint(t, ck, variant, 8, 1)
		cones := filepath.Join(dir, "cones.arrow")
		if err := Embed(EmbedConfig{Checkpoint: ck, Queries: queries, Output: cones, Kernels: compute.Reference[float32]{}}); err != nil {
			t.Fatal(err)
		}
		fromCones, direct := filepath.Join(dir, "r1.arrow"), filepath.Join(dir, "r2.arrow")
		if err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Cones: cones, Output: fromCones, TopK: 3, Data: "../../testdata/tiny", Kernels: compute.Reference[float32]{}}); err != nil {
			t.Fatal(err)
		}
		if err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: direct, Kernels: compute.Reference[float32]{}, Workers: 3}); err != nil {
			t.Fatal(err)
		}
		_, a, err := artifact.ReadRanks(fromCones)
		if err != nil {
			t.Fatal(err)
		}
		_, b, _ := artifact.ReadRanks(direct)
		// The third way: the scorer on every query, one at a time.
		m, _, err := checkpoint.Load(ck, compute.Reference[float32]{})
		if err != nil {
			t.Fatal(err)
		}
		_, qs, _ := artifact.ReadQueries(queries)
		scorer := m.NewScorer()
		var c []artifact.Rank
		for _, q := range qs {
			s, _ := query.Parse(q.Structure)
			scores := make([]float32, 82)
			if err := scorer.Score(scores, []query.Grounded{{Structure: s, Anchors: q.Anchors, Relations: q.Relations}}); err != nil {
				t.Fatal(err)
			}
			ranks, err := eval.FilteredRanks(scores, q.Easy, q.Hard, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, h := range q.Hard {
				c = append(c, artifact.Rank{ID: q.ID, Type: q.Type, Answer: h, Rank: ranks[i]})
			}
		}
		key := func(rs []artifact.Rank) []string {
			var out []string
			for _, r := range rs {
				out = append(out, fmt.Sprint(r.ID, r.Type, r.Answer, r.Rank))
			}
			return out
		}
		if !slices.Equal(key(a), key(b)) || !slices.Equal(key(a), key(c)) || len(a) == 0 {
			t.Fatalf("%s: ranks differ: from cones %d rows, direct %d, scorer %d", variant, len(a), len(b), len(c))
		}
	}
}

func TestFilteredRanksHandBuilt(t *testing.T) {
	// Scores of 6 entities; hard {1, 4}, easy {0, 5}.
	//   entity:  0    1    2    3    4    5
	//   score:   9    5    7    5    1    3
	// Entity 1 (score 5): above it non-answers 2 (7); 3 ties at 5 with a larger id → rank 2.
	// Entity 4 (score 1): above it non-answers 2, 3 → rank 3; easy 0 and 5 and hard 1 are filtered.
	ranks, err := eval.FilteredRanks([]float32{9, 5, 7, 5, 1, 3}, []int32{0, 5}, []int32{1, 4}, nil)
	if err != nil || !slices.Equal(ranks, []int32{2, 3}) {
		t.Fatalf("ranks %v %v", ranks, err)
	}
	// Every entity is an answer: each hard answer is first.
	ranks, _ = eval.FilteredRanks([]float32{1, 2, 3}, []int32{0}, []int32{1, 2}, nil)
	if !slices.Equal(ranks, []int32{1, 1}) {
		t.Fatalf("all answers: %v", ranks)
	}
	// A tie between a hard answer and a non-answer of a smaller id puts the non-answer first.
	ranks, _ = eval.FilteredRanks([]float32{4, 4}, nil, []int32{1}, nil)
	if !slices.Equal(ranks, []int32{2}) {
		t.Fatalf("tie: %v", ranks)
	}
}

// TestMetricsOverSeeds runs two seeds through embed, rank and metrics and checks the
// table's mean ± std against a direct computation.
func TestMetricsOverSeeds(t *testing.T) {
	dir := t.TempDir()
	queries := fixture(t, dir)
	var ranks []string
	perSeed := map[string][]float64{} // type -> MRR per seed
	for seed := uint64(1); seed <= 2; seed++ {
		ck := filepath.Join(dir, "m"+string(rune('0'+seed))+".arrow")
		writeCheckpoint(t, ck, model.RoConE, 6, seed)
		out := filepath.Join(dir, "ranks"+string(rune('0'+seed))+".arrow")
		if err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: out, Kernels: compute.Reference[float32]{}}); err != nil {
			t.Fatal(err)
		}
		ranks = append(ranks, out)
		_, rows, _ := artifact.ReadRanks(out)
		sums := map[string]float64{}
		per := map[int64][]int32{}
		typeOf := map[int64]string{}
		for _, r := range rows {
			per[r.ID] = append(per[r.ID], r.Rank)
			typeOf[r.ID] = r.Type
		}
		counts := map[string]int{}
		for id, rs := range per {
			m := 0.0
			for _, r := range rs {
				m += 1 / float64(r)
			}
			sums[typeOf[id]] += m / float64(len(rs))
			counts[typeOf[id]]++
		}
		for typ, s := range sums {
			perSeed[typ] = append(perSeed[typ], s/float64(counts[typ]))
		}
	}
	var table bytes.Buffer
	metricsOut := filepath.Join(dir, "metrics.arrow")
	if err := Metrics(MetricsConfig{Ranks: ranks, Output: metricsOut, Compare: true, Plot: filepath.Join(dir, "mrr.svg"), Resamples: 50}, &table); err != nil {
		t.Fatal(err)
	}
	_, rows, err := artifact.ReadMetrics(metricsOut)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range rows {
		want, ok := perSeed[r.Name]
		if r.Kind != "type" || !ok {
			continue
		}
		mean := (want[0] + want[1]) / 2
		std := math.Abs(want[0]-want[1]) / math.Sqrt2 // sample std of two values
		if !(math.Abs(r.MRR.Mean-mean) <= 1e-12) || !(math.Abs(r.MRR.Std-std) <= 1e-12) || r.Seeds != 2 {
			t.Errorf("%s: mean %v std %v, want %v %v", r.Name, r.MRR.Mean, r.MRR.Std, mean, std)
		}
		checked++
	}
	if checked < 14 || !strings.Contains(table.String(), "±") || !strings.Contains(table.String(), "no published results for dataset \"tiny\"") {
		t.Fatalf("checked %d types; table:\n%s", checked, table.String())
	}
}

// TestBadInputs: each a clear error naming the file and the fault, and no output.
func TestBadInputs(t *testing.T) {
	dir := t.TempDir()
	queries := fixture(t, dir)
	ck8, ck6 := filepath.Join(dir, "d8.arrow"), filepath.Join(dir, "d6.arrow")
	writeCheckpoint(t, ck8, model.RoConE, 8, 1)
	writeCheckpoint(t, ck6, model.RoConE, 6, 1)
	cones8 := filepath.Join(dir, "cones8.arrow")
	if err := Embed(EmbedConfig{Checkpoint: ck8, Queries: queries, Output: cones8, Kernels: compute.Reference[float32]{}}); err != nil {
		t.Fatal(err)
	}
	// A second queries file (another seed) for mixing.
	other := filepath.Join(dir, "other.arrow")
	if err := sample.GenerateToFile(context.Background(), sample.Source{Dir: "../../testdata/tiny"}, "test",
		sample.Options{Types: []string{"1p", "2p"}, Counts: map[string]int{"2p": 5}, Seed: 9}, other, nil); err != nil {
		t.Fatal(err)
	}
	r1, r2 := filepath.Join(dir, "r1.arrow"), filepath.Join(dir, "r2.arrow")
	if err := Rank(RankConfig{Checkpoint: ck8, Queries: queries, Output: r1, Kernels: compute.Reference[float32]{}}); err != nil {
		t.Fatal(err)
	}
	if err := Rank(RankConfig{Checkpoint: ck8, Queries: other, Output: r2, Kernels: compute.Reference[float32]{}}); err != nil {
		t.Fatal(err)
	}
	// The same ranks as an IPC stream (what `rank -o -` writes), cut in the middle.
	cutStream := filepath.Join(dir, "cut-stream.arrow")
	writeStreamPrefix(t, r1, cutStream)
	empty := filepath.Join(dir, "empty.arrow")
	os.WriteFile(empty, nil, 0o644)
	b, _ := os.ReadFile(r1)
	truncated := filepath.Join(dir, "truncated.arrow")
	os.WriteFile(truncated, b[:len(b)/2], 0o644)
	// A truncated stream: what a killed `rank -o -` would leave in a pipe.
	stream := filepath.Join(dir, "stream.arrow")
	if err := artifact.WriteQueries(stream, artifact.QueriesMeta{Split: "test", Dataset: "tiny", NumEntities: 82, NumRelations: 10},
		[]artifact.Query{{ID: 1, Type: "1p", Structure: "('e',('r',))", Anchors: []int32{1}, Relations: []int32{1}, Easy: []int32{}, Hard: []int32{2}}}); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "out.arrow")
	tests := []struct {
		name string
		run  func() error
		want []string
	}{
		{"cones of another dimension", func() error {
			return Rank(RankConfig{Checkpoint: ck6, Queries: queries, Cones: cones8, Output: out, Kernels: compute.Reference[float32]{}})
		}, []string{"cones8.arrow", "dimension 8", "d6.arrow has dimension 6"}},
		{"cones of other queries", func() error {
			return Rank(RankConfig{Checkpoint: ck8, Queries: other, Cones: cones8, Output: out, Kernels: compute.Reference[float32]{}})
		}, []string{"cones8.arrow", "cones of queries"}},
		{"ranks of different query files", func() error {
			return Metrics(MetricsConfig{Ranks: []string{r1, r2}, Output: out}, &bytes.Buffer{})
		}, []string{"r2.arrow", "r1.arrow", "same queries"}},
		{"empty input", func() error {
			return Metrics(MetricsConfig{Ranks: []string{empty}, Output: out}, &bytes.Buffer{})
		}, []string{"empty.arrow", "empty"}},
		{"truncated ranks", func() error {
			return Metrics(MetricsConfig{Ranks: []string{r1, truncated}, Output: out}, &bytes.Buffer{})
		}, []string{"truncated.arrow"}},
		{"truncated ranks stream", func() error {
			return Metrics(MetricsConfig{Ranks: []string{r1, cutStream}, Output: out}, &bytes.Buffer{})
		}, []string{"cut-stream.arrow"}},
		{"queries of another KG", func() error {
			return Embed(EmbedConfig{Checkpoint: ck8, Queries: wrongKG(t, dir), Output: out, Kernels: compute.Reference[float32]{}})
		}, []string{"wrongkg.arrow", "was trained on 82"}},
		{"queries of another dataset", func() error {
			renamed := filepath.Join(dir, "renamed.arrow")
			artifacttest.Edit(t, queries, renamed, func(meta map[string]string, rows []artifacttest.Row) []artifacttest.Row {
				meta["dataset"] = "tinx"
				return rows
			})
			return Rank(RankConfig{Checkpoint: ck8, Queries: renamed, Output: out, Kernels: compute.Reference[float32]{}})
		}, []string{`renamed.arrow: queries of dataset "tinx", but ` + ck8 + ` was trained on "tiny"`}},
		{"ranks as queries", func() error {
			return Embed(EmbedConfig{Checkpoint: ck8, Queries: r1, Output: out, Kernels: compute.Reference[float32]{}})
		}, []string{"r1.arrow", `artifact is "ranks", want "queries"`}},
		{"no ranks", func() error { return Metrics(MetricsConfig{}, &bytes.Buffer{}) }, []string{"no ranks"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s left behind", out)
			}
		})
	}
}

func wrongKG(t *testing.T, dir string) string {
	path := filepath.Join(dir, "wrongkg.arrow")
	d, _ := kg.Load("../../testdata/tiny", kg.FormatAuto)
	if err := artifact.WriteQueries(path, artifact.QueriesMeta{Split: "test", Dataset: "tiny", NumEntities: d.NumEntities + 5, NumRelations: 10},
		[]artifact.Query{{ID: 1, Type: "1p", Structure: "('e',('r',))", Anchors: []int32{1}, Relations: []int32{1}, Easy: []int32{}, Hard: []int32{2}}}); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeStreamPrefix rewrites the artifact at src as an IPC stream and keeps its first
// half at dst: a stream cut off mid-way.
func writeStreamPrefix(t *testing.T, src, dst string) {
	t.Helper()
	r, err := artifact.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(r.Schema()))
	for r.Next() {
		if err := w.Write(r.Record()); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	b := buf.Bytes()
	if err := os.WriteFile(dst, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPatterns(t *testing.T) {
	dir := t.TempDir()
	ck, cone := filepath.Join(dir, "r.arrow"), filepath.Join(dir, "c.arrow")
	writeCheckpoint(t, ck, model.RoConE, 8, 1)
	writeCheckpoint(t, cone, model.ConE, 8, 1)
	var b bytes.Buffer
	if err := Patterns(PatternsConfig{Checkpoint: ck, Top: 3, Data: "../../testdata/tiny"}, &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Symmetric relations", "Inverse pairs", "Compositions", "rel"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	if err := Patterns(PatternsConfig{Checkpoint: cone, Top: 3}, &b); err == nil || !strings.Contains(err.Error(), "MLP") {
		t.Errorf("cone model: %v", err)
	}
}
