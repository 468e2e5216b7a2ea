package report

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// ModelRow is one model of a side-by-side table: its label and its statistics over its
// seeds.
type ModelRow struct {
	Label     string
	Aggregate *Aggregate
}

func (r ModelRow) label() string {
	l := r.Label
	if r.Aggregate.Seeds > 1 {
		l += fmt.Sprintf(" (%d seeds)", r.Aggregate.Seeds)
	}
	return l
}

// WriteMarkdownModels writes the MRR and Hits@K tables of several models, one row per
// model (mean ± std over its seeds), in the papers' layout; opt.Compare adds the published
// rows, opt.Label is not used. The models must have been evaluated on the same queries
// (GroupModels checks it), so they share the columns.
func WriteMarkdownModels(w io.Writer, models []ModelRow, opt TableOptions) error {
	if len(models) == 0 {
		return errors.New("report: no models")
	}
	a0 := models[0].Aggregate
	cols := columns(a0)
	header := func(first string) []string {
		h := []string{first}
		for _, c := range cols {
			h = append(h, c.header)
		}
		return h
	}
	mrr := [][]string{header("model")}
	var notes []string
	for _, m := range models {
		mrr = append(mrr, ourRows(m.Aggregate, MRR, m.label(), &opt)...)
		what := "one seed"
		if m.Aggregate.Seeds > 1 {
			what = fmt.Sprintf("mean ± sample std (n−1) over %d seeds", m.Aggregate.Seeds)
		}
		notes = append(notes, fmt.Sprintf("%s: %s", m.Label, what))
	}
	note := "×100, filtered ranks of the hard answers; " + strings.Join(notes, "; ") +
		". AVG: unweighted mean over the 9 EPFO and the 5 negation types. " + Missing + ": not evaluated."
	mrrNotes := []string{"MRR " + note}
	if opt.Compare {
		pub, pnote, err := publishedRows(a0, opt.Dataset)
		if err != nil {
			return err
		}
		mrr = append(mrr, pub...)
		mrrNotes = append(mrrNotes, pnote)
	}
	hits := [][]string{header("model")}
	for _, m := range models {
		for _, k := range []Metric{Hits1, Hits3, Hits10} {
			hits = append(hits, ourRows(m.Aggregate, k, m.label()+" "+k.String(), &opt)...)
		}
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
	b.WriteString(markdownTable(mrr) + "\n" + strings.Join(mrrNotes, "\n\n") + "\n")
	b.WriteString("\n**Hits@1/3/10 ×100" + suffix + "**\n\n")
	b.WriteString(markdownTable(hits) + "\nHits@K " + note + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}
