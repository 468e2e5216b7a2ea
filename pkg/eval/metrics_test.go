package eval

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/query"
)

func TestQueryMetrics(t *testing.T) {
	tests := []struct {
		name  string
		ranks []int32
		want  Metrics
	}{
		{"single top", []int32{1}, Metrics{MRR: 1, H1: 1, H3: 1, H10: 1}},
		{"single 2", []int32{2}, Metrics{MRR: 0.5, H1: 0, H3: 1, H10: 1}},
		{"single 3", []int32{3}, Metrics{MRR: 1.0 / 3, H1: 0, H3: 1, H10: 1}},
		{"single 4", []int32{4}, Metrics{MRR: 0.25, H1: 0, H3: 0, H10: 1}},
		{"single 10", []int32{10}, Metrics{MRR: 0.1, H1: 0, H3: 0, H10: 1}},
		{"single 11", []int32{11}, Metrics{MRR: 1.0 / 11, H1: 0, H3: 0, H10: 0}},
		{"four", []int32{1, 2, 4, 20}, Metrics{
			MRR: (1 + 0.5 + 0.25 + 0.05) / 4, H1: 0.25, H3: 0.5, H10: 0.75}},
		{"ties", []int32{1, 1}, Metrics{MRR: 1, H1: 1, H3: 1, H10: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := QueryMetrics(tc.ranks)
			if err != nil {
				t.Fatal(err)
			}
			if !near(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestQueryMetricsErrors(t *testing.T) {
	for _, ranks := range [][]int32{nil, {}, {0}, {3, -1}} {
		if m, err := QueryMetrics(ranks); err == nil {
			t.Errorf("QueryMetrics(%v) = %+v, want an error", ranks, m)
		}
	}
	var a Accumulator
	if err := a.Add("1p", nil); err == nil {
		t.Error("Add with no ranks: want an error")
	}
	if err := a.Add("", []int32{1}); err == nil {
		t.Error("Add with empty type: want an error")
	}
	if a.Queries("1p") != 0 || len(a.Summary().Types) != 0 {
		t.Error("failed Adds must record nothing")
	}
}

func TestQueryMetricsDoesNotModifyRanks(t *testing.T) {
	ranks := []int32{5, 1, 3}
	if _, err := QueryMetrics(ranks); err != nil {
		t.Fatal(err)
	}
	var a Accumulator
	if err := a.Add("1p", ranks); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ranks, []int32{5, 1, 3}) {
		t.Errorf("ranks modified: %v", ranks)
	}
}

func near(a, b Metrics) bool {
	const eps = 1e-12
	return math.Abs(a.MRR-b.MRR) < eps && math.Abs(a.H1-b.H1) < eps &&
		math.Abs(a.H3-b.H3) < eps && math.Abs(a.H10-b.H10) < eps
}

func TestSummaryPerTypeAndGroups(t *testing.T) {
	var a Accumulator
	// Every EPFO type: one query with rank 1 and one with rank 2 -> MRR 0.75, H1 0.5.
	for _, typ := range query.EPFOTypes {
		must(t, a.Add(typ, []int32{1}))
		must(t, a.Add(typ, []int32{2}))
	}
	// Negation types but "pni" get one query of rank 4 -> MRR 0.25, H3 0, H10 1.
	for _, typ := range query.NegationTypes[:4] {
		must(t, a.Add(typ, []int32{4}))
	}
	must(t, a.Add("my-custom", []int32{1, 100}))
	must(t, a.Add("up-DM", []int32{1}))
	must(t, a.Add("2u-DM", []int32{1}))
	// Custom names sort alphabetically whatever the map's order: several of them, so that
	// an order left to chance would not pass by luck.
	for _, name := range []string{"a-custom", "z", "b-custom", "m"} {
		must(t, a.Add(name, []int32{1}))
	}
	s := a.Summary()

	var names []string
	for _, tr := range s.Types {
		names = append(names, tr.Type)
	}
	wantNames := append(append([]string{}, query.EvalTypes[:13]...), "2u-DM", "up-DM", "a-custom", "b-custom", "m", "my-custom", "z")
	if !slices.Equal(names, wantNames) {
		t.Errorf("types %v, want %v", names, wantNames)
	}
	tr, ok := s.Type("2p")
	if !ok || tr.Queries != 2 || tr.Answers != 2 || !near(tr.Metrics, Metrics{0.75, 0.5, 1, 1}) {
		t.Errorf("2p: %+v, %v", tr, ok)
	}
	tr, ok = s.Type("my-custom")
	if !ok || tr.Queries != 1 || tr.Answers != 2 || !near(tr.Metrics, Metrics{0.505, 0.5, 0.5, 0.5}) {
		t.Errorf("my-custom: %+v, %v", tr, ok)
	}
	if _, ok := s.Type("pni"); ok {
		t.Error("pni has no queries but is listed")
	}

	if !s.EPFO.Complete || len(s.EPFO.Missing) != 0 || !near(s.EPFO.Metrics, Metrics{0.75, 0.5, 1, 1}) {
		t.Errorf("EPFO: %+v", s.EPFO)
	}
	if !slices.Equal(s.EPFO.Types, query.EPFOTypes) {
		t.Errorf("EPFO types %v", s.EPFO.Types)
	}
	if s.Negation.Complete || !slices.Equal(s.Negation.Missing, []string{"pni"}) ||
		s.Negation.Metrics != (Metrics{}) {
		t.Errorf("Negation: %+v", s.Negation)
	}

	// Completing the group gives the unweighted mean over the 5 types.
	must(t, a.Add("pni", []int32{1}))
	must(t, a.Add("pni", []int32{1}))
	must(t, a.Add("pni", []int32{1}))
	s = a.Summary()
	want := Metrics{MRR: (4*0.25 + 1) / 5, H1: 1.0 / 5, H3: 1.0 / 5, H10: 1}
	if !s.Negation.Complete || !near(s.Negation.Metrics, want) {
		t.Errorf("Negation: %+v, want %+v", s.Negation, want)
	}
}

func TestSummaryEmpty(t *testing.T) {
	var a Accumulator
	s := a.Summary()
	if len(s.Types) != 0 || s.EPFO.Complete || s.Negation.Complete ||
		!slices.Equal(s.EPFO.Missing, query.EPFOTypes) || !slices.Equal(s.Negation.Missing, query.NegationTypes) {
		t.Errorf("%+v", s)
	}
}

// TestSummaryOrderIndependent adds the same queries in different orders, and split over
// merged accumulators, and requires bit-identical summaries.
func TestSummaryOrderIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type q struct {
		typ   string
		ranks []int32
	}
	var qs []q
	for range 5000 {
		typ := query.EvalTypes[rng.IntN(len(query.EvalTypes))]
		ranks := make([]int32, 1+rng.IntN(30))
		for i := range ranks {
			ranks[i] = 1 + int32(rng.IntN(15000))
		}
		qs = append(qs, q{typ, ranks})
	}
	var ref Accumulator
	for _, x := range qs {
		must(t, ref.Add(x.typ, x.ranks))
	}
	want := ref.Summary()
	for trial := range 5 {
		rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
		parts := make([]Accumulator, 1+trial)
		for i, x := range qs {
			r := slices.Clone(x.ranks)
			rng.Shuffle(len(r), func(i, j int) { r[i], r[j] = r[j], r[i] })
			must(t, parts[i%len(parts)].Add(x.typ, r))
		}
		var all Accumulator
		for i := range parts {
			all.Merge(&parts[i])
		}
		got := all.Summary()
		if !summariesIdentical(got, want) {
			t.Fatalf("trial %d: summary differs:\n got %+v\nwant %+v", trial, got, want)
		}
	}
}

func summariesIdentical(a, b Summary) bool {
	bits := func(m Metrics) [4]uint64 {
		return [4]uint64{math.Float64bits(m.MRR), math.Float64bits(m.H1), math.Float64bits(m.H3), math.Float64bits(m.H10)}
	}
	if len(a.Types) != len(b.Types) {
		return false
	}
	for i := range a.Types {
		x, y := a.Types[i], b.Types[i]
		if x.Type != y.Type || x.Queries != y.Queries || x.Answers != y.Answers || bits(x.Metrics) != bits(y.Metrics) {
			return false
		}
	}
	return a.EPFO.Complete == b.EPFO.Complete && bits(a.EPFO.Metrics) == bits(b.EPFO.Metrics) &&
		a.Negation.Complete == b.Negation.Complete && bits(a.Negation.Metrics) == bits(b.Negation.Metrics)
}

func TestPercent(t *testing.T) {
	m := Metrics{MRR: 0.5, H1: 0.25, H3: 0.125, H10: 1}.Percent()
	if m != (Metrics{MRR: 50, H1: 25, H3: 12.5, H10: 100}) {
		t.Errorf("%+v", m)
	}
	if Percent(0.321) != 100*0.321 {
		t.Error("Percent")
	}
}

func TestWriteTable(t *testing.T) {
	var a Accumulator
	must(t, a.Add("2in", []int32{1, 2}))
	must(t, a.Add("1p", []int32{4}))
	s := a.Summary()
	var b strings.Builder
	must(t, s.WriteTable(&b))
	want := `type      queries     MRR     H@1     H@3    H@10
1p              1   25.00    0.00    0.00  100.00
2in             1   75.00   50.00  100.00  100.00
AVG-EPFO n/a (missing 2p 3p 2i 3i pi ip 2u up)
AVG-neg  n/a (missing 3in inp pin pni)
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestWriteTableComplete: with every EPFO type, the AVG-EPFO row holds their average; the
// negation average, still incomplete, names what it misses.
func TestWriteTableComplete(t *testing.T) {
	var a Accumulator
	for i, ty := range query.EPFOTypes {
		// Rank 1 for the first type, rank 2 for the others: MRR (1 + 8·0.5)/9.
		if err := a.Add(ty, []int32{int32(min(i, 1) + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Add("2in", []int32{4}); err != nil {
		t.Fatal(err)
	}
	s := a.Summary()
	var b strings.Builder
	if err := s.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	tail := lines[len(lines)-2:]
	want := []string{
		"AVG-EPFO            55.56   11.11  100.00  100.00",
		"AVG-neg  n/a (missing 3in inp pin pni)",
	}
	if !slices.Equal(tail, want) {
		t.Fatalf("table ends\n%s\nwant\n%s", strings.Join(tail, "\n"), strings.Join(want, "\n"))
	}
	if len(lines) != 1+10+2 {
		t.Fatalf("%d lines, want a header, 10 types and 2 averages:\n%s", len(lines), b.String())
	}
}
