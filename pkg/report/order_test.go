package report

import (
	"fmt"
	"testing"
)

// permutations returns every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// statsText prints every statistic of an aggregate that must not depend on the order in
// which the runs are given: the means, standard deviations and intervals of every type and
// of both averages, bit for bit (%b), and each run's own metrics keyed by the run's name.
func statsText(a *Aggregate) string {
	s := fmt.Sprintf("seeds %d resamples %d level %b\n", a.Seeds, a.Resamples, a.Level)
	stats := func(name string, st Stats) {
		for m := range 4 {
			x := st.Get(Metric(m))
			s += fmt.Sprintf("%s %s: %b %b %b %b\n", name, Metric(m), x.Mean, x.Std, x.Lo, x.Hi)
		}
	}
	for _, ts := range a.Types {
		stats(fmt.Sprintf("%s (%d)", ts.Type, ts.Queries), ts.Stats)
	}
	for _, g := range []GroupStats{a.EPFO, a.Negation} {
		if g.Complete {
			stats(fmt.Sprint(g.Types), g.Stats)
		}
	}
	return s
}

// TestSummarizeRunOrder: the seeds of one model are a set, so the order in which their
// runs (ranks files) are given must not change any statistic by a single bit: means,
// standard deviations and bootstrap intervals, per type and per paper average. The sums
// over seeds were taken in the runs' order, so `metrics r1 r2 r3` and `metrics r3 r1 r2`
// wrote metrics artifacts whose values differed in their last bits.
func TestSummarizeRunOrder(t *testing.T) {
	for _, S := range []int{2, 3, 4} {
		runs := synthetic(S, 30, uint64(40+S))
		for s := range runs {
			runs[s].Name = fmt.Sprintf("seed%d", s)
		}
		var want, fwant string
		for i, perm := range permutations(S) {
			given := make([]Run, S)
			seeds := make([]SeedTypes, S)
			for j, p := range perm {
				given[j] = runs[p]
				one, err := Summarize(runs[p:p+1], Options{Resamples: -1})
				if err != nil {
					t.Fatal(err)
				}
				seeds[j].Name = runs[p].Name
				for _, ts := range one.Types {
					seeds[j].Types = append(seeds[j].Types, SeedType{Type: ts.Type, Queries: ts.Queries, Metrics: ts.Mean()})
				}
			}
			a, err := Summarize(given, Options{Resamples: 200, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			got := statsText(a)
			if i == 0 {
				want = got
			} else if got != want {
				t.Errorf("S=%d: runs in the order %v: the statistics differ from the order %v", S, perm, permutations(S)[0])
			}
			// metrics results averages seeds from their per-type means (FromSeeds).
			f, err := FromSeeds(seeds)
			if err != nil {
				t.Fatal(err)
			}
			if fgot := statsText(f); i == 0 {
				fwant = fgot
			} else if fgot != fwant {
				t.Errorf("S=%d: FromSeeds of the runs in the order %v: the statistics differ from the order %v", S, perm, permutations(S)[0])
			}
		}
	}
}
