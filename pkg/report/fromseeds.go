package report

import (
	"errors"
	"fmt"
	"slices"

	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/query"
)

// SeedTypes is one run's per-type metrics, as the metrics artifact of a single run holds
// them: what a results entry keeps instead of its per-query ranks.
type SeedTypes struct {
	Name  string // the run, for messages
	Types []SeedType
}

// SeedType is one query type's metrics in one run.
type SeedType struct {
	Type    string
	Queries int
	Metrics eval.Metrics
}

// FromSeeds builds the Aggregate of several runs (the seeds of one model) from each run's
// per-type means. Without per-query values there is no bootstrap: the intervals are NaN and
// Resamples is 0; the means, the standard deviations across seeds and the paper averages are
// what Summarize gives for the same runs. Every run must hold the same types with the same
// numbers of queries, each type once, with metrics in [0, 1].
func FromSeeds(runs []SeedTypes) (*Aggregate, error) {
	if len(runs) == 0 {
		return nil, errors.New("report: no runs")
	}
	for i, r := range runs {
		if len(r.Types) == 0 {
			return nil, fmt.Errorf("report: %s holds no query types", r.Name)
		}
		seen := map[string]bool{}
		for _, t := range r.Types {
			if t.Type == "" || seen[t.Type] {
				return nil, fmt.Errorf("report: %s: type %q is empty or given twice", r.Name, t.Type)
			}
			seen[t.Type] = true
			if t.Queries < 1 {
				return nil, fmt.Errorf("report: %s: type %s has %d queries", r.Name, t.Type, t.Queries)
			}
			for m, v := range vec(t.Metrics) {
				if !(v >= 0 && v <= 1) {
					return nil, fmt.Errorf("report: %s: type %s: %s = %v not in [0, 1]", r.Name, t.Type, Metric(m), v)
				}
			}
		}
		if i > 0 {
			if err := sameTypes(runs[0], r); err != nil {
				return nil, err
			}
		}
	}
	S := len(runs)
	a := &Aggregate{Seeds: S, Level: DefaultLevel}
	for _, r := range runs {
		a.Runs = append(a.Runs, r.Name)
	}
	order := slices.Clone(runs[0].Types)
	slices.SortFunc(order, func(x, y SeedType) int { return compareTypes(x.Type, y.Type) })
	for _, t := range order {
		ts := TypeStats{Type: t.Type, Queries: t.Queries, PerSeed: make([]eval.Metrics, S)}
		perSeed := make([][4]float64, S)
		for s, r := range runs {
			i := slices.IndexFunc(r.Types, func(x SeedType) bool { return x.Type == t.Type })
			ts.PerSeed[s] = r.Types[i].Metrics
			perSeed[s] = vec(r.Types[i].Metrics)
		}
		ts.Stats = seedStats(perSeed)
		setIntervals(&ts.Stats, nil, a.Level)
		a.Types = append(a.Types, ts)
	}
	a.EPFO = a.group(query.EPFOTypes, nil, a.Level)
	a.Negation = a.group(query.NegationTypes, nil, a.Level)
	return a, nil
}

func sameTypes(a, b SeedTypes) error {
	count := func(r SeedTypes) map[string]int {
		m := map[string]int{}
		for _, t := range r.Types {
			m[t.Type] = t.Queries
		}
		return m
	}
	ca, cb := count(a), count(b)
	for t, n := range ca {
		switch m, ok := cb[t]; {
		case !ok:
			return fmt.Errorf("report: %s has type %s, %s has not", a.Name, t, b.Name)
		case m != n:
			return fmt.Errorf("report: type %s has %d queries in %s, %d in %s: not the same queries", t, n, a.Name, m, b.Name)
		}
	}
	for t := range cb {
		if _, ok := ca[t]; !ok {
			return fmt.Errorf("report: %s has type %s, %s has not", b.Name, t, a.Name)
		}
	}
	return nil
}
