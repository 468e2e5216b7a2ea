package sample

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/shard"
)

// MergeShards joins the n shard files of one `sample generate --shard i/n` run (in any
// order on the command line) into the queries artifact out, identical to the file the
// unsharded run writes: type by type in the run's type order, and within a type shard 0's
// queries, then shard 1's, ..., ids renumbered 0, 1, ... in that order, no shard
// metadata. It refuses a file that is not a shard, shards of different runs (their
// metadata differ), a shard missing or given twice, and a shard whose share of a type is
// not the range the run's cut gives it; on any error nothing is left at out. The shards
// are streamed: memory does not grow with their size.
func MergeShards(paths []string, out string) error {
	if len(paths) == 0 {
		return fmt.Errorf("no shard files given")
	}
	var inputs []outfile.Path
	for _, p := range paths {
		inputs = append(inputs, outfile.Path{Flag: "SHARD", Path: p})
	}
	if err := outfile.Check(inputs, []outfile.Path{{Flag: "-o", Path: out}}); err != nil {
		return err
	}
	readers := make([]*peekReader, len(paths))
	defer func() {
		for _, r := range readers {
			if r != nil {
				r.Close()
			}
		}
	}()
	specs := make([]shard.Spec, len(paths))
	for k, p := range paths {
		r, err := artifact.OpenQueries(p)
		if err != nil {
			return err
		}
		readers[k] = &peekReader{QueriesReader: r, name: p}
		m := r.Meta()
		if m.Shard.Whole() && len(paths) > 1 {
			return fmt.Errorf("%s has no shard metadata: not a file of sample generate --shard i/n with n > 1", p)
		}
		specs[k] = m.Shard
		if err := sameRun(paths[0], readers[0].Meta(), p, m); err != nil {
			return err
		}
	}
	meta := readers[0].Meta()
	if err := shard.CheckSet("sample merge", paths, specs); err != nil {
		return err
	}
	order := make([]*peekReader, len(readers)) // by shard index
	for k, r := range readers {
		order[specs[k].Index] = r
	}
	if meta.Shard.Whole() {
		// One shard of one (--shard 0/1, or no --shard): the file is the run's; copy it.
		return copyQueries(readers[0], meta, out)
	}
	types, err := runTypes(paths[0], meta)
	if err != nil {
		return err
	}
	meta.Shard, meta.Sampling = shard.Spec{}, ""
	w, err := artifact.CreateQueries(out, meta)
	if err != nil {
		return err
	}
	defer w.Abort() // no-op after a successful Close
	var id int64
	for _, structure := range types {
		counts := make([]int, len(order))
		for i, r := range order {
			for r.peek() && r.q.Structure == structure {
				q := r.take()
				q.ID = id
				id++
				counts[i]++
				if err := w.Write(&q); err != nil {
					return err
				}
			}
			if err := r.Err(); err != nil {
				return err
			}
		}
		total := 0
		for _, c := range counts {
			total += c
		}
		for i, c := range counts {
			if lo, hi := order[i].Meta().Shard.Range(total); c != hi-lo {
				return fmt.Errorf("%s (shard %s) holds %d %s queries, but the cut of the run's %d gives it %d: not a shard of this run, or a truncated one",
					order[i].name, order[i].Meta().Shard, c, typeName(structure), total, hi-lo)
			}
		}
	}
	for _, r := range order {
		if r.peek() {
			return fmt.Errorf("%s: query %d has structure %s, not in the run's types (%s) or out of their order",
				r.name, r.q.ID, r.q.Structure, strings.Join(typeNames(types), " "))
		}
		if err := r.Err(); err != nil {
			return err
		}
	}
	return w.Close()
}

// copyQueries writes r's queries to out, ids renumbered in order.
func copyQueries(r *peekReader, meta artifact.QueriesMeta, out string) error {
	w, err := artifact.CreateQueries(out, meta)
	if err != nil {
		return err
	}
	defer w.Abort()
	var id int64
	for r.peek() {
		q := r.take()
		q.ID, id = id, id+1
		if err := w.Write(&q); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil {
		return err
	}
	return w.Close()
}

// sameRun reports how the shard b differs from the shard a in what makes a run: the KG,
// the split and the sampling options. Only the shard itself may differ.
func sameRun(a string, ma artifact.QueriesMeta, b string, mb artifact.QueriesMeta) error {
	diff := func(what, x, y string) error {
		return fmt.Errorf("%s and %s are shards of different runs (%s %s vs %s): merge the shards of one sample generate run",
			a, b, what, x, y)
	}
	switch {
	case ma.Dataset != mb.Dataset:
		return diff("dataset", ma.Dataset, mb.Dataset)
	case ma.Split != mb.Split:
		return diff("split", ma.Split, mb.Split)
	case ma.NumEntities != mb.NumEntities || ma.NumRelations != mb.NumRelations:
		return diff("entities and relations", fmt.Sprint(ma.NumEntities, mb.NumRelations), fmt.Sprint(mb.NumEntities, mb.NumRelations))
	case ma.EntitiesDigest != mb.EntitiesDigest:
		return diff("entity table digest", fmt.Sprintf("%.12s", ma.EntitiesDigest), fmt.Sprintf("%.12s", mb.EntitiesDigest))
	case ma.Sampling != mb.Sampling:
		return diff("sampling options", ma.Sampling, mb.Sampling)
	}
	return nil
}

// runTypes is the structures (notations) of a run's types in the order it sampled them,
// from the shard's sampling options (the split's defaults when it gave no --types).
func runTypes(name string, m artifact.QueriesMeta) ([]string, error) {
	var run struct{ Types []string }
	if err := jsonUnmarshal(m.Sampling, &run); err != nil || m.Sampling == "" {
		return nil, fmt.Errorf("%s: shard metadata sampling=%q is not a sampling run's options", name, m.Sampling)
	}
	types := run.Types
	if len(types) == 0 {
		types = DefaultTypes(m.Split)
	}
	structs, err := resolveTypes(types)
	if err != nil {
		return nil, fmt.Errorf("%s: shard metadata sampling: types: %w", name, err)
	}
	out := make([]string, len(structs))
	for i, s := range structs {
		out[i] = s.String()
	}
	return out, nil
}

func typeName(structure string) string {
	if s, err := resolveType(structure); err == nil && s.Name() != "" {
		return s.Name()
	}
	return structure
}

func typeNames(structures []string) []string {
	names := make([]string, len(structures))
	for i, s := range structures {
		names[i] = typeName(s)
	}
	return names
}

// peekReader is a queries reader with one query of look-ahead.
type peekReader struct {
	*artifact.QueriesReader
	name   string
	q      artifact.Query
	peeked bool
}

// peek reports whether there is a next query, which is then in r.q.
func (r *peekReader) peek() bool {
	if !r.peeked && r.Next() {
		r.q, r.peeked = r.Query(), true
	}
	return r.peeked
}

func (r *peekReader) take() artifact.Query {
	r.peeked = false
	return r.q
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
