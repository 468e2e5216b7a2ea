package model

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/rocone/rocone/pkg/query"
)

// customStructures are structures outside the named types, to show that nothing depends
// on a type's name: nested intersections, negation of an intersection, a negated anchor,
// and an intersection of two unions, whose DNF has four branches sharing sub-trees.
var customStructures = []string{
	"(((('e',('r',)),('e',('r','n'))),('r','n')),('e',('r','r')),('e',('n','r')))",
	"((('e',('r',)),('e',('r',)),('u',)),(('e',('r',)),('e',('r','n')),('u',)))",
}

// testConfig is a small model: d = 4, R = (γ+2)/d = 1, hidden width 5, dropout 0.3.
func testConfig(v Variant) Config {
	return Config{Variant: v, NumEntities: 12, NumRelations: 5, Dim: 4, Gamma: 2, CenterReg: 0.3,
		Drop: 0.3, ConeHidden: 5}
}

// spreadParams redraws the tables over ±3R so that entity and relation angles come
// close to ±π and apertures after rotation come close to 0 and π.
func spreadParams(p *Params[float64], cfg Config, rng *rand.Rand) {
	R := cfg.EmbeddingRange()
	for _, tab := range [][]float64{p.Entity, p.RelAxis, p.RelAperture} {
		for i := range tab {
			tab[i] = (2*rng.Float64() - 1) * 3 * R
		}
	}
	for i := range p.RelShift {
		p.RelShift[i] = (2*rng.Float64() - 1) * 2
	}
}

// checkFullLoss gradient-checks the whole loss of a batch with respect to every
// parameter. The dropout masks are redrawn from the same seed at every evaluation, so
// the loss is a deterministic function of the parameters.
func checkFullLoss(t *testing.T, v Variant, structures []*query.Structure, seed uint64) {
	t.Helper()
	gradTestStep(t, seed, 1e-4, func(rng *rand.Rand) (func() float64, []fdParam) {
		cfg := testConfig(v)
		cfg.Seed = rng.Uint64()
		m, err := New[float64](cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		spreadParams(m.Params, cfg, rng)
		batch := RandomBatch(rng, cfg, structures, 3, 3)
		dropSeed := rng.Uint64()
		forward := func() *LossTape[float64] {
			lt, err := m.Loss(batch, rand.New(rand.NewPCG(dropSeed, 1)))
			if err != nil {
				t.Fatal(err)
			}
			return lt
		}
		g := m.NewGrads()
		forward().Backward(g)
		f := func() float64 { return forward().Loss }
		var ps []fdParam
		grads := g.Tensors()
		for i, p := range m.Params.Tensors() {
			ps = append(ps, fdParam{p.Name, p.Data, grads[i].Data})
		}
		return f, ps
	})
}

func TestFullLossGrad(t *testing.T) {
	type tc struct {
		name string
		s    *query.Structure
	}
	var cases []tc
	for _, ty := range query.Types {
		cases = append(cases, tc{ty.Name, query.MustParse(ty.Notation)})
	}
	for i, n := range customStructures {
		cases = append(cases, tc{"custom" + string(rune('1'+i)), query.MustParse(n)})
	}
	for vi, v := range Variants {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			for ci, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					checkFullLoss(t, v, []*query.Structure{c.s}, uint64(100*vi+ci))
				})
			}
		})
	}
}

// TestFullLossGradMixed checks a batch mixing structures (grouping by structure).
func TestFullLossGradMixed(t *testing.T) {
	var ss []*query.Structure
	for _, name := range []string{"1p", "2i", "up", "pin", "2u-DM"} {
		s, _ := query.ByName(name)
		ss = append(ss, s)
	}
	for vi, v := range Variants {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			checkFullLoss(t, v, ss, uint64(1000+vi))
		})
	}
}

// TestParallelRowsAndJobs: parallelRows' ranges and parallelJobs' jobs cover [0, n) once
// each, whether they run on one goroutine or several.
func TestParallelRowsAndJobs(t *testing.T) {
	for _, procs := range []int{1, 3} {
		prev := runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, parallelMinRows - 1, 2 * parallelMinRows, 3*parallelMinRows + 7, 20 * parallelMinRows} {
			rows := make([]atomic.Int32, n)
			var calls atomic.Int32
			parallelRows(n, func(lo, hi int) {
				calls.Add(1)
				if lo > hi {
					t.Errorf("n %d: range [%d, %d)", n, lo, hi)
				}
				for i := lo; i < hi; i++ {
					rows[i].Add(1)
				}
			})
			jobs := make([]atomic.Int32, n)
			parallelJobs(n, func(j int) { jobs[j].Add(1) })
			for i := range n {
				if rows[i].Load() != 1 || jobs[i].Load() != 1 {
					t.Fatalf("GOMAXPROCS %d, n %d: row %d covered %d times, job %d run %d times", procs, n, i, rows[i].Load(), i, jobs[i].Load())
				}
			}
			if want := max(1, min(procs, n/parallelMinRows)); int(calls.Load()) != want {
				t.Errorf("GOMAXPROCS %d, n %d: %d ranges, want %d", procs, n, calls.Load(), want)
			}
		}
		runtime.GOMAXPROCS(prev)
	}
}

