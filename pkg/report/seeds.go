package report

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/query"
)

// QueryResult is one query's metrics in one run.
type QueryResult struct {
	ID   int64  // the query's id, unique within a run (the queries artifact's id column)
	Type string // its type name, e.g. "2in"
	eval.Metrics
}

// QueryRanks is one query with the filtered ranks of its hard answers.
type QueryRanks struct {
	ID    int64
	Type  string
	Ranks []int32
}

// Run holds the per-query results of one seed.
type Run struct {
	// Name identifies the run in error messages and in [Aggregate.Runs], e.g. the file it
	// was read from. It may be empty; errors then name the run by its position.
	Name    string
	Queries []QueryResult
}

func (r *Run) label(i int) string {
	if r.Name == "" {
		return fmt.Sprintf("run %d", i)
	}
	return fmt.Sprintf("run %d (%s)", i, r.Name)
}

// RunFromRanks computes each query's metrics from its ranks with eval.QueryMetrics. An
// error names the run and the query.
func RunFromRanks(name string, queries []QueryRanks) (Run, error) {
	r := Run{Name: name, Queries: make([]QueryResult, len(queries))}
	for i, q := range queries {
		m, err := eval.QueryMetrics(q.Ranks)
		if err != nil {
			return Run{}, fmt.Errorf("report: %s: query %d (%s): %w", cmp.Or(name, "run"), q.ID, q.Type, err)
		}
		r.Queries[i] = QueryResult{ID: q.ID, Type: q.Type, Metrics: m}
	}
	return r, nil
}

// GroupRanks gathers rank rows, one per (query, hard answer) as a ranks artifact holds
// them, into one rank list per query: row i says that a hard answer of query ids[i], of type
// types[i], has filtered rank ranks[i]. The rows of a query need not be adjacent. Queries come
// out in the order of their first row. It is an error if the three columns differ in length
// or a query's rows disagree on its type.
func GroupRanks(ids []int64, types []string, ranks []int32) ([]QueryRanks, error) {
	if len(ids) != len(types) || len(ids) != len(ranks) {
		return nil, fmt.Errorf("report: rank rows: %d ids, %d types, %d ranks", len(ids), len(types), len(ranks))
	}
	pos := map[int64]int{}
	var out []QueryRanks
	for i, id := range ids {
		j, ok := pos[id]
		if !ok {
			j = len(out)
			pos[id] = j
			out = append(out, QueryRanks{ID: id, Type: types[i]})
		} else if out[j].Type != types[i] {
			return nil, fmt.Errorf("report: rank rows: query %d has type %q and %q", id, out[j].Type, types[i])
		}
		out[j].Ranks = append(out[j].Ranks, ranks[i])
	}
	return out, nil
}

// DefaultResamples is the number of bootstrap resamples when [Options.Resamples] is 0.
const DefaultResamples = 1000

// DefaultLevel is the confidence level of the bootstrap interval when [Options.Level] is 0.
const DefaultLevel = 0.95

// MinResamples is the fewest bootstrap resamples a percentile interval at level takes:
// each tail, (1−level)/2 of them, must hold at least one resample, so that the interval's
// ends are not the smallest and largest resample (40 at 95%). With fewer, the interval
// is that of a handful of draws, and one resample makes it a single point.
func MinResamples(level float64) int {
	return int(math.Ceil(2/(1-level) - 1e-9))
}

// Options control [Summarize].
type Options struct {
	// Resamples is the number B of bootstrap resamples: 0 means DefaultResamples, a
	// negative value turns the bootstrap off (Lo and Hi are then NaN).
	Resamples int
	// Seed seeds the bootstrap's random numbers; the same seed gives the same intervals.
	Seed uint64
	// Level is the confidence level of the interval, in (0, 1); 0 means DefaultLevel.
	Level float64
}

// Stat is one metric's statistics, as raw fractions.
type Stat struct {
	Mean float64 // mean over seeds
	Std  float64 // sample standard deviation across seeds (n−1); 0 with one seed
	// Lo and Hi are the bootstrap percentile interval over queries; NaN when the bootstrap
	// is off.
	Lo, Hi float64
}

// Metric names one of the four metrics.
type Metric int

// The metrics, in the order of eval.Metrics.
const (
	MRR Metric = iota
	Hits1
	Hits3
	Hits10
)

var metricNames = [...]string{"MRR", "Hits@1", "Hits@3", "Hits@10"}

