package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/rocone/rocone/pkg/query"
)

// Source says how trustworthy a published row is (docs/results.md §1, §4).
type Source string

const (
	// Paper marks numbers copied exactly from the RoConE paper's tables.
	Paper Source = "paper"
	// Memory marks numbers recalled from the ConE and BetaE papers (the FB15k tables); they
	// should be verified before being used as targets.
	Memory Source = "memory"
)

// Published is one model's published MRR on one dataset, merged over the tables that report
// it (EPFO and negation).
type Published struct {
	Dataset string // canonical name: "FB15k-237", "NELL995" or "FB15k"
	Model   string // e.g. "RoConE", "ConE", "BetaE", "Query2Box", "GQE", "RoConE (Base)"
	Source  Source
	Ref     string // the tables the numbers come from
	// MRR is the published MRR ×100 per type, as printed (one decimal). Types the tables do
	// not report are absent.
	MRR map[string]float64
	// Std is the published standard deviation across seeds, in MRR percentage points, per
	// type; only the RoConE rows have it (10 seeds, paper appendix). Nil otherwise.
	Std map[string]float64
}

// Value returns the published MRR ×100 of a type.
func (p *Published) Value(typ string) (float64, bool) {
	v, ok := p.MRR[typ]
	return v, ok
}

// Average returns the unweighted mean of the published values of types, e.g.
// query.EPFOTypes. As docs/results.md §2 says, it is the mean of the rounded
// per-type values, which can differ by ±0.1 from an AVG printed in a paper. ok is false if
// a type is missing.
func (p *Published) Average(types []string) (avg float64, ok bool) {
	if len(types) == 0 {
		return 0, false
	}
	var sum float64
	for _, t := range types {
		v, ok := p.MRR[t]
		if !ok {
			return 0, false
		}
		sum += v
	}
	return sum / float64(len(types)), true
}

// Label is the row label used in tables and legends, e.g. "RoConE [paper]".
func (p *Published) Label() string { return fmt.Sprintf("%s [%s]", p.Model, p.Source) }

// pubTable is one table of docs/results.md: rows of values in the order of cols.
type pubTable struct {
	dataset string
	src     Source
	ref     string
	cols    []string
	rows    []pubRow
}

type pubRow struct {
	model string
	vals  []float64
}

const (
	refPaper = "RoConE paper "
	refT1    = refPaper + "Table 1 (EPFO)"
	refT2    = refPaper + "Table 2 (negation)"
	refT3    = refPaper + "Table 3 (NELL995 ablation)"
	refFB    = "ConE (NeurIPS'21) / BetaE (NeurIPS'20) FB15k tables, recalled from memory (verify)"
)

