package report

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/rocone/rocone/pkg/shard"
)

// GroupShards sorts ranks files into runs before the seeds rule applies: the n files of
// one `rank --shard i/n` run (the same checkpoint, by its digest, and the same queries)
// form one run, and every unsharded file is a run of its own. Each group lists indices
// into runs, the shards of a group in shard order; groups come in the order of their
// first file. A group with a shard missing, a shard given twice, or shards cut in
// different numbers of parts is an error naming the files: a partial run would otherwise
// be scored on a subset of the queries, and a repeated shard would count its queries
// twice. Unsharded ranks of the same checkpoint stay separate runs here and are then
// refused by CheckSeeds (one run counted as two seeds).
func GroupShards(runs []RunIdentity, specs []shard.Spec) ([][]int, error) {
	type key struct{ checkpoint, queries, dataset, split string }
	var groups [][]int
	at := map[key]int{}
	for i, r := range runs {
		if specs[i].Whole() {
			groups = append(groups, []int{i})
			continue
		}
		k := key{r.CheckpointHash, r.Queries, r.Dataset, r.Split}
		if r.CheckpointHash == "" {
			k.checkpoint = "file " + r.Path // no digest to tie shards by: a run of its own
		}
		g, ok := at[k]
		if !ok {
			g = len(groups)
			at[k] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	for _, g := range groups {
		if specs[g[0]].Whole() {
			continue
		}
		names := make([]string, len(g))
		set := make([]shard.Spec, len(g))
		for k, i := range g {
			names[k], set[k] = runs[i].Path, specs[i]
		}
		what := fmt.Sprintf("ranks shards of checkpoint sha256 %.12s", runs[g[0]].CheckpointHash)
		if err := shard.CheckSet(what, names, set); err != nil {
			return nil, err
		}
		slices.SortFunc(g, func(a, b int) int { return cmp.Compare(specs[a].Index, specs[b].Index) })
	}
	return groups, nil
}
