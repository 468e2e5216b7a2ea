package report_test

import (
	"fmt"

	"github.com/rocone/rocone/pkg/report"
)

// Summarize two seeds' ranks of the same test queries and print the papers' MRR table:
// the mean ± the standard deviation across seeds, ×100, beside the published rows.
func ExampleSummarize() {
	// The rows of a ranks artifact: (query id, type, filtered rank of one hard answer).
	ids := []int64{0, 1, 1, 2, 3}
	types := []string{"1p", "1p", "1p", "2in", "2in"}
	seedRanks := map[string][]int32{
		"seed 1": {1, 2, 4, 10, 5},
		"seed 2": {1, 1, 3, 4, 2},
	}
	var runs []report.Run
	for _, name := range []string{"seed 1", "seed 2"} {
		queries, err := report.GroupRanks(ids, types, seedRanks[name])
		if err != nil {
			panic(err)
		}
		run, err := report.RunFromRanks(name, queries)
		if err != nil {
			panic(err)
		}
		runs = append(runs, run)
	}
	a, err := report.Summarize(runs, report.Options{Seed: 1, Resamples: 200})
	if err != nil {
		panic(err)
	}
	for _, t := range a.Types {
		fmt.Printf("%s: %d queries, MRR %.4f ± %.4f\n", t.Type, t.Queries, t.MRR.Mean, t.MRR.Std)
	}
	table, err := report.MRRTable(a, report.TableOptions{Label: "rocone", Compare: true, Dataset: "FB15k-237"})
	if err != nil {
		panic(err)
	}
	fmt.Print(table)
	// Output:
	// 1p: 2 queries, MRR 0.7604 ± 0.1031
	// 2in: 2 queries, MRR 0.2625 ± 0.1591
	// | model            |            1p |   2p |   3p |   2i |   3i |   pi |   ip |   2u |   up |  AVG |           2in | 3in | inp | pin | pni | AVG |
	// |:-----------------|--------------:|-----:|-----:|-----:|-----:|-----:|-----:|-----:|-----:|-----:|--------------:|----:|----:|----:|----:|----:|
	// | rocone (2 seeds) | 76.04 ± 10.31 |    – |    – |    – |    – |    – |    – |    – |    – |    – | 26.25 ± 15.91 |   – |   – |   – |   – |   – |
	// | RoConE [paper]   |          42.2 | 10.5 |  7.5 | 33.5 | 48.1 | 23.5 | 14.5 | 12.8 |  8.9 | 22.4 |           4.1 | 7.9 | 6.9 | 3.1 | 2.8 | 5.0 |
	// | ConE [paper]     |          41.8 | 12.8 | 11.0 | 32.6 | 47.3 | 25.5 | 14.0 | 14.5 | 10.8 | 23.4 |           5.4 | 8.6 | 7.8 | 4.0 | 3.6 | 5.9 |
	//
	// MRR ×100, filtered ranks of the hard answers; rocone: mean ± sample std (n−1) over 2 seeds. AVG: unweighted mean over the 9 EPFO and the 5 negation types. –: not evaluated.
	//
	// Published FB15k-237 rows (the papers' tables, kept in pkg/report/published.go; their AVG is the mean of the rounded per-type values):
	//
	// - RoConE [paper]: RoConE paper Table 1 (EPFO), Table 2 (negation), appendix (std over 10 seeds)
	// - ConE [paper]: RoConE paper Table 1 (EPFO), Table 2 (negation)
}
