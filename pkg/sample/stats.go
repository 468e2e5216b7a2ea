package sample

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/query"
)

// PrintStats prints, for each queries artifact, a table of query counts and mean easy and
// hard answers per type. Every file is read before anything is printed, so a run that
// fails prints nothing; a file given twice is refused.
func PrintStats(w io.Writer, paths []string) error {
	var inputs []outfile.Path
	for _, p := range paths {
		inputs = append(inputs, outfile.Path{Flag: "queries file", Path: p})
	}
	if err := outfile.Check(inputs, []outfile.Path{{Flag: "the stats on", Path: "-"}}); err != nil {
		return err
	}
	if err := outfile.Distinct(paths); err != nil {
		return err
	}
	final := w
	var out bytes.Buffer
	w = &out
	for _, path := range paths {
		r, err := artifact.OpenQueries(path)
		if err != nil {
			return err
		}
		type acc struct{ n, easy, hard int }
		per := map[string]*acc{}
		for r.Next() {
			q := r.Query()
			a := per[q.Type]
			if a == nil {
				a = &acc{}
				per[q.Type] = a
			}
			a.n++
			a.easy += len(q.Easy)
			a.hard += len(q.Hard)
		}
		if err := r.Err(); err != nil {
			r.Close()
			return err
		}
		r.Close()
		meta := r.Meta()
		types := make([]string, 0, len(per))
		for t := range per {
			types = append(types, t)
		}
		slices.SortFunc(types, func(a, b string) int {
			if d := query.TypeOrder(a) - query.TypeOrder(b); d != 0 {
				return d
			}
			if a < b {
				return -1
			}
			return 1
		})
		fmt.Fprintf(w, "%s: %s %s (%d entities, %d relations)\n", path, meta.Dataset, meta.Split, meta.NumEntities, meta.NumRelations)
		if !meta.Shard.Whole() {
			fmt.Fprintf(w, "shard %s of a sampling run: a part of the split, not a queries file to train or rank on (join the %d shards with sample merge)\n",
				meta.Shard, meta.Shard.Count)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "| %-6s | %8s | %9s | %9s |\n", "type", "queries", "mean easy", "mean hard")
		fmt.Fprintf(w, "|%s|%s:|%s:|%s:|\n", strings.Repeat("-", 8), strings.Repeat("-", 9), strings.Repeat("-", 10), strings.Repeat("-", 10))
		total := 0
		for _, t := range types {
			a := per[t]
			total += a.n
			fmt.Fprintf(w, "| %-6s | %8d | %9.1f | %9.1f |\n", t, a.n, float64(a.easy)/float64(a.n), float64(a.hard)/float64(a.n))
		}
		fmt.Fprintf(w, "| %-6s | %8d | %9s | %9s |\n\n", "all", total, "", "")
	}
	if _, err := final.Write(out.Bytes()); err != nil && final != io.Writer(outfile.Stdout) {
		return err // outfile.Stdout keeps its error for outfile.Main, which names it
	}
	return nil
}
