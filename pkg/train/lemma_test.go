package train_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/checkpoint"
	"github.com/rocone/rocone/pkg/compute/cpu"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
	"github.com/rocone/rocone/pkg/report"
	"github.com/rocone/rocone/pkg/sample"
	"github.com/rocone/rocone/pkg/train"
)

// The paper's lemmas as tests. A relation r of RoConE rotates a cone's axis by
// θ_r = π·tanh(A_r/R) (docs/model.md §3), so on a KG whose relations are rotations a trained
// model should learn
//
//	symmetry     r∘r = 1       2θ_s ≡ 0
//	inversion    r1∘r2 = 1     θ_A + θ_B ≡ 0        (B(y,x) ⟺ A(x,y), B a different base relation)
//	composition  r1∘r2 = r3    θ_A + θ_D ≡ θ_C      (C(x,z) ⟺ ∃y A(x,y) ∧ D(y,z))
//
// each measured by report.MeanAngularError (the mean over dimensions of |wrap(Σ angles)|)
// and required below lemmaTol on the forward relation ids.
//
// # The KG
//
// Entities are the points (i, j, p) of an n×n box with a parity bit p (n = 8: 128
// entities). The relations are planted rotations of that grid:
//
//	sym  (i, j, p) ↔ (i, j, 1−p)             symmetric
//	a    (i, j, p) → (i+1, j, p)             while inside the box
//	b    (i+1, j, p) → (i, j, p)             a's inverse, as a base relation of its own
//	d    (i, j, p) → (i, j+1, p)
//	c    (i, j, p) → (i+1, j+1, p)           = a∘d exactly (the box has every midpoint)
//
// Every relation is one-to-one, so each lemma is exactly satisfiable: with entity angles
// e(i,j,p) = α·i + β·j + π·p per dimension, θ_a = α, θ_b = −α, θ_d = β, θ_c = α+β and
// θ_sym = π (or 0 where the dimension ignores p).
//
// # Design choices, and what they are for
//
// The rotation angles live in the open interval (−π, π): π·tanh has no wrap-around. A
// rotation whose path to the value that the entity layout asks for crosses ±π is pushed
// into tanh saturation at ±π and stays there for good (the gradient keeps pointing across
// the seam); the relation then covers that dimension with a wide aperture instead of using
// it, or just misses its targets there. Every such trapped (relation, dimension) pair adds
// |target ∓ π|/d to a lemma error. The trap is decided in the first few dozen steps, by
// the random initialisation,
// so it is a property of the seed, not of floating-point rounding (the reference, pure-Go
// and assembly kernels give the same outcome per seed). The choices below keep traps rare:
//
//   - The box has no wrap-around (a torus Z_8×Z_8 forces θ onto multiples of 2π/8, and
//     0 of 8 seeds met the tolerance): the layout can adapt to the rotations instead.
//   - Only the forward 1p queries are trained. BetaE's automatic inverse ids (2k+1) are
//     two more independently initialised rotations per base relation that must agree with
//     the layout; with them 1 seed in 12 met all three tolerances, without them 12 in 20.
//   - γ = 2 and λ = 1: a small margin keeps the positive term's gradient alive and λ = 1
//     pulls positives onto the axis, which is what makes the rotations exact.
//
// Because some seeds still trap a rotation, the test trains the seeds of lemmaSeeds in
// order and takes the first model that meets every lemma (all of them do today); it fails
// if none does, with the per-dimension diagnosis. That keeps the test deterministic and
// robust to unrelated changes of the random streams (each seed meets all three lemmas
// with probability about 0.6), while a model that cannot learn the lemmas fails.
//
// # Controls
//
// The same lemma errors of the untrained model (the initialisation of the same seed) and
// of pairs with no planted pattern in the trained model (a is not symmetric, a and d are
// not inverse, a∘sym is not c) must exceed controlMin, ten times the tolerance. And the
// model must answer 2p queries (x, a, d), a structure it never trained on, as well as the
// 1p queries (x, c): its 2p MRR must be high and close to the 1p MRR, far above the
// untrained model's and above a wrong path (x, a, sym).
const (
	lemmaTol   = 0.05 // rad, the acceptance tolerance of every lemma
	controlMin = 0.5  // rad, the least error of a control
	lemmaBox   = 8    // n, the side of the entity box
)

// lemmaSeeds are the seeds tried in order; the first model that meets every lemma is
// checked.
var lemmaSeeds = []uint64{5, 7, 10, 13}

