package eval

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rocone/rocone/pkg/query"
)

// hitsK are the cut-offs of the Hits@K metrics (docs/queries.md §5, step 4).
var hitsK = [3]int32{1, 3, 10}

// Metrics are MRR and Hits@1/3/10 as raw fractions in [0, 1]. For one query they are the
// per-query values of docs/queries.md §5 step 4; for a type they are means over its queries
// (step 5); for a group they are unweighted means over its types.
type Metrics struct {
	MRR, H1, H3, H10 float64
}

// Percent returns the metrics ×100, as the papers report them.
func (m Metrics) Percent() Metrics {
	return Metrics{MRR: Percent(m.MRR), H1: Percent(m.H1), H3: Percent(m.H3), H10: Percent(m.H10)}
}

// Percent returns x ×100, the scale the papers report metrics on.
func Percent(x float64) float64 { return 100 * x }

// QueryMetrics returns one query's metrics from the filtered ranks of its hard answers
// (docs/queries.md §5, step 4): MRR_q = mean of 1/rank, Hits@K_q = fraction of ranks ≤ K.
// It is an error if ranks is empty (the metrics of a query without hard answers are
// undefined) or holds a rank below 1. The result does not depend on the order of ranks: the
// reciprocal ranks are summed from the largest rank to the smallest.
func QueryMetrics(ranks []int32) (Metrics, error) {
	return queryMetrics(ranks, nil)
}

func queryMetrics(ranks []int32, scratch *[]int32) (Metrics, error) {
	if len(ranks) == 0 {
		return Metrics{}, errors.New("eval: query has no hard answers")
	}
	var sorted []int32
	if scratch != nil {
		sorted = append((*scratch)[:0], ranks...)
		*scratch = sorted
	} else {
		sorted = slices.Clone(ranks)
	}
	slices.Sort(sorted)
	if sorted[0] < 1 {
		return Metrics{}, fmt.Errorf("eval: rank %d is below 1", sorted[0])
	}
	var rr float64
	var hits [len(hitsK)]int
	for i := len(sorted) - 1; i >= 0; i-- {
		r := sorted[i]
		rr += 1 / float64(r)
		for k, K := range hitsK {
			if r <= K {
				hits[k]++
			}
		}
	}
	n := float64(len(sorted))
	return Metrics{
		MRR: rr / n,
		H1:  float64(hits[0]) / n,
		H3:  float64(hits[1]) / n,
		H10: float64(hits[2]) / n,
	}, nil
}

// typeAcc holds the per-query metrics of one type.
type typeAcc struct {
	mrr, h1, h3, h10 []float64
	answers          int
}

// Accumulator collects per-query metrics by query type. The zero value is ready to use. It
// is not safe for concurrent use; give each worker its own and [Accumulator.Merge] them.
//
// Order independence: the per-query values are kept, and [Accumulator.Summary] sums each
// type's values in ascending order in float64. The sums therefore depend only on the multiset
// of per-query values, so the summary is bit-for-bit the same whatever order the queries were
// added or merged in. Memory is 32 bytes per query.
type Accumulator struct {
	types   map[string]*typeAcc
	scratch []int32
}

// Add records one query of type typ (a name such as "2in"; any non-empty name is accepted)
// from the filtered ranks of its hard answers. ranks is not modified or retained. See
// [QueryMetrics] for the errors.
func (a *Accumulator) Add(typ string, ranks []int32) error {
	if typ == "" {
		return errors.New("eval: empty query type name")
	}
	m, err := queryMetrics(ranks, &a.scratch)
	if err != nil {
		return fmt.Errorf("%w (type %s)", err, typ)
	}
	t := a.typ(typ)
	t.mrr = append(t.mrr, m.MRR)
	t.h1 = append(t.h1, m.H1)
	t.h3 = append(t.h3, m.H3)
	t.h10 = append(t.h10, m.H10)
	t.answers += len(ranks)
	return nil
}

func (a *Accumulator) typ(name string) *typeAcc {
	if a.types == nil {
		a.types = map[string]*typeAcc{}
	}
	t := a.types[name]
	if t == nil {
		t = &typeAcc{}
		a.types[name] = t
	}
	return t
}

// Merge adds every query recorded in b to a. b is unchanged.
func (a *Accumulator) Merge(b *Accumulator) {
	for name, bt := range b.types {
		t := a.typ(name)
		t.mrr = append(t.mrr, bt.mrr...)
		t.h1 = append(t.h1, bt.h1...)
		t.h3 = append(t.h3, bt.h3...)
		t.h10 = append(t.h10, bt.h10...)
		t.answers += bt.answers
	}
}

// Queries returns the number of queries recorded for typ.
func (a *Accumulator) Queries(typ string) int {
	if t := a.types[typ]; t != nil {
		return len(t.mrr)
	}
	return 0
}

