package report

import (
	"strings"
	"testing"
)

// goldenModels: two models side by side, one of two seeds and one of one, with one
// decimal and the published NELL995 rows: a row per model in each table, its label
// saying its seeds, and a note per model.
const goldenModels = `**MRR ×100 — NELL995**

| model            |          1p |   2p |   3p |   2i |   3i |   pi |   ip |   2u |   up |  AVG |        2in | 3in |  inp | pin | pni | AVG |
|:-----------------|------------:|-----:|-----:|-----:|-----:|-----:|-----:|-----:|-----:|-----:|-----------:|----:|-----:|----:|----:|----:|
| rocone (2 seeds) | 40.0 ± 14.1 |    – |    – |    – |    – |    – |    – |    – |    – |    – | 15.0 ± 7.1 |   – |    – |   – |   – |   – |
| cone             |        25.0 |    – |    – |    – |    – |    – |    – |    – |    – |    – |        5.0 |   – |    – |   – |   – |   – |
| RoConE [paper]   |        54.5 | 17.7 | 14.4 | 41.9 | 53.0 | 26.1 | 20.7 | 16.5 | 12.8 | 28.6 |        5.2 | 7.7 |  9.4 | 3.2 | 3.7 | 5.8 |
| ConE [paper]     |        53.1 | 16.1 | 13.9 | 40.0 | 50.8 | 26.3 | 17.5 | 15.3 | 11.3 | 27.1 |        5.7 | 8.1 | 10.8 | 3.5 | 3.9 | 6.4 |

MRR ×100, filtered ranks of the hard answers; rocone: mean ± sample std (n−1) over 2 seeds; cone: one seed. AVG: unweighted mean over the 9 EPFO and the 5 negation types. –: not evaluated.

Published NELL995 rows (the papers' tables, kept in pkg/report/published.go; their AVG is the mean of the rounded per-type values):

- RoConE [paper]: RoConE paper Table 1 (EPFO), Table 2 (negation), appendix (std over 10 seeds)
- ConE [paper]: RoConE paper Table 1 (EPFO), Table 2 (negation)

**Hits@1/3/10 ×100 — NELL995**

| model                    |          1p |  2p |  3p |  2i |  3i |  pi |  ip |  2u |  up | AVG |         2in | 3in | inp | pin | pni | AVG |
|:-------------------------|------------:|----:|----:|----:|----:|----:|----:|----:|----:|----:|------------:|----:|----:|----:|----:|----:|
| rocone (2 seeds) Hits@1  |  20.0 ± 7.1 |   – |   – |   – |   – |   – |   – |   – |   – |   – |   7.5 ± 3.5 |   – |   – |   – |   – |   – |
| rocone (2 seeds) Hits@3  | 40.0 ± 14.1 |   – |   – |   – |   – |   – |   – |   – |   – |   – |  15.0 ± 7.1 |   – |   – |   – |   – |   – |
| rocone (2 seeds) Hits@10 | 100.0 ± 0.0 |   – |   – |   – |   – |   – |   – |   – |   – |   – | 100.0 ± 0.0 |   – |   – |   – |   – |   – |
| cone Hits@1              |        12.5 |   – |   – |   – |   – |   – |   – |   – |   – |   – |         2.5 |   – |   – |   – |   – |   – |
| cone Hits@3              |        25.0 |   – |   – |   – |   – |   – |   – |   – |   – |   – |         5.0 |   – |   – |   – |   – |   – |
| cone Hits@10             |       100.0 |   – |   – |   – |   – |   – |   – |   – |   – |   – |       100.0 |   – |   – |   – |   – |   – |

Hits@K ×100, filtered ranks of the hard answers; rocone: mean ± sample std (n−1) over 2 seeds; cone: one seed. AVG: unweighted mean over the 9 EPFO and the 5 negation types. –: not evaluated.
`

// modelAggregates returns the aggregates of two models on the same queries: rocone over
// two seeds, cone over one.
func modelAggregates(t *testing.T) (seeds, one *Aggregate) {
	t.Helper()
	seeds, err := Summarize([]Run{
		{Queries: []QueryResult{qr(1, "1p", 0.5), qr(2, "2in", 0.1)}},
		{Queries: []QueryResult{qr(1, "1p", 0.3), qr(2, "2in", 0.2)}},
	}, Options{Resamples: -1})
	if err != nil {
		t.Fatal(err)
	}
	one, err = Summarize([]Run{{Queries: []QueryResult{qr(1, "1p", 0.25), qr(2, "2in", 0.05)}}}, Options{Resamples: -1})
	if err != nil {
		t.Fatal(err)
	}
	return seeds, one
}

func TestMarkdownModelsGolden(t *testing.T) {
	seeds, one := modelAggregates(t)
	var b strings.Builder
	if err := WriteMarkdownModels(&b, []ModelRow{{"rocone", seeds}, {"cone", one}}, TableOptions{Compare: true, Dataset: "nell", Decimals: 1}); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != goldenModels {
		t.Errorf("got\n%s\nwant\n%s", got, goldenModels)
	}
	checkTables(t, b.String())
}

// TestMarkdownModelsOptions: the title names the dataset (canonical when it is a known
// one, as given otherwise) and only then; without Compare there are no published rows;
// no models, or Compare on a dataset without published rows, is an error.
func TestMarkdownModelsOptions(t *testing.T) {
	seeds, one := modelAggregates(t)
	two := []ModelRow{{"rocone", seeds}, {"cone", one}}
	for _, tc := range []struct {
		name   string
		models []ModelRow
		opt    TableOptions
		want   []string
		not    []string
		err    string
	}{
		{"no dataset", two, TableOptions{}, []string{"**MRR ×100**\n", "**Hits@1/3/10 ×100**\n", "| rocone (2 seeds) | 40.00 ± 14.14 |", "| cone             |         25.00 |"},
			[]string{" — ", "[paper]", "Published"}, ""},
		{"an unknown dataset, no Compare", two, TableOptions{Dataset: "wn18rr"}, []string{"**MRR ×100 — wn18rr**", "**Hits@1/3/10 ×100 — wn18rr**"}, []string{"[paper]"}, ""},
		{"one model of one seed", two[1:], TableOptions{Dataset: "FB15k-237"}, []string{"**MRR ×100 — FB15k-237**", "| cone  | 25.00 |", "cone: one seed."}, []string{"seeds"}, ""},
		{"no models", nil, TableOptions{}, nil, nil, "report: no models"},
		{"Compare on an unknown dataset", two, TableOptions{Compare: true, Dataset: "wn18rr"}, nil, nil, `no published results for dataset "wn18rr"`},
	} {
		var b strings.Builder
		err := WriteMarkdownModels(&b, tc.models, tc.opt)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		s := b.String()
		for _, w := range tc.want {
			if !strings.Contains(s, w) {
				t.Errorf("%s: no %q in\n%s", tc.name, w, s)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(s, w) {
				t.Errorf("%s: %q in\n%s", tc.name, w, s)
			}
		}
		checkTables(t, s)
	}
}