func (m Metric) String() string {
	if m >= 0 && int(m) < len(metricNames) {
		return metricNames[m]
	}
	return fmt.Sprintf("Metric(%d)", int(m))
}

// Stats are the statistics of the four metrics.
type Stats struct {
	MRR, H1, H3, H10 Stat
}

// Get returns the statistics of metric m.
func (s *Stats) Get(m Metric) Stat {
	switch m {
	case Hits1:
		return s.H1
	case Hits3:
		return s.H3
	case Hits10:
		return s.H10
	}
	return s.MRR
}

func (s *Stats) set(m int, st Stat) {
	switch Metric(m) {
	case MRR:
		s.MRR = st
	case Hits1:
		s.H1 = st
	case Hits3:
		s.H3 = st
	case Hits10:
		s.H10 = st
	}
}

// Mean returns the means over seeds.
func (s *Stats) Mean() eval.Metrics {
	return eval.Metrics{MRR: s.MRR.Mean, H1: s.H1.Mean, H3: s.H3.Mean, H10: s.H10.Mean}
}

// Std returns the standard deviations across seeds.
func (s *Stats) Std() eval.Metrics {
	return eval.Metrics{MRR: s.MRR.Std, H1: s.H1.Std, H3: s.H3.Std, H10: s.H10.Std}
}

// TypeStats are the statistics of one query type.
type TypeStats struct {
	Type    string
	Queries int // queries of this type (the same in every run)
	Stats
	PerSeed []eval.Metrics // the type's metrics in each run, in the order of the runs
}

// GroupStats are the statistics of a paper average over a group of types. They are only
// computed when every type of the group has queries; otherwise Complete is false, Stats
// and PerSeed are zero and Missing lists the absent types in the group's order.
type GroupStats struct {
	Types    []string
	Complete bool
	Missing  []string
	Stats
	PerSeed []eval.Metrics
}

// Aggregate is the result of [Summarize].
type Aggregate struct {
	Runs      []string // the runs' names, in input order
	Seeds     int      // number of runs
	Resamples int      // bootstrap resamples B; 0 when the bootstrap was off
	Level     float64  // confidence level of the intervals
	// Types holds every type with queries, in the order of eval.Summary: the papers' 14
	// types in their column order, then other named types, then custom names alphabetically.
	Types []TypeStats
	// EPFO averages query.EPFOTypes, Negation query.NegationTypes.
	EPFO, Negation GroupStats
}

// Type returns the statistics of one type, if it has queries.
func (a *Aggregate) Type(name string) (TypeStats, bool) {
	for _, t := range a.Types {
		if t.Type == name {
			return t, true
		}
	}
	return TypeStats{}, false
}

// ErrCoverage is wrapped by the error [Summarize] returns when the runs do not hold the
// same queries.
var ErrCoverage = errors.New("runs do not cover the same queries")

// qkey is a query of the reference run.
type qkey struct {
	id  int64
	typ string
}

