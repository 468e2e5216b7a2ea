package report

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// goldenCompare: two seeds, two types, compared with the published FB15k-237 rows.
const goldenCompare = `| model          |           1p |   2p |   3p |   2i |   3i |   pi |   ip |   2u |   up |  AVG |          2in | 3in | inp | pin | pni | AVG |
|:---------------|-------------:|-----:|-----:|-----:|-----:|-----:|-----:|-----:|-----:|-----:|-------------:|----:|----:|----:|----:|----:|
| ours (2 seeds) | 42.50 ± 7.07 |    – |    – |    – |    – |    – |    – |    – |    – |    – | 10.00 ± 0.00 |   – |   – |   – |   – |   – |
| RoConE [paper] |         42.2 | 10.5 |  7.5 | 33.5 | 48.1 | 23.5 | 14.5 | 12.8 |  8.9 | 22.4 |          4.1 | 7.9 | 6.9 | 3.1 | 2.8 | 5.0 |
| ConE [paper]   |         41.8 | 12.8 | 11.0 | 32.6 | 47.3 | 25.5 | 14.0 | 14.5 | 10.8 | 23.4 |          5.4 | 8.6 | 7.8 | 4.0 | 3.6 | 5.9 |

MRR ×100, filtered ranks of the hard answers; ours: mean ± sample std (n−1) over 2 seeds. AVG: unweighted mean over the 9 EPFO and the 5 negation types. –: not evaluated.

Published FB15k-237 rows (the papers' tables, kept in pkg/report/published.go; their AVG is the mean of the rounded per-type values):

- RoConE [paper]: RoConE paper Table 1 (EPFO), Table 2 (negation), appendix (std over 10 seeds)
- ConE [paper]: RoConE paper Table 1 (EPFO), Table 2 (negation)
`

// goldenOneSeed: one seed, one query per type (so the intervals are single points), an
// extra type (2u-DM) after the papers' columns, a custom label and one decimal.
const goldenOneSeed = `**MRR ×100**

| model                |           1p |           2p |  3p |  2i |  3i |  pi |  ip |  2u |  up | AVG | 2in |        3in | inp | pin | pni | AVG |        2u-DM |
|:---------------------|-------------:|-------------:|----:|----:|----:|----:|----:|----:|----:|----:|----:|-----------:|----:|----:|----:|----:|-------------:|
| RoConE (ours)        |         50.0 |         12.5 |   – |   – |   – |   – |   – |   – |   – |   – |   – |        5.0 |   – |   – |   – |   – |         30.0 |
| RoConE (ours) 95% CI | [50.0, 50.0] | [12.5, 12.5] |   – |   – |   – |   – |   – |   – |   – |   – |   – | [5.0, 5.0] |   – |   – |   – |   – | [30.0, 30.0] |

MRR ×100, filtered ranks of the hard answers; RoConE (ours): one seed. AVG: unweighted mean over the 9 EPFO and the 5 negation types. –: not evaluated. CI: bootstrap 95% percentile interval over queries (B = 1000).

**Hits@1/3/10 ×100**

| RoConE (ours)  |             1p |             2p |  3p |  2i |  3i |  pi |  ip |  2u |  up | AVG | 2in |            3in | inp | pin | pni | AVG |          2u-DM |
|:---------------|---------------:|---------------:|----:|----:|----:|----:|----:|----:|----:|----:|----:|---------------:|----:|----:|----:|----:|---------------:|
| Hits@1         |           25.0 |            6.2 |   – |   – |   – |   – |   – |   – |   – |   – |   – |            2.5 |   – |   – |   – |   – |           15.0 |
| Hits@1 95% CI  |   [25.0, 25.0] |     [6.2, 6.2] |   – |   – |   – |   – |   – |   – |   – |   – |   – |     [2.5, 2.5] |   – |   – |   – |   – |   [15.0, 15.0] |
| Hits@3         |           50.0 |           12.5 |   – |   – |   – |   – |   – |   – |   – |   – |   – |            5.0 |   – |   – |   – |   – |           30.0 |
| Hits@3 95% CI  |   [50.0, 50.0] |   [12.5, 12.5] |   – |   – |   – |   – |   – |   – |   – |   – |   – |     [5.0, 5.0] |   – |   – |   – |   – |   [30.0, 30.0] |
| Hits@10        |          100.0 |          100.0 |   – |   – |   – |   – |   – |   – |   – |   – |   – |          100.0 |   – |   – |   – |   – |          100.0 |
| Hits@10 95% CI | [100.0, 100.0] | [100.0, 100.0] |   – |   – |   – |   – |   – |   – |   – |   – |   – | [100.0, 100.0] |   – |   – |   – |   – | [100.0, 100.0] |

Hits@K ×100, filtered ranks of the hard answers; RoConE (ours): one seed. AVG: unweighted mean over the 9 EPFO and the 5 negation types. –: not evaluated. CI: bootstrap 95% percentile interval over queries (B = 1000).
`