// publishedTables is the tables of docs/results.md §1 and §4, row for row. Table 3's
// "RoConE" row is the same as Table 1's NELL995 row and is not repeated.
var publishedTables = []pubTable{
	{"FB15k-237", Paper, refT1, query.EPFOTypes, []pubRow{
		{"GQE", []float64{35.2, 7.4, 5.5, 23.6, 35.7, 16.7, 10.9, 8.4, 5.8}},
		{"Query2Box", []float64{41.3, 9.9, 7.2, 31.1, 45.4, 21.9, 13.3, 11.9, 8.1}},
		{"BetaE", []float64{39.0, 10.9, 10.0, 28.8, 42.5, 22.4, 12.6, 12.4, 9.7}},
		{"ConE", []float64{41.8, 12.8, 11.0, 32.6, 47.3, 25.5, 14.0, 14.5, 10.8}},
		{"RoConE", []float64{42.2, 10.5, 7.5, 33.5, 48.1, 23.5, 14.5, 12.8, 8.9}},
	}},
	{"NELL995", Paper, refT1, query.EPFOTypes, []pubRow{
		{"GQE", []float64{33.1, 12.1, 9.9, 27.3, 35.1, 18.5, 14.5, 8.5, 9.0}},
		{"Query2Box", []float64{42.7, 14.5, 11.7, 34.7, 45.8, 23.2, 17.4, 12.0, 10.7}},
		{"BetaE", []float64{53.0, 13.0, 11.4, 37.6, 47.5, 24.1, 14.3, 12.2, 8.5}},
		{"ConE", []float64{53.1, 16.1, 13.9, 40.0, 50.8, 26.3, 17.5, 15.3, 11.3}},
		{"RoConE", []float64{54.5, 17.7, 14.4, 41.9, 53.0, 26.1, 20.7, 16.5, 12.8}},
	}},
	{"FB15k-237", Paper, refT2, query.NegationTypes, []pubRow{
		{"BetaE", []float64{5.1, 7.9, 7.4, 3.6, 3.4}},
		{"ConE", []float64{5.4, 8.6, 7.8, 4.0, 3.6}},
		{"RoConE", []float64{4.1, 7.9, 6.9, 3.1, 2.8}},
	}},
	{"NELL995", Paper, refT2, query.NegationTypes, []pubRow{
		{"BetaE", []float64{5.1, 7.8, 10.0, 3.1, 3.5}},
		{"ConE", []float64{5.7, 8.1, 10.8, 3.5, 3.9}},
		{"RoConE", []float64{5.2, 7.7, 9.4, 3.2, 3.7}},
	}},
	{"NELL995", Paper, refT3, query.EPFOTypes, []pubRow{
		{"RoConE (Base)", []float64{53.1, 16.1, 13.9, 40.0, 50.8, 26.3, 17.5, 15.3, 11.3}},
		{"RoConE (S.E.)", []float64{51.3, 16.6, 13.8, 38.4, 48.4, 18.9, 19.5, 14.7, 12.1}},
		{"RoConE (Trunc)", []float64{53.7, 17.8, 14.2, 41.9, 53.0, 27.5, 20.4, 16.6, 12.7}},
	}},
	{"FB15k", Memory, refFB, query.EPFOTypes, []pubRow{
		{"GQE", []float64{54.6, 15.3, 10.8, 39.7, 51.4, 27.6, 19.1, 22.1, 11.6}},
		{"Query2Box", []float64{68.0, 21.0, 14.2, 55.1, 66.5, 39.4, 26.1, 35.1, 16.7}},
		{"BetaE", []float64{65.1, 25.7, 24.7, 55.8, 66.5, 43.9, 28.1, 40.1, 25.2}},
		{"ConE", []float64{73.3, 33.8, 29.2, 64.4, 73.7, 50.9, 35.7, 55.7, 31.4}},
	}},
	{"FB15k", Memory, refFB, query.NegationTypes, []pubRow{
		{"BetaE", []float64{14.3, 14.7, 11.5, 6.5, 12.4}},
		{"ConE", []float64{17.9, 18.7, 12.5, 9.8, 15.1}},
	}},
}

// publishedStd is docs/results.md §3: RoConE's standard deviations over 10 seeds, in MRR
// percentage points, in the column order of query.EvalTypes.
var publishedStd = map[string][]float64{
	"FB15k-237": {0.054, 0.108, 0.142, 0.075, 0.172, 0.105, 0.183, 0.096, 0.193,
		0.089, 0.092, 0.161, 0.083, 0.077},
	"NELL995": {0.097, 0.152, 0.192, 0.130, 0.038, 0.084, 0.146, 0.112, 0.137,
		0.012, 0.079, 0.154, 0.012, 0.097},
}

// datasetOrder lists the canonical dataset names.
var datasetOrder = []string{"FB15k-237", "NELL995", "FB15k"}

// datasetAliases maps normalized names (lower case, letters and digits only) to canonical
// names.
var datasetAliases = map[string]string{
	"fb15k237": "FB15k-237",
	"nell995":  "NELL995",
	"nell":     "NELL995",
	"fb15k":    "FB15k",
}

