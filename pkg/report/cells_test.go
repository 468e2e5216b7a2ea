package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/query"
)

// tableCells returns the cells of the Markdown table row whose first cell is label, by
// the header of their column (the first AVG is the EPFO one, the second the negation one).
func tableCells(t *testing.T, table, label string) map[string]string {
	t.Helper()
	var header []string
	for _, l := range strings.Split(table, "\n") {
		if !strings.HasPrefix(l, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if header == nil {
			header = cells
			for i, h := range header {
				if h == "AVG" {
					header[i] = "AVG " + header[i-1] // AVG after 9 EPFO types, or after pni
				}
			}
			continue
		}
		if cells[0] == label {
			out := map[string]string{}
			for i, c := range cells[1:] {
				out[header[i+1]] = c
			}
			return out
		}
	}
	t.Fatalf("no row %q in\n%s", label, table)
	return nil
}

// TestMarkdownCells: every value cell of our MRR row is its own column's statistic: a
// type's mean ± std ×100, and each AVG column its own group's (the EPFO average after
// the EPFO types, the negation average after the negation types), which differ here;
// with the bootstrap off, the interval row is all "–" and the note says so.
func TestMarkdownCells(t *testing.T) {
	a, err := Summarize(synthetic(2, 4, 1), Options{Resamples: -1})
	if err != nil {
		t.Fatal(err)
	}
	if a.EPFO.MRR.Mean == a.Negation.MRR.Mean {
		t.Fatal("the two averages are equal; the test cannot tell their columns apart")
	}
	s, err := MRRTable(a, TableOptions{Interval: true})
	if err != nil {
		t.Fatal(err)
	}
	cell := func(st Stat) string { return fmt.Sprintf("%.2f ± %.2f", 100*st.Mean, 100*st.Std) }
	want := map[string]string{"AVG up": cell(a.EPFO.MRR), "AVG pni": cell(a.Negation.MRR)}
	for _, typ := range append(query.EvalTypes, "2u-DM") {
		ts, ok := a.Type(typ)
		if !ok {
			t.Fatalf("no type %s", typ)
		}
		want[typ] = cell(ts.MRR)
	}
	got := tableCells(t, s, "ours (2 seeds)")
	ci := tableCells(t, s, "ours (2 seeds) 95% CI")
	if len(got) != len(want) {
		t.Errorf("%d columns, want %d", len(got), len(want))
	}
	for col, w := range want {
		if got[col] != w {
			t.Errorf("column %s: %q, want %q", col, got[col], w)
		}
		if ci[col] != Missing {
			t.Errorf("column %s: interval %q with the bootstrap off, want %s", col, ci[col], Missing)
		}
	}
	if !strings.Contains(s, " CI: bootstrap off.") || strings.Contains(s, "B = ") {
		t.Errorf("note of an interval row with the bootstrap off:\n%s", s)
	}
}

// TestWriteMarkdownTitle: both tables' titles name the dataset, canonically when it has
// published results and as given otherwise, and nothing without one.
func TestWriteMarkdownTitle(t *testing.T) {
	a, err := Summarize(synthetic(1, 2, 1), Options{Resamples: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dataset, suffix string }{
		{"nell", " — NELL995"}, {"fb15k-237", " — FB15k-237"}, {"wn18rr", " — wn18rr"}, {"", ""},
	} {
		var b strings.Builder
		if err := WriteMarkdown(&b, a, TableOptions{Dataset: tc.dataset}); err != nil {
			t.Fatal(err)
		}
		for _, title := range []string{"**MRR ×100" + tc.suffix + "**\n", "**Hits@1/3/10 ×100" + tc.suffix + "**\n"} {
			if !strings.Contains(b.String(), title) {
				t.Errorf("dataset %q: no title %q in\n%s", tc.dataset, title, b.String())
			}
		}
	}
}