// Summarize computes the statistics over seeds described in the package comment. Every run
// must hold the same queries: the same ids with the same types, each id once (the order may
// differ). Per-query metrics must lie in [0, 1].
func Summarize(runs []Run, opt Options) (*Aggregate, error) {
	if len(runs) == 0 {
		return nil, errors.New("report: no runs")
	}
	B := opt.Resamples
	if B == 0 {
		B = DefaultResamples
	}
	if B < 0 {
		B = 0
	}
	level := opt.Level
	if level == 0 {
		level = DefaultLevel
	}
	if !(level > 0 && level < 1) {
		return nil, fmt.Errorf("report: confidence level %v not in (0, 1)", opt.Level)
	}
	if min := MinResamples(level); B > 0 && B < min {
		return nil, fmt.Errorf("report: %d bootstrap resamples are too few for a %s interval: at least %d", B, levelString(level), min)
	}

	// The reference order: the queries of run 0 sorted by (type column order, id).
	for i := range runs {
		if err := checkRun(&runs[i], i); err != nil {
			return nil, err
		}
	}
	ref := make([]qkey, len(runs[0].Queries))
	for i, q := range runs[0].Queries {
		ref[i] = qkey{q.ID, q.Type}
	}
	if len(ref) == 0 {
		return nil, fmt.Errorf("report: %s holds no queries", runs[0].label(0))
	}
	slices.SortFunc(ref, func(x, y qkey) int {
		return cmp.Or(compareTypes(x.typ, y.typ), cmp.Compare(x.id, y.id))
	})
	pos := make(map[int64]int, len(ref))
	for i, k := range ref {
		pos[k.id] = i
	}

	// vals[q*S+s] holds query q's metrics in run s.
	S := len(runs)
	vals := make([][4]float64, len(ref)*S)
	for s := range runs {
		if err := coverage(runs, s, ref, pos); err != nil {
			return nil, err
		}
		for _, q := range runs[s].Queries {
			vals[pos[q.ID]*S+s] = vec(q.Metrics)
		}
	}

	a := &Aggregate{Seeds: S, Resamples: B, Level: level}
	for _, r := range runs {
		a.Runs = append(a.Runs, r.Name)
	}

	// Types: contiguous ranges of ref.
	type span struct{ lo, hi int }
	var spans []span
	for i := 0; i < len(ref); {
		j := i
		for j < len(ref) && ref[j].typ == ref[i].typ {
			j++
		}
		spans = append(spans, span{i, j})
		i = j
	}
	a.Types = make([]TypeStats, len(spans))
	reps := make([][][4]float64, len(spans)) // bootstrap replicates per type
	var buf []float64
	avg := make([][4]float64, len(ref)) // per-query metrics averaged over seeds
	for t, sp := range spans {
		n := sp.hi - sp.lo
		ts := TypeStats{Type: ref[sp.lo].typ, Queries: n, PerSeed: make([]eval.Metrics, S)}
		perSeed := make([][4]float64, S)
		for s := range S {
			for m := range 4 {
				buf = buf[:0]
				for q := sp.lo; q < sp.hi; q++ {
					buf = append(buf, vals[q*S+s][m])
				}
				perSeed[s][m] = sortedMean(buf)
			}
			ts.PerSeed[s] = metrics(perSeed[s])
		}
		// Summed in ascending order, not the runs' order: the seeds are a set, and the
		// order in which their files are given must not change a bit of the result.
		for q := sp.lo; q < sp.hi; q++ {
			for m := range 4 {
				buf = buf[:0]
				for s := range S {
					buf = append(buf, vals[q*S+s][m])
				}
				avg[q][m] = sortedMean(buf)
			}
		}
		ts.Stats = seedStats(perSeed)
		a.Types[t] = ts
	}
	if B > 0 {
		bootstrapTypes(reps, func(t int) (string, [][4]float64) {
			return a.Types[t].Type, avg[spans[t].lo:spans[t].hi]
		}, B, opt.Seed)
		for t := range a.Types {
			setIntervals(&a.Types[t].Stats, reps[t], level)
		}
	} else {
		for t := range a.Types {
			setIntervals(&a.Types[t].Stats, nil, level)
		}
	}
	a.EPFO = a.group(query.EPFOTypes, reps, level)
	a.Negation = a.group(query.NegationTypes, reps, level)
	return a, nil
}

// checkRun checks one run on its own: non-empty types, ids unique, metrics in [0, 1].
func checkRun(r *Run, i int) error {
	seen := make(map[int64]struct{}, len(r.Queries))
	for _, q := range r.Queries {
		if q.Type == "" {
			return fmt.Errorf("report: %s: query %d has no type", r.label(i), q.ID)
		}
		if _, dup := seen[q.ID]; dup {
			return fmt.Errorf("report: %s: query id %d appears more than once", r.label(i), q.ID)
		}
		seen[q.ID] = struct{}{}
		for m, v := range vec(q.Metrics) {
			if !(v >= 0 && v <= 1) {
				return fmt.Errorf("report: %s: query %d (%s): %s = %v not in [0, 1]", r.label(i), q.ID, q.Type, Metric(m), v)
			}
		}
	}
	return nil
}

