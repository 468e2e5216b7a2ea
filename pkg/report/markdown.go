package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/query"
)

// Missing is printed for a type or average that has no value.
const Missing = "–"

// TableOptions control the Markdown tables.
type TableOptions struct {
	// Label is our rows' label; "ours" when empty. With several seeds " (N seeds)" is added.
	Label string
	// Decimals is the number of decimals of our values ×100; 0 means 2. Published values
	// are printed as published, with one decimal.
	Decimals int
	// Interval adds a row with the bootstrap interval under each of our rows.
	Interval bool
	// Compare adds the published RoConE and ConE rows of Dataset to the MRR table.
	Compare bool
	// Dataset names the dataset ("FB15k-237", "nell", ...): the published rows' dataset with
	// Compare, and the title of WriteMarkdown.
	Dataset string
}

// compareModels are the published rows put beside ours with Compare.
var compareModels = []string{"RoConE", "ConE"}

// column is one value column of the tables: a type, or a group average.
type column struct {
	header string
	typ    string   // a type name, or "" for a group average
	group  []string // the group's types
	neg    bool     // the group is the negation group
}

// columns returns the papers' column order: the EPFO types, their AVG, the negation types,
// their AVG; then a column for each other type that a has (e.g. 2u-DM), in a's order.
func columns(a *Aggregate) []column {
	var cs []column
	for i, g := range [][]string{query.EPFOTypes, query.NegationTypes} {
		for _, t := range g {
			cs = append(cs, column{header: t, typ: t})
		}
		cs = append(cs, column{header: "AVG", group: g, neg: i == 1})
	}
	for _, t := range a.Types {
		if !slices.Contains(query.EvalTypes, t.Type) {
			cs = append(cs, column{header: t.Type, typ: t.Type})
		}
	}
	return cs
}

func (o *TableOptions) decimals() int {
	if o.Decimals <= 0 {
		return 2
	}
	return o.Decimals
}

func (o *TableOptions) baseLabel() string { return cmp.Or(o.Label, "ours") }

func (o *TableOptions) label(a *Aggregate) string {
	l := o.baseLabel()
	if a.Seeds > 1 {
		l += fmt.Sprintf(" (%d seeds)", a.Seeds)
	}
	return l
}

// stat returns our statistics of column c, if there are any.
func (a *Aggregate) stat(c column, m Metric) (Stat, bool) {
	if c.typ != "" {
		t, ok := a.Type(c.typ)
		if !ok {
			return Stat{}, false
		}
		return t.Get(m), true
	}
	g := &a.EPFO
	if c.neg {
		g = &a.Negation
	}
	if !g.Complete {
		return Stat{}, false
	}
	return g.Get(m), true
}

// meanCell formats a mean ×100, with "± std" when there are several seeds.
func meanCell(a *Aggregate, st Stat, ok bool, dec int) string {
	if !ok {
		return Missing
	}
	s := strconv.FormatFloat(eval.Percent(st.Mean), 'f', dec, 64)
	if a.Seeds > 1 {
		s += " ± " + strconv.FormatFloat(eval.Percent(st.Std), 'f', dec, 64)
	}
	return s
}

// intervalCell formats a bootstrap interval ×100 as "[lo, hi]".
func intervalCell(a *Aggregate, st Stat, ok bool, dec int) string {
	if !ok || a.Resamples == 0 {
		return Missing
	}
	return "[" + strconv.FormatFloat(eval.Percent(st.Lo), 'f', dec, 64) + ", " +
		strconv.FormatFloat(eval.Percent(st.Hi), 'f', dec, 64) + "]"
}

func levelString(level float64) string {
	return strconv.FormatFloat(100*level, 'f', -1, 64) + "%"
}

// ourRows returns our row for metric m, and its interval row with opt.Interval.
func ourRows(a *Aggregate, m Metric, label string, opt *TableOptions) [][]string {
	dec := opt.decimals()
	row := []string{label}
	ci := []string{label + " " + levelString(a.Level) + " CI"}
	for _, c := range columns(a) {
		st, ok := a.stat(c, m)
		row = append(row, meanCell(a, st, ok, dec))
		ci = append(ci, intervalCell(a, st, ok, dec))
	}
	if opt.Interval {
		return [][]string{row, ci}
	}
	return [][]string{row}
}

// publishedRow returns a published row in the table's columns.
func publishedRow(a *Aggregate, p *Published) []string {
	row := []string{p.Label()}
	for _, c := range columns(a) {
		var v float64
		var ok bool
		if c.typ != "" {
			v, ok = p.Value(c.typ)
		} else {
			v, ok = p.Average(c.group)
		}
		if ok {
			row = append(row, strconv.FormatFloat(v, 'f', 1, 64))
		} else {
			row = append(row, Missing)
		}
	}
	return row
}

// ourNote describes our numbers.
func ourNote(a *Aggregate, what string, opt *TableOptions) string {
	var b strings.Builder
	b.WriteString(what + " ×100, filtered ranks of the hard answers; ")
	if a.Seeds > 1 {
		fmt.Fprintf(&b, "%s: mean ± sample std (n−1) over %d seeds. ", opt.baseLabel(), a.Seeds)
	} else {
		fmt.Fprintf(&b, "%s: one seed. ", opt.baseLabel())
	}
	b.WriteString("AVG: unweighted mean over the 9 EPFO and the 5 negation types. " + Missing + ": not evaluated.")
	if opt.Interval {
		if a.Resamples > 0 {
			fmt.Fprintf(&b, " CI: bootstrap %s percentile interval over queries (B = %d).", levelString(a.Level), a.Resamples)
		} else {
			b.WriteString(" CI: bootstrap off.")
		}
	}
	return b.String()
}