// TypeResult is the metrics of one query type: means over its queries.
type TypeResult struct {
	Type    string
	Queries int // number of queries
	Answers int // total number of hard answers over those queries
	Metrics
}

// GroupAverage is a paper average: the unweighted mean of the per-type metrics over a fixed
// group of types (docs/queries.md §5, step 5). It is only computed when every type of the
// group has at least one query; otherwise Complete is false, Metrics is zero and Missing
// lists the absent types in the group's order.
type GroupAverage struct {
	Types    []string // the group, e.g. query.EPFOTypes
	Complete bool
	Missing  []string
	Metrics
}

// Summary is the result of an evaluation.
type Summary struct {
	// Types holds every type with at least one query: the papers' 14 types in their column
	// order (query.EvalTypes), then other named types (query.TypeOrder), then custom names
	// alphabetically.
	Types []TypeResult
	// EPFO averages the 9 EPFO types (query.EPFOTypes); Negation the 5 negation types
	// (query.NegationTypes).
	EPFO, Negation GroupAverage
}

// Type returns the result of one type, if it has queries.
func (s *Summary) Type(name string) (TypeResult, bool) {
	for _, t := range s.Types {
		if t.Type == name {
			return t, true
		}
	}
	return TypeResult{}, false
}

// Summary computes the per-type means and the two paper averages. It may be called at any
// time; the accumulator is unchanged.
func (a *Accumulator) Summary() Summary {
	var s Summary
	var buf []float64
	for name, t := range a.types {
		s.Types = append(s.Types, TypeResult{
			Type:    name,
			Queries: len(t.mrr),
			Answers: t.answers,
			Metrics: Metrics{
				MRR: sortedMean(t.mrr, &buf),
				H1:  sortedMean(t.h1, &buf),
				H3:  sortedMean(t.h3, &buf),
				H10: sortedMean(t.h10, &buf),
			},
		})
	}
	slices.SortFunc(s.Types, func(x, y TypeResult) int {
		return cmp.Or(cmp.Compare(columnOrder(x.Type), columnOrder(y.Type)),
			strings.Compare(x.Type, y.Type))
	})
	s.EPFO = s.group(query.EPFOTypes)
	s.Negation = s.group(query.NegationTypes)
	return s
}

// columnOrder sorts type names: the papers' 14 columns (query.EvalTypes) first, in their
// order, then the other named types in query.TypeOrder order, then custom structures.
func columnOrder(name string) int {
	if i := slices.Index(query.EvalTypes, name); i >= 0 {
		return i
	}
	return len(query.EvalTypes) + query.TypeOrder(name)
}

// sortedMean returns the mean of xs, summed in ascending order so that the result does not
// depend on the order of xs. xs is not modified.
func sortedMean(xs []float64, buf *[]float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	b := append((*buf)[:0], xs...)
	*buf = b
	slices.Sort(b)
	var sum float64
	for _, x := range b {
		sum += x
	}
	return sum / float64(len(b))
}

func (s *Summary) group(types []string) GroupAverage {
	g := GroupAverage{Types: slices.Clone(types)}
	var sum Metrics
	for _, name := range types {
		t, ok := s.Type(name)
		if !ok {
			g.Missing = append(g.Missing, name)
			continue
		}
		sum.MRR += t.MRR
		sum.H1 += t.H1
		sum.H3 += t.H3
		sum.H10 += t.H10
	}
	if len(g.Missing) > 0 || len(types) == 0 {
		return g
	}
	n := float64(len(types))
	g.Complete = true
	g.Metrics = Metrics{MRR: sum.MRR / n, H1: sum.H1 / n, H3: sum.H3 / n, H10: sum.H10 / n}
	return g
}

// WriteTable writes the summary as a text table, metrics ×100 with two decimals: one row
// per type, then the EPFO and negation averages ("n/a (missing …)" when incomplete).
func (s *Summary) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %8s %7s %7s %7s %7s\n", "type", "queries", "MRR", "H@1", "H@3", "H@10")
	row := func(name string, q string, m Metrics) {
		p := m.Percent()
		fmt.Fprintf(&b, "%-8s %8s %7.2f %7.2f %7.2f %7.2f\n", name, q, p.MRR, p.H1, p.H3, p.H10)
	}
	for _, t := range s.Types {
		row(t.Type, fmt.Sprint(t.Queries), t.Metrics)
	}
	for _, g := range []struct {
		name string
		avg  GroupAverage
	}{{"AVG-EPFO", s.EPFO}, {"AVG-neg", s.Negation}} {
		if g.avg.Complete {
			row(g.name, "", g.avg.Metrics)
		} else {
			fmt.Fprintf(&b, "%-8s n/a (missing %s)\n", g.name, strings.Join(g.avg.Missing, " "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