// TestLossParallelRows: a batch with thousands of distinct candidates maps and
// differentiates their angles on several goroutines (parallelRows); loss and gradients are
// bit for bit those of one goroutine.
func TestLossParallelRows(t *testing.T) {
	cfg := Config{Variant: RoConE, NumEntities: 4000, NumRelations: 6, Dim: 8, Gamma: 2, CenterReg: 0.3, Seed: 3}
	m, err := New[float32](cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 5))
	batch := RandomBatch(rng, cfg, []*query.Structure{query.MustParse("('e',('r',))"), query.MustParse("(('e',('r',)),('e',('r',)))")}, 10, 200)
	run := func(procs int) (float64, *Grads[float32], int) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		lt, err := m.Loss(batch, nil)
		if err != nil {
			t.Fatal(err)
		}
		g := m.NewGrads()
		lt.Backward(g)
		return lt.Loss, g, len(lt.entities)
	}
	l1, g1, n := run(1)
	if n < 4*parallelMinRows {
		t.Fatalf("%d distinct candidates: too few for several goroutines", n)
	}
	l4, g4, _ := run(4)
	if math.Float64bits(l1) != math.Float64bits(l4) {
		t.Fatalf("loss %v on one goroutine, %v on four", l1, l4)
	}
	for i, a := range g1.Tensors() {
		b := g4.Tensors()[i]
		for j := range a.Data {
			if math.Float32bits(a.Data[j]) != math.Float32bits(b.Data[j]) {
				t.Fatalf("%s[%d]: %v on one goroutine, %v on four", a.Name, j, a.Data[j], b.Data[j])
			}
		}
	}
}

// TestLossRejectsBatch: a batch without negatives, with too few positives or weights, or
// with a candidate outside the entity table is refused.
func TestLossRejectsBatch(t *testing.T) {
	cfg := testConfig(RoConE)
	m, err := New[float64](cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := query.MustParse("('e',('r',))")
	good := func() *Batch {
		return RandomBatch(rand.New(rand.NewPCG(1, 2)), cfg, []*query.Structure{s}, 2, 3)
	}
	if _, err := m.Loss(good(), nil); err != nil {
		t.Fatalf("a good batch: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*Batch)
		want string
	}{
		{"no negatives", func(b *Batch) { b.NumNegative, b.Negative = 0, nil }, "model: malformed batch: 2 queries, 2 positives, 0 negatives (k=0), 2 weights"},
		{"no queries", func(b *Batch) { b.Queries, b.Positive, b.Weight, b.Negative = nil, nil, nil, nil }, "model: malformed batch: 0 queries, 0 positives, 0 negatives (k=3), 0 weights"},
		{"a positive short", func(b *Batch) { b.Positive = b.Positive[:1] }, "model: malformed batch: 2 queries, 1 positives, 6 negatives (k=3), 2 weights"},
		{"a weight short", func(b *Batch) { b.Weight = b.Weight[:1] }, "model: malformed batch: 2 queries, 2 positives, 6 negatives (k=3), 1 weights"},
		{"a negative short", func(b *Batch) { b.Negative = b.Negative[:5] }, "model: malformed batch: 2 queries, 2 positives, 5 negatives (k=3), 2 weights"},
		{"positive past the table", func(b *Batch) { b.Positive[1] = int32(cfg.NumEntities) }, "model: candidate entity 12 out of range [0,12)"},
		{"negative past the table", func(b *Batch) { b.Negative[4] = int32(cfg.NumEntities) }, "model: candidate entity 12 out of range [0,12)"},
		{"negative id", func(b *Batch) { b.Negative[0] = -1 }, "model: candidate entity -1 out of range [0,12)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := good()
			c.edit(b)
			if _, err := m.Loss(b, nil); err == nil || err.Error() != c.want {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
	// A refused batch leaves the candidates' table clean for the next.
	if _, err := m.Loss(good(), nil); err != nil {
		t.Fatalf("a good batch after refused ones: %v", err)
	}
}