func TestMarkdownGolden(t *testing.T) {
	twoSeeds := []Run{
		{Queries: []QueryResult{qr(1, "1p", 0.5), qr(2, "1p", 0.25), qr(3, "2in", 0.1)}},
		{Queries: []QueryResult{qr(3, "2in", 0.1), qr(1, "1p", 0.5), qr(2, "1p", 0.45)}},
	}
	oneSeed := []Run{{Name: "s", Queries: []QueryResult{
		qr(1, "1p", 0.5), qr(2, "2p", 0.125), qr(3, "3in", 0.05), qr(4, "2u-DM", 0.3),
	}}}
	for _, tc := range []struct {
		name   string
		runs   []Run
		opt    Options
		render func(*Aggregate) (string, error)
		want   string
	}{
		{"compare", twoSeeds, Options{Resamples: -1}, func(a *Aggregate) (string, error) {
			return MRRTable(a, TableOptions{Compare: true, Dataset: "fb15k-237"})
		}, goldenCompare},
		{"one seed", oneSeed, Options{}, func(a *Aggregate) (string, error) {
			var b strings.Builder
			err := WriteMarkdown(&b, a, TableOptions{Label: "RoConE (ours)", Decimals: 1, Interval: true})
			return b.String(), err
		}, goldenOneSeed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Summarize(tc.runs, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.render(a)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			checkTables(t, got)
		})
	}
}

// checkTables checks that every Markdown table in s is aligned: its lines have the same
// width in runes and the same number of cells, with a delimiter row after the header.
func checkTables(t *testing.T, s string) {
	t.Helper()
	var table []string
	flush := func() {
		if len(table) == 0 {
			return
		}
		if len(table) < 3 || strings.Trim(table[1], "|:-") != "" {
			t.Errorf("table without header and delimiter rows:\n%s", strings.Join(table, "\n"))
		}
		for _, l := range table {
			if utf8.RuneCountInString(l) != utf8.RuneCountInString(table[0]) ||
				strings.Count(l, "|") != strings.Count(table[0], "|") ||
				!strings.HasSuffix(l, "|") {
				t.Errorf("misaligned line\n%s\nunder\n%s", l, table[0])
			}
		}
		table = nil
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "|") {
			table = append(table, l)
		} else {
			flush()
		}
	}
	flush()
}

func TestMarkdownCompare(t *testing.T) {
	a, err := Summarize(synthetic(3, 4, 1), Options{Resamples: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dataset string
		want    []string // substrings
		not     []string
		err     string
	}{
		{"NELL-995", []string{"| RoConE [paper] ", "54.5", "| ConE [paper] ", "Published NELL995 rows"}, nil, ""},
		{"fb15k", []string{"| ConE [memory]  ", "73.3", "no published RoConE row for FB15k", "recalled from memory"}, []string{"RoConE [paper]"}, ""},
		{"wn18rr", nil, nil, "no published results for dataset \"wn18rr\""},
	} {
		s, err := MRRTable(a, TableOptions{Compare: true, Dataset: tc.dataset, Interval: true})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.dataset, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(s, w) {
				t.Errorf("%s: no %q in\n%s", tc.dataset, w, s)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(s, w) {
				t.Errorf("%s: %q in\n%s", tc.dataset, w, s)
			}
		}
		if !strings.Contains(s, "| ours (3 seeds) 95% CI |") || strings.Count(s, "(verify)") > 1 {
			t.Errorf("%s: no interval row, or a repeated reference:\n%s", tc.dataset, s)
		}
		checkTables(t, s)
	}
	h := HitsTable(a, TableOptions{Compare: true})
	if !strings.Contains(h, "| Hits@10 ") || !strings.Contains(h, "publish no Hits@K") {
		t.Errorf("hits table:\n%s", h)
	}
	checkTables(t, h)
}