func TestLemmas(t *testing.T) {
	if testing.Short() {
		t.Skip("trains RoConE models (a few seconds each)")
	}
	dir := t.TempDir()
	g := writeLemmaKG(t, filepath.Join(dir, "lemmas"), lemmaBox)
	trainFile := g.forwardQueries(t, filepath.Join(dir, "train.arrow"))
	kernels := cpu.New(cpu.Options{})

	var tried []string
	for _, seed := range lemmaSeeds {
		start := time.Now()
		m := trainLemmaModel(t, trainFile, filepath.Join(dir, fmt.Sprintf("seed%d.ckpt", seed)), seed, kernels)
		e := g.lemmaErrors(m)
		t.Logf("seed %d (trained in %.1fs): %s", seed, time.Since(start).Seconds(), e)
		if !e.met() {
			t.Logf("seed %d misses a lemma:\n%s", seed, g.diagnose(m))
			tried = append(tried, fmt.Sprintf("seed %d: %s", seed, e))
			continue
		}
		g.checkModel(t, m, e)
		return
	}
	t.Fatalf("no seed of %v gave a model meeting every lemma (tolerance %.2f rad):\n%s",
		lemmaSeeds, lemmaTol, strings.Join(tried, "\n"))
}

// checkModel checks the controls and the 2p answers of a model that meets the lemmas.
func (g *lemmaKG) checkModel(t *testing.T, m *model.Model[float32], e lemmaErrors) {
	untrained, err := model.New[float32](m.Config, m.Kernels)
	if err != nil {
		t.Fatal(err)
	}
	u := g.lemmaErrors(untrained)
	t.Logf("untrained (seed %d): %s", m.Config.Seed, u)
	for _, c := range []struct {
		what string
		err  float64
	}{
		{"untrained r∘r for sym", u.Sym}, {"untrained a∘b", u.Inv}, {"untrained a∘d−c", u.Comp},
		{"trained a∘a (a is not symmetric)", e.SymA}, {"trained a∘d (not inverse)", e.InvAD},
		{"trained a∘sym−c (not a composition)", e.CompASymC},
	} {
		if c.err < controlMin {
			t.Errorf("control %s: error %.4f rad, want ≥ %.2f: the lemma errors do not tell a learned pattern from none", c.what, c.err, controlMin)
		}
	}

	// 2p (x, a, d) against 1p (x, c), over every fact c(x, z); z is the only answer.
	mrr1p, mrr2p, mrrWrong := g.pathMRRs(t, m)
	_, u2p, _ := g.pathMRRs(t, untrained)
	t.Logf("MRR: 1p (x, c) %.3f, 2p (x, a, d) %.3f; wrong path 2p (x, a, sym) %.3f; untrained 2p (x, a, d) %.3f",
		mrr1p, mrr2p, mrrWrong, u2p)
	if mrr2p < 0.9 || mrr2p < mrr1p-0.05 {
		t.Errorf("2p (x, a, d) MRR %.3f, want ≥ 0.9 and within 0.05 of the 1p (x, c) MRR %.3f", mrr2p, mrr1p)
	}
	if u2p > 0.2 || mrrWrong > 0.2 {
		t.Errorf("controls: untrained 2p MRR %.3f and wrong-path 2p MRR %.3f, want both ≤ 0.2", u2p, mrrWrong)
	}
}

// lemmaKG is the planted KG written to a dataset folder, with its ids.
type lemmaKG struct {
	dir string
	n   int
	ds  *kg.Dataset
	rel map[string]int32 // forward id by relation name
}

