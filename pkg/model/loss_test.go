package model

import (
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
