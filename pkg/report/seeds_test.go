package report

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/query"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }

// qr is a query result with the given MRR, Hits@1 = MRR/2, Hits@3 = MRR and Hits@10 = 1.
func qr(id int64, typ string, mrr float64) QueryResult {
	return QueryResult{ID: id, Type: typ, Metrics: eval.Metrics{MRR: mrr, H1: mrr / 2, H3: mrr, H10: 1}}
}

// TestSummarizeHandMade checks the statistics against literal numbers.
func TestSummarizeHandMade(t *testing.T) {
	// 1p: per-seed means 0.75, 0.5, 1.0 → mean 0.75, std sqrt((0+0.0625+0.0625)/2) = 0.25.
	// 2in: one query, 0.2, 0.4, 0.6 → mean 0.4, std 0.2.
	runs := []Run{
		{Name: "a", Queries: []QueryResult{qr(1, "1p", 1), qr(2, "1p", 0.5), qr(3, "2in", 0.2)}},
		{Name: "b", Queries: []QueryResult{qr(3, "2in", 0.4), qr(2, "1p", 0.5), qr(1, "1p", 0.5)}},
		{Name: "c", Queries: []QueryResult{qr(1, "1p", 1), qr(2, "1p", 1), qr(3, "2in", 0.6)}},
	}
	a, err := Summarize(runs, Options{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	if a.Seeds != 3 || !reflect.DeepEqual(a.Runs, []string{"a", "b", "c"}) || a.Resamples != 200 || a.Level != 0.95 {
		t.Fatalf("header: %+v", a)
	}
	if len(a.Types) != 2 || a.Types[0].Type != "1p" || a.Types[1].Type != "2in" {
		t.Fatalf("types: %+v", a.Types)
	}
	for _, tc := range []struct {
		typ       string
		queries   int
		mean, std float64
		perSeed   []float64
	}{
		{"1p", 2, 0.75, 0.25, []float64{0.75, 0.5, 1}},
		{"2in", 1, 0.4, 0.2, []float64{0.2, 0.4, 0.6}},
	} {
		ts, ok := a.Type(tc.typ)
		if !ok || ts.Queries != tc.queries {
			t.Fatalf("%s: %+v", tc.typ, ts)
		}
		if !near(ts.MRR.Mean, tc.mean) || !near(ts.MRR.Std, tc.std) {
			t.Errorf("%s MRR: mean %v std %v, want %v %v", tc.typ, ts.MRR.Mean, ts.MRR.Std, tc.mean, tc.std)
		}
		if !near(ts.H1.Mean, tc.mean/2) || !near(ts.H1.Std, tc.std/2) || ts.H10.Mean != 1 || ts.H10.Std != 0 {
			t.Errorf("%s hits: %+v", tc.typ, ts.Stats)
		}
		for s, v := range tc.perSeed {
			if !near(ts.PerSeed[s].MRR, v) {
				t.Errorf("%s seed %d: %v, want %v", tc.typ, s, ts.PerSeed[s].MRR, v)
			}
		}
	}
	// A single query per type: every resample is that query.
	if ts, _ := a.Type("2in"); !near(ts.MRR.Lo, 0.4) || !near(ts.MRR.Hi, 0.4) {
		t.Errorf("2in interval [%v, %v], want [0.4, 0.4]", ts.MRR.Lo, ts.MRR.Hi)
	}
	if a.EPFO.Complete || a.Negation.Complete {
		t.Error("groups complete with two types")
	}
	if want := []string{"2p", "3p", "2i", "3i", "pi", "ip", "2u", "up"}; !reflect.DeepEqual(a.EPFO.Missing, want) {
		t.Errorf("EPFO missing %v, want %v", a.EPFO.Missing, want)
	}
	if want := []string{"3in", "inp", "pin", "pni"}; !reflect.DeepEqual(a.Negation.Missing, want) {
		t.Errorf("negation missing %v, want %v", a.Negation.Missing, want)
	}
}

// synthetic returns S runs covering every named type (the 14 papers' types and 2u-DM) with
// n queries each, metrics drawn from a fixed generator.
func synthetic(S, n int, seed uint64) []Run {
	r := rand.New(rand.NewPCG(seed, 7))
	types := append(append([]string{}, query.EvalTypes...), "2u-DM")
	runs := make([]Run, S)
	for s := range runs {
		var id int64
		for ti, typ := range types {
			for range n {
				m := r.Float64() * float64(ti+1) / float64(len(types))
				runs[s].Queries = append(runs[s].Queries, QueryResult{ID: id, Type: typ, Metrics: eval.Metrics{
					MRR: m, H1: float64(r.IntN(2)), H3: r.Float64(), H10: math.Sqrt(m),
				}})
				id++
			}
		}
	}
	return runs
}

// TestSummarizeDirect compares every statistic with a direct computation.
func TestSummarizeDirect(t *testing.T) {
	for _, S := range []int{1, 2, 4} {
		runs := synthetic(S, 5, uint64(S))
		a, err := Summarize(runs, Options{Resamples: -1})
		if err != nil {
			t.Fatal(err)
		}
		if a.Resamples != 0 || !math.IsNaN(a.Types[0].MRR.Lo) {
			t.Errorf("bootstrap off: %d, %v", a.Resamples, a.Types[0].MRR.Lo)
		}
		// perSeed[type][seed], direct.
		perSeed := map[string][]eval.Metrics{}
		for s, r := range runs {
			sum := map[string]eval.Metrics{}
			cnt := map[string]float64{}
			for _, q := range r.Queries {
				m := sum[q.Type]
				m.MRR += q.MRR
				m.H1 += q.H1
				m.H3 += q.H3
				m.H10 += q.H10
				sum[q.Type] = m
				cnt[q.Type]++
			}
			for typ, m := range sum {
				c := cnt[typ]
				if perSeed[typ] == nil {
					perSeed[typ] = make([]eval.Metrics, S)
				}
				perSeed[typ][s] = eval.Metrics{MRR: m.MRR / c, H1: m.H1 / c, H3: m.H3 / c, H10: m.H10 / c}
			}
		}
		meanStd := func(xs []float64) (float64, float64) {
			var m float64
			for _, x := range xs {
				m += x
			}
			m /= float64(len(xs))
			if len(xs) == 1 {
				return m, 0
			}
			var ss float64
			for _, x := range xs {
				ss += (x - m) * (x - m)
			}
			return m, math.Sqrt(ss / float64(len(xs)-1))
		}
		check := func(name string, st Stats, vals []eval.Metrics) {
			t.Helper()
			for m := range 4 {
				xs := make([]float64, len(vals))
				for s, v := range vals {
					xs[s] = vec(v)[m]
				}
				mean, std := meanStd(xs)
				got := st.Get(Metric(m))
				if !(math.Abs(got.Mean-mean) <= 1e-12) || !(math.Abs(got.Std-std) <= 1e-12) {
					t.Errorf("S=%d %s %s: mean %v std %v, want %v %v", S, name, Metric(m), got.Mean, got.Std, mean, std)
				}
			}
		}
		if len(a.Types) != 15 || a.Types[14].Type != "2u-DM" {
			t.Fatalf("types %d", len(a.Types))
		}
		for _, ts := range a.Types {
			check(ts.Type, ts.Stats, perSeed[ts.Type])
		}
		for _, g := range []struct {
			name  string
			types []string
			got   GroupStats
		}{{"EPFO", query.EPFOTypes, a.EPFO}, {"negation", query.NegationTypes, a.Negation}} {
			if !g.got.Complete || len(g.got.Missing) != 0 {
				t.Fatalf("%s incomplete", g.name)
			}
			vals := make([]eval.Metrics, S)
			for s := range S {
				for _, typ := range g.types {
					v := perSeed[typ][s]
					vals[s].MRR += v.MRR / float64(len(g.types))
					vals[s].H1 += v.H1 / float64(len(g.types))
					vals[s].H3 += v.H3 / float64(len(g.types))
					vals[s].H10 += v.H10 / float64(len(g.types))
				}
			}
			check(g.name, g.got.Stats, vals)
		}
	}
}

// TestSummarizeMatchesEval: built from ranks, the type means equal eval.Summary's exactly.
func TestSummarizeMatchesEval(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var acc eval.Accumulator
	var ids []int64
	var types []string
	var ranks []int32
	for id := range int64(300) {
		typ := query.EvalTypes[r.IntN(len(query.EvalTypes))]
		var rs []int32
		for range 1 + r.IntN(5) {
			rs = append(rs, int32(1+r.IntN(30)))
		}
		if err := acc.Add(typ, rs); err != nil {
			t.Fatal(err)
		}
		for _, x := range rs { // rows interleaved with another query's
			ids = append(ids, id, -1)
			types = append(types, typ, "1p")
			ranks = append(ranks, x, 1)
		}
	}
	qs, err := GroupRanks(ids, types, ranks)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 301 || qs[1].ID != -1 || len(qs[1].Ranks) != len(ranks)/2 {
		t.Fatalf("grouped %d queries", len(qs))
	}
	run, err := RunFromRanks("x", qs[:1])
	if err != nil {
		t.Fatal(err)
	}
	run2, err := RunFromRanks("x", qs[2:])
	if err != nil {
		t.Fatal(err)
	}
	run.Queries = append(run.Queries, run2.Queries...)
	a, err := Summarize([]Run{run}, Options{Resamples: -1})
	if err != nil {
		t.Fatal(err)
	}
	sum := acc.Summary()
	if len(a.Types) != len(sum.Types) {
		t.Fatalf("%d types, eval has %d", len(a.Types), len(sum.Types))
	}
	for i, tr := range sum.Types {
		ts := a.Types[i]
		if ts.Type != tr.Type || ts.Queries != tr.Queries || ts.Mean() != tr.Metrics {
			t.Errorf("type %s: %+v, eval %+v", tr.Type, ts.Mean(), tr)
		}
	}
	if a.EPFO.Mean() != sum.EPFO.Metrics || a.Negation.Mean() != sum.Negation.Metrics {
		t.Errorf("groups %+v %+v, eval %+v %+v", a.EPFO.Mean(), a.Negation.Mean(), sum.EPFO.Metrics, sum.Negation.Metrics)
	}
}

func TestRanksErrors(t *testing.T) {
	if _, err := GroupRanks([]int64{1, 1}, []string{"1p", "2p"}, []int32{1, 2}); err == nil || !strings.Contains(err.Error(), "query 1") {
		t.Errorf("type conflict: %v", err)
	}
	if _, err := GroupRanks([]int64{1}, nil, []int32{1}); err == nil {
		t.Error("length mismatch accepted")
	}
	_, err := RunFromRanks("seed3.arrow", []QueryRanks{{ID: 1, Type: "1p", Ranks: []int32{1}}, {ID: 9, Type: "2in", Ranks: []int32{0}}})
	if err == nil || !strings.Contains(err.Error(), "seed3.arrow") || !strings.Contains(err.Error(), "query 9") {
		t.Errorf("bad rank: %v", err)
	}
	run, err := RunFromRanks("", []QueryRanks{{ID: 1, Type: "1p", Ranks: []int32{1, 2, 4, 20}}})
	if err != nil {
		t.Fatal(err)
	}
	want := eval.Metrics{MRR: (1 + 0.5 + 0.25 + 0.05) / 4, H1: 0.25, H3: 0.5, H10: 0.75}
	if got := run.Queries[0].Metrics; !near(got.MRR, want.MRR) || got.H1 != want.H1 || got.H3 != want.H3 || got.H10 != want.H10 {
		t.Errorf("metrics %+v, want %+v", got, want)
	}
}

func TestBootstrap(t *testing.T) {
	runs := synthetic(3, 40, 1)
	a1, err := Summarize(runs, Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if a1.Resamples != DefaultResamples {
		t.Errorf("resamples %d", a1.Resamples)
	}
	t.Run("deterministic", func(t *testing.T) {
		a2, err := Summarize(runs, Options{Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a1, a2) {
			t.Error("same seed, different results")
		}
		// The input order does not matter.
		shuffled := make([]Run, len(runs))
		r := rand.New(rand.NewPCG(9, 9))
		for s := range runs {
			shuffled[s] = Run{Queries: append([]QueryResult{}, runs[s].Queries...)}
			r.Shuffle(len(shuffled[s].Queries), func(i, j int) {
				q := shuffled[s].Queries
				q[i], q[j] = q[j], q[i]
			})
		}
		a3, err := Summarize(shuffled, Options{Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		a3.Runs = a1.Runs
		if !reflect.DeepEqual(a1, a3) {
			t.Error("shuffled input, different results")
		}
		a4, err := Summarize(runs, Options{Seed: 6})
		if err != nil {
			t.Fatal(err)
		}
		if a4.Types[0].MRR.Lo == a1.Types[0].MRR.Lo {
			t.Error("another seed, same interval")
		}
	})
	t.Run("contains estimate", func(t *testing.T) {
		check := func(name string, st Stats) {
			for m := range 4 {
				s := st.Get(Metric(m))
				if !(s.Lo <= s.Mean && s.Mean <= s.Hi && s.Lo < s.Hi) {
					t.Errorf("%s %s: %v not in [%v, %v]", name, Metric(m), s.Mean, s.Lo, s.Hi)
				}
			}
		}
		for _, ts := range a1.Types {
			check(ts.Type, ts.Stats)
		}
		for _, g := range []GroupStats{a1.EPFO, a1.Negation} {
			check(strings.Join(g.Types, ","), g.Stats)
		}
	})
	t.Run("same indices in every seed", func(t *testing.T) {
		// Two identical seeds average to the first: same intervals as the first alone.
		one, err := Summarize(runs[:1], Options{Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		two, err := Summarize([]Run{runs[0], runs[0]}, Options{Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		for i := range one.Types {
			if one.Types[i].MRR.Lo != two.Types[i].MRR.Lo || one.Types[i].H3.Hi != two.Types[i].H3.Hi {
				t.Errorf("%s: %+v vs %+v", one.Types[i].Type, one.Types[i].MRR, two.Types[i].MRR)
			}
		}
		if one.EPFO.MRR.Lo != two.EPFO.MRR.Lo || two.EPFO.MRR.Std != 0 {
			t.Errorf("EPFO %+v vs %+v", one.EPFO.MRR, two.EPFO.MRR)
		}
	})
	t.Run("shrinks", func(t *testing.T) {
		width := func(n int) (float64, float64) {
			a, err := Summarize(synthetic(1, n, 3), Options{Seed: 1, Resamples: 2000})
			if err != nil {
				t.Fatal(err)
			}
			ts := a.Types[0]
			return ts.MRR.Hi - ts.MRR.Lo, a.EPFO.MRR.Hi - a.EPFO.MRR.Lo
		}
		small, gSmall := width(25)
		large, gLarge := width(400)
		// 16 times the queries: about a quarter of the width.
		if !(large < small/2.5) || !(gLarge < gSmall/2.5) {
			t.Errorf("widths %v → %v, EPFO %v → %v", small, large, gSmall, gLarge)
		}
	})
	t.Run("normal width", func(t *testing.T) {
		// The 95% interval of a mean of n values of sd σ is about ±1.96 σ/√n.
		const n = 400
		a, err := Summarize(synthetic(1, n, 4), Options{Seed: 2, Resamples: 4000})
		if err != nil {
			t.Fatal(err)
		}
		var xs []float64
		for _, q := range synthetic(1, n, 4)[0].Queries {
			if q.Type == "1p" {
				xs = append(xs, q.MRR)
			}
		}
		var m, ss float64
		for _, x := range xs {
			m += x
		}
		m /= n
		for _, x := range xs {
			ss += (x - m) * (x - m)
		}
		want := 2 * 1.96 * math.Sqrt(ss/n) / math.Sqrt(n)
		ts, _ := a.Type("1p")
		if got := ts.MRR.Hi - ts.MRR.Lo; !(math.Abs(got/want-1) <= 0.1) {
			t.Errorf("width %v, want about %v", got, want)
		}
	})
}

func TestQuantile(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	for _, tc := range []struct{ p, want float64 }{
		{0, 1}, {1, 5}, {0.5, 3}, {0.025, 1.1}, {0.975, 4.9}, {0.3, 2.2},
	} {
		if got := quantile(xs, tc.p); !near(got, tc.want) {
			t.Errorf("quantile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func TestSummarizeErrors(t *testing.T) {
	base := []QueryResult{qr(1, "1p", 0.5), qr(2, "2in", 0.5), qr(3, "2p", 0.5)}
	with := func(qs ...QueryResult) []Run {
		return []Run{{Name: "a.arrow", Queries: base}, {Name: "b.arrow", Queries: qs}}
	}
	for _, tc := range []struct {
		name     string
		runs     []Run
		opt      Options
		coverage bool
		want     []string
	}{
		{"no runs", nil, Options{}, false, []string{"no runs"}},
		{"empty", []Run{{Name: "e"}}, Options{}, false, []string{"e", "no queries"}},
		{"missing", with(qr(1, "1p", 0.5), qr(3, "2p", 0.5)), Options{}, true,
			[]string{"run 1 (b.arrow)", "run 0 (a.arrow)", "1 missing", "id 2 (2in)"}},
		{"extra", with(qr(1, "1p", 0.5), qr(2, "2in", 0.5), qr(3, "2p", 0.5), qr(7, "3p", 0.5)), Options{}, true,
			[]string{"b.arrow", "1 extra", "id 7 (3p)"}},
		{"replaced", with(qr(1, "1p", 0.5), qr(2, "2in", 0.5), qr(4, "2p", 0.5)), Options{}, true,
			[]string{"1 missing (id 3 (2p))", "1 extra (id 4 (2p))"}},
		{"type", with(qr(1, "1p", 0.5), qr(2, "3in", 0.5), qr(3, "2p", 0.5)), Options{}, true,
			[]string{"b.arrow", "id 2 is 3in here, 2in there"}},
		{"duplicate", with(qr(1, "1p", 0.5), qr(2, "2in", 0.5), qr(2, "2in", 0.5)), Options{}, false,
			[]string{"b.arrow", "id 2 appears more than once"}},
		{"no type", with(qr(1, "", 0.5)), Options{}, false, []string{"b.arrow", "query 1 has no type"}},
		{"range", with(qr(1, "1p", 1.5)), Options{}, false, []string{"b.arrow", "MRR = 1.5"}},
		{"nan", with(qr(1, "1p", math.NaN())), Options{}, false, []string{"NaN"}},
		{"missing and retyped", with(qr(1, "1p", 0.5), qr(2, "3in", 0.5)), Options{}, true,
			[]string{"1 missing (id 3 (2p))", "1 with another type (id 2 is 3in here, 2in there)"}},
		{"level", with(base...), Options{Level: 1.5}, false, []string{"level"}},
		{"level 1", with(base...), Options{Level: 1}, false, []string{"confidence level 1 not in (0, 1)"}},
		{"negative level", with(base...), Options{Level: -0.5}, false, []string{"confidence level -0.5 not in (0, 1)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Summarize(tc.runs, tc.opt)
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, ErrCoverage) != tc.coverage {
				t.Errorf("errors.Is(ErrCoverage) = %v: %v", !tc.coverage, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
	// The same queries in another order are fine.
	if _, err := Summarize(with(base[2], base[0], base[1]), Options{}); err != nil {
		t.Error(err)
	}
}

// TestTooFewResamples: a percentile interval from fewer resamples than its tails need is
// refused, not printed as the span of a handful of draws (or a point, from one).
func TestTooFewResamples(t *testing.T) {
	for _, c := range []struct {
		level float64
		min   int
	}{{0.95, 40}, {0.9, 20}, {0.99, 200}, {0.5, 4}} {
		if got := MinResamples(c.level); got != c.min {
			t.Errorf("MinResamples(%v) = %d, want %d", c.level, got, c.min)
		}
		runs := synthetic(1, 6, 1)
		if _, err := Summarize(runs, Options{Resamples: c.min - 1, Level: c.level}); err == nil || !strings.Contains(err.Error(), "too few") {
			t.Errorf("level %v, %d resamples: err %v, want too few", c.level, c.min-1, err)
		}
		a, err := Summarize(runs, Options{Resamples: c.min, Level: c.level})
		if err != nil {
			t.Fatalf("level %v, %d resamples: %v", c.level, c.min, err)
		}
		if st := a.Types[0].Stats.MRR; !(st.Lo <= st.Hi) {
			t.Errorf("level %v: interval [%v, %v]", c.level, st.Lo, st.Hi)
		}
	}
}

// TestMetricString: the four metrics by name, and any other value by its number rather
// than a panic (an error message may print a bad one).
func TestMetricString(t *testing.T) {
	for _, c := range []struct {
		m    Metric
		want string
	}{{MRR, "MRR"}, {Hits1, "Hits@1"}, {Hits3, "Hits@3"}, {Hits10, "Hits@10"}, {Metric(4), "Metric(4)"}, {Metric(-1), "Metric(-1)"}} {
		if got := c.m.String(); got != c.want {
			t.Errorf("Metric(%d).String() = %q, want %q", int(c.m), got, c.want)
		}
	}
}