// writeLemmaKG writes the box KG (see above) as raw named triples and loads it.
func writeLemmaKG(t *testing.T, dir string, n int) *lemmaKG {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := func(i, j, p int) string { return fmt.Sprintf("e%d.%d.%d", i, j, p) }
	var b strings.Builder
	for _, r := range []struct {
		name   string
		di, dj int
	}{{"sym", 0, 0}, {"a", 1, 0}, {"b", -1, 0}, {"d", 0, 1}, {"c", 1, 1}} {
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				for p := 0; p < 2; p++ {
					switch i2, j2 := i+r.di, j+r.dj; {
					case r.name == "sym":
						fmt.Fprintf(&b, "%s\tsym\t%s\n", name(i, j, p), name(i, j, 1-p))
					case i2 >= 0 && i2 < n && j2 >= 0 && j2 < n:
						fmt.Fprintf(&b, "%s\t%s\t%s\n", name(i, j, p), r.name, name(i2, j2, p))
					}
				}
			}
		}
	}
	files := map[string]string{"train.tsv": b.String(), "valid.tsv": "", "test.tsv": ""}
	for f, text := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := kg.Load(dir, kg.FormatNames)
	if err != nil {
		t.Fatal(err)
	}
	g := &lemmaKG{dir: dir, n: n, ds: ds, rel: map[string]int32{}}
	for id, s := range ds.RelationNames {
		if strings.HasPrefix(s, "+") {
			g.rel[s[1:]] = int32(id)
		}
	}
	if ds.NumEntities != 2*n*n || len(g.rel) != 5 {
		t.Fatalf("the planted KG has %d entities and relations %v", ds.NumEntities, ds.RelationNames)
	}
	return g
}

// forwardQueries samples the 1p train queries of every fact with pkg/sample and writes
// those on forward relation ids to path.
func (g *lemmaKG) forwardQueries(t *testing.T, path string) string {
	t.Helper()
	all := path + ".all"
	opts := sample.Options{Types: []string{"1p"}, Counts: map[string]int{"1p": 1 << 30}, Seed: 1, Workers: 1}
	if err := sample.GenerateToFile(context.Background(), sample.Source{Dir: g.dir, Format: kg.FormatNames},
		"train", opts, all, nil); err != nil {
		t.Fatal(err)
	}
	meta, rows, err := artifact.ReadQueries(all)
	if err != nil {
		t.Fatal(err)
	}
	var fwd []artifact.Query
	for _, q := range rows {
		if q.Relations[0]%2 == 0 {
			q.ID = int64(len(fwd))
			fwd = append(fwd, q)
		}
	}
	if err := artifact.WriteQueries(path, meta, fwd); err != nil {
		t.Fatal(err)
	}
	return path
}