// modelAliases maps normalized model names that differ from the canonical ones.
var modelAliases = map[string]string{
	"q2b": "query2box",
}

// published holds the merged rows per canonical dataset, in the order of first appearance.
var published = map[string][]*Published{}

func init() {
	for _, tb := range publishedTables {
		for _, r := range tb.rows {
			if len(r.vals) != len(tb.cols) {
				panic(fmt.Sprintf("report: published %s %s: %d values for %d columns", tb.dataset, r.model, len(r.vals), len(tb.cols)))
			}
			var p *Published
			for _, q := range published[tb.dataset] {
				if q.Model == r.model {
					p = q
				}
			}
			if p == nil {
				p = &Published{Dataset: tb.dataset, Model: r.model, Source: tb.src, Ref: tb.ref, MRR: map[string]float64{}}
				published[tb.dataset] = append(published[tb.dataset], p)
			} else {
				if p.Source != tb.src {
					panic("report: published " + tb.dataset + " " + r.model + " mixes sources")
				}
				if !strings.Contains(p.Ref, tb.ref) {
					p.Ref += ", " + strings.TrimPrefix(tb.ref, refPaper)
				}
			}
			for i, c := range tb.cols {
				if _, dup := p.MRR[c]; dup {
					panic("report: published " + tb.dataset + " " + r.model + " " + c + " given twice")
				}
				p.MRR[c] = r.vals[i]
			}
		}
	}
	for ds, std := range publishedStd {
		var p *Published
		for _, q := range published[ds] {
			if q.Model == "RoConE" {
				p = q
			}
		}
		if p == nil || len(std) != len(query.EvalTypes) {
			panic("report: bad published std for " + ds)
		}
		p.Std = map[string]float64{}
		for i, t := range query.EvalTypes {
			p.Std[t] = std[i]
		}
		p.Ref += ", appendix (std over 10 seeds)"
	}
}

func normalize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Datasets returns the canonical names of the datasets with published results.
func Datasets() []string { return slices.Clone(datasetOrder) }

// CanonicalDataset returns the canonical name of a dataset: case, "-", "_" and spaces do not
// matter, and "nell" stands for NELL995 ("fb15k-237", "FB15k-237", "nell-995", "NELL995",
// "nell" are all accepted).
func CanonicalDataset(name string) (string, error) {
	if c, ok := datasetAliases[normalize(name)]; ok {
		return c, nil
	}
	return "", fmt.Errorf("report: no published results for dataset %q (known: %s)", name, strings.Join(datasetOrder, ", "))
}

// PublishedResults returns the published rows of a dataset, in the order of the tables of docs/results.md
// (baselines, ConE, RoConE, then the ablation variants). The rows are copies.
func PublishedResults(dataset string) ([]Published, error) {
	ds, err := CanonicalDataset(dataset)
	if err != nil {
		return nil, err
	}
	out := make([]Published, len(published[ds]))
	for i, p := range published[ds] {
		out[i] = clonePublished(p)
	}
	return out, nil
}

// LookupPublished returns one model's published row on a dataset. Model names match
// ignoring case and punctuation ("rocone", "RoConE (Base)", "rocone-trunc"); "q2b" stands for
// Query2Box.
func LookupPublished(dataset, model string) (Published, error) {
	ds, err := CanonicalDataset(dataset)
	if err != nil {
		return Published{}, err
	}
	want := normalize(model)
	if a, ok := modelAliases[want]; ok {
		want = a
	}
	var names []string
	for _, p := range published[ds] {
		if normalize(p.Model) == want {
			return clonePublished(p), nil
		}
		names = append(names, p.Model)
	}
	return Published{}, fmt.Errorf("report: no published %s row for model %q (known: %s)", ds, model, strings.Join(names, ", "))
}

func clonePublished(p *Published) Published {
	c := *p
	c.MRR = maps.Clone(p.MRR)
	c.Std = maps.Clone(p.Std)
	return c
}