// MRRTable returns the MRR table in the layout of the papers' tables, followed by notes:
// our row (with opt.Interval also the interval row) and, with opt.Compare, the published
// RoConE and ConE rows of opt.Dataset.
func MRRTable(a *Aggregate, opt TableOptions) (string, error) {
	rows := [][]string{{"model"}}
	for _, c := range columns(a) {
		rows[0] = append(rows[0], c.header)
	}
	rows = append(rows, ourRows(a, MRR, opt.label(a), &opt)...)
	notes := []string{ourNote(a, "MRR", &opt)}
	if opt.Compare {
		pub, note, err := publishedRows(a, opt.Dataset)
		if err != nil {
			return "", err
		}
		rows = append(rows, pub...)
		notes = append(notes, note)
	}
	return markdownTable(rows) + "\n" + strings.Join(notes, "\n\n") + "\n", nil
}

// publishedRows returns the published RoConE and ConE rows of dataset in a's columns, and
// the note that gives their sources.
func publishedRows(a *Aggregate, dataset string) ([][]string, string, error) {
	ds, err := CanonicalDataset(dataset)
	if err != nil {
		return nil, "", err
	}
	var rows [][]string
	note := fmt.Sprintf("Published %s rows (the papers' tables, kept in pkg/report/published.go; their AVG is the mean of the rounded per-type values):\n", ds)
	for _, model := range compareModels {
		p, err := LookupPublished(ds, model)
		if err != nil {
			note += fmt.Sprintf("\n- no published %s row for %s", model, ds)
			continue
		}
		rows = append(rows, publishedRow(a, &p))
		note += fmt.Sprintf("\n- %s: %s", p.Label(), p.Ref)
	}
	return rows, note, nil
}

// HitsTable returns our Hits@1, Hits@3 and Hits@10 in the columns of the MRR table,
// followed by a note. The papers publish no Hits@K, so there is nothing to compare with.
func HitsTable(a *Aggregate, opt TableOptions) string {
	label := opt.label(a)
	rows := [][]string{{label}}
	for _, c := range columns(a) {
		rows[0] = append(rows[0], c.header)
	}
	for _, m := range []Metric{Hits1, Hits3, Hits10} {
		rows = append(rows, ourRows(a, m, m.String(), &opt)...)
	}
	note := ourNote(a, "Hits@K", &opt)
	if opt.Compare {
		note += " The papers publish no Hits@K (RoConE reports MRR only)."
	}
	return markdownTable(rows) + "\n" + note + "\n"
}

// WriteMarkdown writes the MRR table and the Hits@K table, each under a bold title.
func WriteMarkdown(w io.Writer, a *Aggregate, opt TableOptions) error {
	mrr, err := MRRTable(a, opt)
	if err != nil {
		return err
	}
	suffix := ""
	if opt.Dataset != "" {
		name := opt.Dataset
		if c, err := CanonicalDataset(name); err == nil {
			name = c
		}
		suffix = " — " + name
	}
	var b strings.Builder
	b.WriteString("**MRR ×100" + suffix + "**\n\n")
	b.WriteString(mrr)
	b.WriteString("\n**Hits@1/3/10 ×100" + suffix + "**\n\n")
	b.WriteString(HitsTable(a, opt))
	_, err = io.WriteString(w, b.String())
	return err
}

// CellBreak returns the first rune of s that would break a Markdown table cell holding s:
// a control character (a newline ends the row) or '|' (a column break), and with code,
// where the cell sets s in backquotes, a '`', which would end them. ok is false when s has
// none. Names that users choose and the tables print (a --label, a results entry's folder
// and fields) are checked with it before any work.
func CellBreak(s string, code bool) (r rune, ok bool) {
	i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == '|' || code && r == '`' })
	if i < 0 {
		return 0, false
	}
	r, _ = utf8.DecodeRuneInString(s[i:])
	return r, true
}

// markdownTable renders rows (the first is the header) as a Markdown table whose columns
// are padded to a common width: the first column left-aligned, the others right-aligned.
// Widths count runes, so "±" and "–" take one column as in a terminal.
func markdownTable(rows [][]string) string {
	ncol := 0
	for _, r := range rows {
		ncol = max(ncol, len(r))
	}
	width := make([]int, ncol)
	for i := range width {
		width[i] = 3
	}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	line := func(r []string) {
		b.WriteString("|")
		for i := range ncol {
			c := ""
			if i < len(r) {
				c = r[i]
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(" " + c + pad + " |")
			} else {
				b.WriteString(" " + pad + c + " |")
			}
		}
		b.WriteString("\n")
	}
	line(rows[0])
	b.WriteString("|")
	for i := range ncol {
		if i == 0 {
			b.WriteString(":" + strings.Repeat("-", width[i]+1) + "|")
		} else {
			b.WriteString(strings.Repeat("-", width[i]+1) + ":|")
		}
	}
	b.WriteString("\n")
	for _, r := range rows[1:] {
		line(r)
	}
	return b.String()
}