// coverage checks that run s holds exactly the queries of ref (run 0's, ids unique in both).
func coverage(runs []Run, s int, ref []qkey, pos map[int64]int) error {
	r := &runs[s]
	if s == 0 {
		return nil
	}
	var extra, mismatch []string
	found := make([]bool, len(ref))
	for _, q := range r.Queries {
		p, ok := pos[q.ID]
		if !ok {
			extra = append(extra, fmt.Sprintf("id %d (%s)", q.ID, q.Type))
			continue
		}
		found[p] = true
		if ref[p].typ != q.Type {
			mismatch = append(mismatch, fmt.Sprintf("id %d is %s here, %s there", q.ID, q.Type, ref[p].typ))
		}
	}
	var missing []string
	for p, f := range found {
		if !f {
			missing = append(missing, fmt.Sprintf("id %d (%s)", ref[p].id, ref[p].typ))
		}
	}
	if len(extra)+len(missing)+len(mismatch) == 0 {
		return nil
	}
	var parts []string
	for _, d := range []struct {
		what string
		list []string
	}{
		{"missing", missing},
		{"extra", extra},
		{"with another type", mismatch},
	} {
		if len(d.list) == 0 {
			continue
		}
		ex := d.list[:min(3, len(d.list))]
		more := ""
		if len(d.list) > len(ex) {
			more = ", …"
		}
		parts = append(parts, fmt.Sprintf("%d %s (%s%s)", len(d.list), d.what, strings.Join(ex, ", "), more))
	}
	return fmt.Errorf("report: %w: %s against %s (%d queries vs %d): %s",
		ErrCoverage, r.label(s), runs[0].label(0), len(r.Queries), len(ref), strings.Join(parts, "; "))
}

// compareTypes orders type names as eval.Summary does: the papers' 14 columns
// (query.EvalTypes) first, in their order, then other named types in query.TypeOrder
// order, then custom names alphabetically.
func compareTypes(x, y string) int {
	return cmp.Or(cmp.Compare(columnOrder(x), columnOrder(y)), strings.Compare(x, y))
}

func columnOrder(name string) int {
	if i := slices.Index(query.EvalTypes, name); i >= 0 {
		return i
	}
	return len(query.EvalTypes) + query.TypeOrder(name)
}

func vec(m eval.Metrics) [4]float64 { return [4]float64{m.MRR, m.H1, m.H3, m.H10} }

func metrics(v [4]float64) eval.Metrics {
	return eval.Metrics{MRR: v[0], H1: v[1], H3: v[2], H10: v[3]}
}

// sortedMean returns the mean of xs summed in ascending order, as eval does, so that a
// run's type means equal eval.Summary's bit for bit. xs is sorted in place.
func sortedMean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return sortedSum(xs) / float64(len(xs))
}

// sortedSum returns the sum of xs in ascending order. xs is sorted in place.
func sortedSum(xs []float64) float64 {
	slices.Sort(xs)
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum
}

// seedStats returns the mean and sample standard deviation over seeds of each metric. Both
// sum in ascending order, so that the order of the runs (the seeds, a set) changes nothing.
func seedStats(perSeed [][4]float64) Stats {
	var st Stats
	n := float64(len(perSeed))
	xs := make([]float64, len(perSeed))
	for m := range 4 {
		for s, v := range perSeed {
			xs[s] = v[m]
		}
		mean := sortedMean(xs)
		for s, v := range perSeed {
			d := v[m] - mean
			xs[s] = d * d
		}
		ss := sortedSum(xs)
		std := 0.0
		if len(perSeed) > 1 {
			std = math.Sqrt(ss / (n - 1))
		}
		st.set(m, Stat{Mean: mean, Std: std})
	}
	return st
}

// group computes a paper average from the types' per-seed metrics and replicates.
func (a *Aggregate) group(types []string, reps [][][4]float64, level float64) GroupStats {
	g := GroupStats{Types: slices.Clone(types)}
	idx := make([]int, 0, len(types))
	for _, name := range types {
		i := slices.IndexFunc(a.Types, func(t TypeStats) bool { return t.Type == name })
		if i < 0 {
			g.Missing = append(g.Missing, name)
			continue
		}
		idx = append(idx, i)
	}
	if len(g.Missing) > 0 || len(types) == 0 {
		return g
	}
	g.Complete = true
	k := float64(len(idx))
	perSeed := make([][4]float64, a.Seeds)
	g.PerSeed = make([]eval.Metrics, a.Seeds)
	for s := range perSeed {
		for _, i := range idx {
			v := vec(a.Types[i].PerSeed[s])
			for m := range 4 {
				perSeed[s][m] += v[m]
			}
		}
		for m := range 4 {
			perSeed[s][m] /= k
		}
		g.PerSeed[s] = metrics(perSeed[s])
	}
	g.Stats = seedStats(perSeed)
	var grep [][4]float64
	if a.Resamples > 0 {
		grep = make([][4]float64, a.Resamples)
		for b := range grep {
			for _, i := range idx {
				for m := range 4 {
					grep[b][m] += reps[i][b][m]
				}
			}
			for m := range 4 {
				grep[b][m] /= k
			}
		}
	}
	setIntervals(&g.Stats, grep, level)
	return g
}
