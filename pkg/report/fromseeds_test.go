package report

import (
	"math"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/eval"
)

// TestFromSeedsMatchesSummarize: the per-type means of each run, put together by
// FromSeeds, give Summarize's means, standard deviations and paper averages bit for bit.
func TestFromSeedsMatchesSummarize(t *testing.T) {
	for _, S := range []int{1, 2, 3, 5} {
		runs := synthetic(S, 7, uint64(10+S))
		want, err := Summarize(runs, Options{Resamples: -1})
		if err != nil {
			t.Fatal(err)
		}
		seeds := make([]SeedTypes, S)
		for s := range runs {
			one, err := Summarize(runs[s:s+1], Options{Resamples: -1})
			if err != nil {
				t.Fatal(err)
			}
			seeds[s].Name = runs[s].Name
			// Reverse the order: FromSeeds must not depend on it.
			for i := len(one.Types) - 1; i >= 0; i-- {
				ts := one.Types[i]
				seeds[s].Types = append(seeds[s].Types, SeedType{Type: ts.Type, Queries: ts.Queries, Metrics: ts.Mean()})
			}
		}
		got, err := FromSeeds(seeds)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Types) != len(want.Types) || got.Seeds != S {
			t.Fatalf("S=%d: %d types, %d seeds; want %d, %d", S, len(got.Types), got.Seeds, len(want.Types), S)
		}
		for i := range want.Types {
			g, w := got.Types[i], want.Types[i]
			if g.Type != w.Type || g.Queries != w.Queries || g.Mean() != w.Mean() || g.Std() != w.Std() {
				t.Errorf("S=%d type %d: got %s %d %+v ± %+v, want %s %d %+v ± %+v", S, i, g.Type, g.Queries, g.Mean(), g.Std(),
					w.Type, w.Queries, w.Mean(), w.Std())
			}
			if !math.IsNaN(g.MRR.Lo) || !math.IsNaN(g.H10.Hi) {
				t.Errorf("S=%d %s: intervals %v %v, want NaN without per-query values", S, g.Type, g.MRR.Lo, g.H10.Hi)
			}
		}
		for _, p := range []struct {
			name     string
			got, exp GroupStats
		}{{"EPFO", got.EPFO, want.EPFO}, {"negation", got.Negation, want.Negation}} {
			if !p.got.Complete || p.got.Mean() != p.exp.Mean() || p.got.Std() != p.exp.Std() {
				t.Errorf("S=%d %s: got %v %+v ± %+v, want %+v ± %+v", S, p.name, p.got.Complete, p.got.Mean(), p.got.Std(), p.exp.Mean(), p.exp.Std())
			}
		}
	}
}

func TestFromSeedsRefuses(t *testing.T) {
	m := eval.Metrics{MRR: 0.5, H1: 0.4, H3: 0.5, H10: 0.6}
	one := func(name string, types ...SeedType) SeedTypes { return SeedTypes{Name: name, Types: types} }
	for _, c := range []struct {
		name string
		runs []SeedTypes
		want string
	}{
		{"none", nil, "no runs"},
		{"empty run", []SeedTypes{one("a")}, "a holds no query types"},
		{"type twice", []SeedTypes{one("a", SeedType{"1p", 3, m}, SeedType{"1p", 3, m})}, `type "1p" is empty or given twice`},
		{"no queries", []SeedTypes{one("a", SeedType{"1p", 0, m})}, "type 1p has 0 queries"},
		{"out of range", []SeedTypes{one("a", SeedType{"1p", 3, eval.Metrics{MRR: 1.5}})}, "MRR = 1.5 not in [0, 1]"},
		{"NaN", []SeedTypes{one("a", SeedType{"1p", 3, eval.Metrics{H3: math.NaN()}})}, "Hits@3 = NaN"},
		{"other counts", []SeedTypes{one("a", SeedType{"1p", 3, m}), one("b", SeedType{"1p", 4, m})}, "type 1p has 3 queries in a, 4 in b"},
		{"missing type", []SeedTypes{one("a", SeedType{"1p", 3, m}, SeedType{"2p", 3, m}), one("b", SeedType{"1p", 3, m}, SeedType{"3p", 3, m})}, "a has type 2p, b has not"},
		{"extra type", []SeedTypes{one("a", SeedType{"1p", 3, m}), one("b", SeedType{"1p", 3, m}, SeedType{"3p", 3, m})}, "b has type 3p, a has not"},
	} {
		_, err := FromSeeds(c.runs)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestFromSeedsAccepts: the edges of what FromSeeds takes: a type of one query, metrics
// of exactly 0 and 1, one run.
func TestFromSeedsAccepts(t *testing.T) {
	for _, c := range []struct {
		name string
		typ  SeedType
	}{
		{"one query", SeedType{"1p", 1, eval.Metrics{MRR: 0.5, H1: 0.5, H3: 0.5, H10: 0.5}}},
		{"all 0", SeedType{"2p", 3, eval.Metrics{}}},
		{"all 1", SeedType{"3p", 3, eval.Metrics{MRR: 1, H1: 1, H3: 1, H10: 1}}},
	} {
		a, err := FromSeeds([]SeedTypes{{Name: "a", Types: []SeedType{c.typ}}})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		ts, ok := a.Type(c.typ.Type)
		if !ok || ts.Queries != c.typ.Queries || ts.Mean() != c.typ.Metrics || a.Seeds != 1 {
			t.Errorf("%s: %+v (found %v), %d seeds", c.name, ts, ok, a.Seeds)
		}
	}
}