// trainLemmaModel trains a rocone model on the train file and reads it back.
func trainLemmaModel(t *testing.T, trainFile, ckpt string, seed uint64, kernels *cpu.Backend) *model.Model[float32] {
	t.Helper()
	cfg, err := train.NewConfig("", []train.Setting{
		{Key: "model", Value: string(model.RoConE)},
		{Key: "dim", Value: 16},
		{Key: "batch", Value: 128},
		{Key: "negatives", Value: 32},
		{Key: "gamma", Value: 2.0},
		{Key: "lr", Value: 0.01},
		{Key: "lambda", Value: 1.0},
		{Key: "dropout", Value: 0.0},
		{Key: "steps", Value: 1000},
		{Key: "eval_every", Value: 0},
		{Key: "checkpoint_every", Value: 0},
		{Key: "seed", Value: seed},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := train.Run(context.Background(), cfg, train.Options{Train: trainFile, Checkpoint: ckpt, Kernels: kernels}); err != nil {
		t.Fatal(err)
	}
	m, _, err := checkpoint.Load(ckpt, kernels)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// axisAngles is relation r's axis rotation θ = π·tanh(A_r/R), per dimension.
func axisAngles(m *model.Model[float32], r int32) []float64 {
	d, R := m.Config.Dim, m.Config.EmbeddingRange()
	out := make([]float64, d)
	for j := range out {
		out[j] = math.Pi * math.Tanh(float64(m.Params.RelAxis[int(r)*d+j])/R)
	}
	return out
}

func negated(x []float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = -v
	}
	return y
}

// lemmaErrors are the lemma errors of the planted patterns and of the controls, in rad.
type lemmaErrors struct {
	Sym, Inv, Comp         float64 // sym∘sym, a∘b, a∘d − c
	SymA, InvAD, CompASymC float64 // a∘a, a∘d, a∘sym − c: no planted pattern
}

func (e lemmaErrors) met() bool { return e.Sym < lemmaTol && e.Inv < lemmaTol && e.Comp < lemmaTol }

func (e lemmaErrors) String() string {
	return fmt.Sprintf("symmetry %.4f, inversion %.4f, composition %.4f (controls: a∘a %.4f, a∘d %.4f, a∘sym−c %.4f)",
		e.Sym, e.Inv, e.Comp, e.SymA, e.InvAD, e.CompASymC)
}

func (g *lemmaKG) lemmaErrors(m *model.Model[float32]) lemmaErrors {
	th := func(r string) []float64 { return axisAngles(m, g.rel[r]) }
	return lemmaErrors{
		Sym:       report.MeanAngularError(th("sym"), th("sym")),
		Inv:       report.MeanAngularError(th("a"), th("b")),
		Comp:      report.MeanAngularError(th("a"), th("d"), negated(th("c"))),
		SymA:      report.MeanAngularError(th("a"), th("a")),
		InvAD:     report.MeanAngularError(th("a"), th("d")),
		CompASymC: report.MeanAngularError(th("a"), th("sym"), negated(th("c"))),
	}
}

// diagnose lists, per dimension, the rotations and half-aperture offsets of the planted
// relations and the three lemma sums, marking the dimensions whose sums miss.
func (g *lemmaKG) diagnose(m *model.Model[float32]) string {
	d, R := m.Config.Dim, m.Config.EmbeddingRange()
	names := []string{"sym", "a", "b", "d", "c"}
	th := map[string][]float64{}
	for _, r := range names {
		th[r] = axisAngles(m, g.rel[r])
	}
	wrap := func(x float64) float64 { return math.Remainder(x, 2*math.Pi) }
	var b strings.Builder
	fmt.Fprintf(&b, "dim  θ_sym   θ_a    θ_b    θ_d    θ_c  |  2θ_sym  θ_a+θ_b  θ_a+θ_d−θ_c  |  |φ_a|  |φ_b|  |φ_c|\n")
	for j := 0; j < d; j++ {
		sums := []float64{wrap(2 * th["sym"][j]), wrap(th["a"][j] + th["b"][j]), wrap(th["a"][j] + th["d"][j] - th["c"][j])}
		mark := ""
		for _, s := range sums {
			if !(math.Abs(s) <= 0.1) {
				mark = "  <- miss"
			}
		}
		fmt.Fprintf(&b, "%3d", j)
		for _, r := range names {
			fmt.Fprintf(&b, " %+.2f", th[r][j])
		}
		fmt.Fprintf(&b, "  |  %+.3f  %+.3f  %+.3f  |", sums[0], sums[1], sums[2])
		for _, r := range []string{"a", "b", "c"} {
			fmt.Fprintf(&b, "  %.2f", math.Abs(math.Pi*math.Tanh(float64(m.Params.RelAperture[int(g.rel[r])*d+j])/R)))
		}
		fmt.Fprintf(&b, "%s\n", mark)
	}
	b.WriteString("(a rotation stuck at ±3.14 where the others ask for another angle is trapped at the tanh seam)")
	return b.String()
}

// pathMRRs ranks, for every fact c(x, z), the queries 1p (x, c), 2p (x, a, d) and the
// wrong path 2p (x, a, sym), each with z as its only (hard) answer and no easy answers,
// and returns their MRRs.
func (g *lemmaKG) pathMRRs(t *testing.T, m *model.Model[float32]) (oneP, twoP, wrong float64) {
	t.Helper()
	s1, err := query.ByName("1p")
	if err != nil {
		t.Fatal(err)
	}
	s2, err := query.ByName("2p")
	if err != nil {
		t.Fatal(err)
	}
	sets := make([][]eval.RankQuery, 3)
	for _, f := range g.ds.Train {
		if f.Relation != g.rel["c"] {
			continue
		}
		q := func(s *query.Structure, rels ...int32) eval.RankQuery {
			return eval.RankQuery{Type: s.Name(), Query: query.Grounded{Structure: s, Anchors: []int32{f.Head}, Relations: rels},
				Easy: []int32{}, Hard: []int32{f.Tail}}
		}
		sets[0] = append(sets[0], q(s1, g.rel["c"]))
		sets[1] = append(sets[1], q(s2, g.rel["a"], g.rel["d"]))
		sets[2] = append(sets[2], q(s2, g.rel["a"], g.rel["sym"]))
	}
	if want := 2 * (g.n - 1) * (g.n - 1); len(sets[0]) != want {
		t.Fatalf("%d facts of c, want %d", len(sets[0]), want)
	}
	mrr := make([]float64, 3)
	for i, qs := range sets {
		ranks, err := eval.RankQueries(context.Background(), m, qs, eval.RankOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := eval.Summarize(qs, ranks)
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.Types) != 1 {
			t.Fatalf("summary of %d types, want 1", len(sum.Types))
		}
		mrr[i] = sum.Types[0].MRR
	}
	return mrr[0], mrr[1], mrr[2]
}
