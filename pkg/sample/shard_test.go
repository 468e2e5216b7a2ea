package sample

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/artifacttest"
	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/shard"
)

// shardOptions are the runs the shard tests cut: train with its default types and
// counts, and test with every named type (negations, unions) and small counts.
func shardOptions() map[string]Options {
	return map[string]Options{
		"train": {Seed: 7, Workers: 2},
		"test":  {Seed: 3, Workers: 2, Types: allTypes, Counts: smallCounts()},
	}
}

// generateShards writes the n shards of a run to dir and returns their paths.
func generateShards(t *testing.T, dir, split string, opts Options, n int) []string {
	t.Helper()
	var paths []string
	for i := 0; i < n; i++ {
		opts.Shard = shard.Spec{Index: i, Count: n}
		p := filepath.Join(dir, fmt.Sprintf("%s-%d-of-%d.arrow", split, i, n))
		if err := GenerateToFile(context.Background(), Source{Dir: "../../testdata/tiny"}, split, opts, p, nil); err != nil {
			t.Fatalf("shard %d/%d: %v", i, n, err)
		}
		paths = append(paths, p)
	}
	return paths
}

// TestShardUnion: for n = 1, 2, 3 and 7, the n shards of a run, merged (in any order on
// the command line), are byte for byte the unsharded file; each shard records shard=i/n,
// holds its range of the 1p queries and, of every other type, candidates of its own
// attempt blocks only (checkShard).
func TestShardUnion(t *testing.T) {
	dir := t.TempDir()
	for split, opts := range shardOptions() {
		whole := filepath.Join(dir, split+".arrow")
		if err := GenerateToFile(context.Background(), Source{Dir: "../../testdata/tiny"}, split, opts, whole, nil); err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(whole)
		_, rows, err := artifact.ReadQueries(whole)
		if err != nil {
			t.Fatal(err)
		}
		links := 0
		for _, q := range rows {
			if q.Type == "1p" {
				links++
			}
		}
		for _, n := range []int{1, 2, 3, 7} {
			t.Run(fmt.Sprintf("%s/n=%d", split, n), func(t *testing.T) {
				paths := generateShards(t, dir, split, opts, n)
				for i, p := range paths {
					checkShard(t, p, shard.Spec{Index: i, Count: n}, links)
				}
				// Reversed on the command line: merge orders them by their metadata.
				rev := make([]string, len(paths))
				for i, p := range paths {
					rev[len(paths)-1-i] = p
				}
				merged := filepath.Join(dir, fmt.Sprintf("%s-merged-%d.arrow", split, n))
				if n == 1 { // --shard 0/1 is the whole split: nothing to merge, and merge says so
					if err := MergeShards(rev, merged, nil); err == nil || !strings.Contains(err.Error(), "has no shard metadata") {
						t.Fatalf("merging the one file of --shard 0/1: %v", err)
					}
					return
				}
				if err := MergeShards(rev, merged, nil); err != nil {
					t.Fatal(err)
				}
				got, _ := os.ReadFile(merged)
				if !bytes.Equal(got, want) {
					t.Errorf("merged %d shards differ from the unsharded file (%d vs %d bytes)", n, len(got), len(want))
				}
			})
		}
	}
}

// TestMergeRefuses: a shard missing or repeated, shards of different runs (another seed,
// another split, another n), an unsharded file among shards, a truncated shard (fewer rows
// than its shard_coverage records), a shard whose rows are another shard's, and an output
// that is one of the shards are refused naming the files; nothing is written.
func TestMergeRefuses(t *testing.T) {
	dir := t.TempDir()
	opts := shardOptions()["test"]
	three := generateShards(t, dir, "test", opts, 3)
	two := generateShards(t, dir, "test", opts, 2)
	otherSeed := opts
	otherSeed.Seed = 4
	otherDir := t.TempDir()
	other := generateShards(t, otherDir, "test", otherSeed, 3)
	trainShard := generateShards(t, otherDir, "train", shardOptions()["train"], 3)
	whole := filepath.Join(dir, "whole.arrow")
	if err := GenerateToFile(context.Background(), Source{Dir: "../../testdata/tiny"}, "test", opts, whole, nil); err != nil {
		t.Fatal(err)
	}
	// A shard 1/3 of the same run that lost its last query.
	short := filepath.Join(dir, "short.arrow")
	rewriteShard(t, three[1], three[1], short, func(rows int) int { return rows - 1 })
	// Shard 1/3's metadata over shard 2/3's rows: a file whose rows are not its shard's.
	foreign := filepath.Join(dir, "foreign.arrow")
	rewriteShard(t, three[1], three[2], foreign, func(rows int) int { return rows })
	// Shard 1/3 as sampled on another KG of the same name and counts.
	otherKG := filepath.Join(dir, "other-kg.arrow")
	artifacttest.Edit(t, three[1], otherKG, func(meta map[string]string, rows []artifacttest.Row) []artifacttest.Row {
		meta[artifact.MetaKG] = strings.Repeat("0", 64)
		return rows
	})
	for _, tc := range []struct {
		name   string
		shards []string
		out    string
		err    string
	}{
		{"missing", three[:2], "", "shard 2/3 missing (given 2 of 3"},
		{"repeated", []string{three[0], three[1], three[1], three[2]}, "", "are both shard 1/3: a shard given twice"},
		{"other seed", []string{three[0], other[1], three[2]}, "", "shards of different runs (sampling options"},
		{"other split", []string{three[0], trainShard[1], three[2]}, "", "shards of different runs (split test vs train)"},
		{"other KG", []string{three[0], otherKG, three[2]}, "", "other-kg.arrow are shards of different runs (KG digest "},
		{"other n", []string{three[0], two[1], three[2]}, "", "is shard 0/3 but"},
		{"unsharded among shards", []string{three[0], whole, three[2]}, "", "whole.arrow has no shard metadata"},
		{"one unsharded file", []string{whole}, "", "whole.arrow has no shard metadata"},
		{"short shard", []string{three[0], short, three[2]}, "", "short.arrow (shard 1/3) holds"},
		{"rows of another shard", []string{three[0], foreign, three[2]}, "", "foreign.arrow (shard 1/3): 1p query 0 is the run's query"},
		{"output is a shard", three, three[0], "-o"},
		{"none", nil, "", "no shard files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.out
			if out == "" {
				out = filepath.Join(t.TempDir(), "merged.arrow")
			}
			before, _ := os.ReadFile(three[0])
			err := MergeShards(tc.shards, out, nil)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one saying %q", err, tc.err)
			}
			if tc.out == "" {
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Errorf("a refused merge left %s", out)
				}
			}
			if after, _ := os.ReadFile(three[0]); !bytes.Equal(before, after) {
				t.Errorf("a refused merge changed the shard %s", three[0])
			}
		})
	}
}

// rewriteShard writes the shard file to with the metadata of the shard file meta and the
// first keep(rows) of the rows, attempts included, of the shard file from.
func rewriteShard(t *testing.T, meta, from, to string, keep func(rows int) int) {
	t.Helper()
	m, err := artifact.OpenQueries(meta)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	r, err := artifact.OpenQueries(from)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	type row struct {
		q       artifact.Query
		attempt int64
	}
	var rows []row
	for r.Next() {
		rows = append(rows, row{r.Query(), r.Attempt()})
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	w, err := artifact.CreateQueries(to, m.Meta())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, x := range rows[:keep(len(rows))] {
		if err := w.WriteShard(&x.q, x.attempt); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkShard checks the rows of shard file p against the design: the file records shard
// sh (or none for 0/1, which is the unsharded file); its 1p queries are its range of the
// run's links queries (attempts their indexes); of every other type it holds distinct
// queries, each found by an attempt of the shard's blocks (block mod n == i, attempts
// increasing), as many as its shard_coverage records, within the blocks it records.
func checkShard(t *testing.T, p string, sh shard.Spec, links int) {
	t.Helper()
	r, err := artifact.OpenQueries(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	meta := r.Meta()
	if sh.Whole() {
		if !meta.Shard.Whole() || meta.Coverage != "" {
			t.Errorf("%s: shard %v, coverage %q: want the unsharded file's metadata", p, meta.Shard, meta.Coverage)
		}
		return
	}
	if meta.Shard != sh {
		t.Errorf("%s records shard %v, want %v", p, meta.Shard, sh)
	}
	types, err := runTypes(p, meta)
	if err != nil {
		t.Fatal(err)
	}
	cov, err := parseCoverage(p, meta.Coverage, len(types))
	if err != nil {
		t.Fatal(err)
	}
	byType := map[string]typeCoverage{}
	for _, c := range cov.Types {
		byType[c.Type] = c
	}
	rows := map[string]int{}
	last := map[string]int64{}
	seen := map[string]bool{}
	lo, hi := sh.Range(links)
	for r.Next() {
		q, a := r.Query(), r.Attempt()
		rows[q.Type]++
		if q.Type == "1p" {
			if want := int64(lo + rows[q.Type] - 1); a != want {
				t.Errorf("%s: 1p query %d is attempt %d, want %d (its range [%d, %d))", p, q.ID, a, want, lo, hi)
			}
			continue
		}
		b := a / attemptsPerBlock
		if prev, ok := last[q.Type]; ok && a <= prev {
			t.Errorf("%s: %s query %d: attempt %d after %d", p, q.Type, q.ID, a, prev)
		}
		last[q.Type] = a
		if int(b)%sh.Count != sh.Index || int(b)/sh.Count >= byType[q.Type].Blocks {
			t.Errorf("%s: %s query %d: attempt %d is in block %d, not one of the shard's %d blocks", p, q.Type, q.ID, a, b, byType[q.Type].Blocks)
		}
		key := fmt.Sprint(q.Structure, q.Anchors, q.Relations)
		if seen[key] {
			t.Errorf("%s: %s query %d repeats a query of the shard", p, q.Type, q.ID)
		}
		seen[key] = true
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if rows["1p"] != hi-lo {
		t.Errorf("%s holds %d 1p queries, want %d of %d", p, rows["1p"], hi-lo, links)
	}
	for typ, c := range byType {
		if rows[typ] != c.Rows {
			t.Errorf("%s holds %d %s queries, its shard_coverage records %d", p, rows[typ], typ, c.Rows)
		}
	}
}

// TestMergeShortShard: shards that sampled too few candidates for the run (here one each,
// by a shardTarget that takes the margin as the number, so one block) make merge fail, naming the shard
// whose block the run needs and asking for a larger --shard-margin, and leave nothing at
// the output; the shards sampled again with a larger one merge into the unsharded file.
func TestMergeShortShard(t *testing.T) {
	defer func(f func(int, int, float64) int) { shardTarget = f }(shardTarget)
	shardTarget = func(count, n int, margin float64) int { return int(margin) }
	dir := t.TempDir()
	opts := shardOptions()["train"]
	whole := filepath.Join(dir, "whole.arrow")
	if err := GenerateToFile(context.Background(), Source{Dir: "../../testdata/tiny"}, "train", opts, whole, nil); err != nil {
		t.Fatal(err)
	}
	opts.ShardMargin = 1
	paths := generateShards(t, dir, "train", opts, 2)
	out := filepath.Join(dir, "merged.arrow")
	err := MergeShards(paths, out, nil)
	if err == nil {
		t.Fatal("merge of shards with one candidate per type: no error")
	}
	for _, want := range []string{"which its shard did not sample", paths[0] + " (shard 0/2: last block 0, ", "rerun them with --shard-margin", "(they used 1)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), paths[1]) {
		t.Errorf("error %q names %s, which sampled the block after the one the run lacks", err, paths[1])
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused merge left %s", out)
	}
	opts.ShardMargin = 1000
	paths = generateShards(t, dir, "train", opts, 2)
	if err := MergeShards(paths, out, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	if want, _ := os.ReadFile(whole); !bytes.Equal(got, want) {
		t.Errorf("merged shards differ from the unsharded file (%d vs %d bytes)", len(got), len(want))
	}
}

// TestMarginFor: the margin merge suggests for as many candidates as a margin's
// shardTarget is that margin (rounded up to 0.05), and more candidates need more.
func TestMarginFor(t *testing.T) {
	for _, tc := range []struct {
		count, n int
		margin   float64
	}{{12000, 3, 0.2}, {12000, 7, 0.35}, {40, 2, 0.5}, {5000, 3, 1}} {
		got := marginFor(float64(shardTarget(tc.count, tc.n, tc.margin)), tc.count, tc.n)
		if !(math.Abs(got-tc.margin) <= 0.05+1e-9) || got < tc.margin-1e-9 {
			t.Errorf("count %d n %d: marginFor(shardTarget(margin %g)) = %g", tc.count, tc.n, tc.margin, got)
		}
		if more := marginFor(float64(shardTarget(tc.count, tc.n, tc.margin+0.3)), tc.count, tc.n); more <= got {
			t.Errorf("count %d n %d: marginFor for margin %g is %g, not above %g", tc.count, tc.n, tc.margin+0.3, more, got)
		}
	}
}

// suggestedMargin reads the --shard-margin a failed merge suggests, and the shards it
// names, of paths.
func suggestedMargin(t *testing.T, err error, paths []string) (float64, []int) {
	t.Helper()
	m := regexp.MustCompile(`--shard-margin ([0-9.]+) or more`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("merge error suggests no --shard-margin: %v", err)
	}
	s, perr := strconv.ParseFloat(m[1], 64)
	if perr != nil {
		t.Fatal(perr)
	}
	var short []int
	for i, p := range paths {
		if strings.Contains(err.Error(), p+" (shard ") {
			short = append(short, i)
		}
	}
	return s, short
}

// saturationRun is tiny's train 2p, whose graph holds about 2,518 distinct queries: count
// near that makes the run's rate of acceptance fall steeply as it goes on.
func saturationRun(count int) Options {
	return Options{Seed: 7, Workers: 2, Types: []string{"2p"}, Counts: map[string]int{"2p": count}}
}

// generateShardAt writes shard i of n of the run with the given margin to dir (named by
// tag) and returns its path.
func generateShardAt(t *testing.T, dir string, opts Options, i, n int, margin float64, tag string) string {
	t.Helper()
	opts.Shard, opts.ShardMargin = shard.Spec{Index: i, Count: n}, margin
	p := filepath.Join(dir, fmt.Sprintf("train-%d-of-%d-%s.arrow", i, n, tag))
	if err := GenerateToFile(context.Background(), Source{Dir: "../../testdata/tiny"}, "train", opts, p, nil); err != nil {
		t.Fatalf("shard %d/%d: %v", i, n, err)
	}
	return p
}

// TestMergeSuggestionSuffices: shards sampled with a small margin fall short, and the
// shards the merge names, sampled again with the margin it suggests, merge into the
// unsharded file at the first try: near saturation (tiny's train 2p: 2,450 and 2,000 of
// about 2,518), where the rate of acceptance falls as the run goes on and the average
// rate so far undershoots (before, 1.1 was suggested for 2,450 in 3 shards, which need
// 1.7, and 1.8 for 2,000 in 7, which need 2.95), and below it (1,000 in 7: 1.7 was
// suggested, and a second rerun needed).
func TestMergeSuggestionSuffices(t *testing.T) {
	for _, tc := range []struct{ count, n int }{{2450, 3}, {2000, 7}, {1000, 7}} {
		t.Run(fmt.Sprintf("count=%d/n=%d", tc.count, tc.n), func(t *testing.T) {
			dir := t.TempDir()
			opts := saturationRun(tc.count)
			whole := filepath.Join(dir, "whole.arrow")
			if err := GenerateToFile(context.Background(), Source{Dir: "../../testdata/tiny"}, "train", opts, whole, nil); err != nil {
				t.Fatal(err)
			}
			paths := make([]string, tc.n)
			for i := range paths {
				paths[i] = generateShardAt(t, dir, opts, i, tc.n, 0.1, "small")
			}
			out := filepath.Join(dir, "merged.arrow")
			err := MergeShards(paths, out, nil)
			if err == nil {
				t.Fatal("shards with margin 0.1 merged: the case no longer tests a short shard")
			}
			margin, short := suggestedMargin(t, err, paths)
			if len(short) == 0 {
				t.Fatalf("merge error names no shard: %v", err)
			}
			// Enough for the run, never more than a shard needs to hold count candidates.
			if most := marginFor(float64(tc.count), tc.count, tc.n) + 0.05; margin > most+1e-9 {
				t.Errorf("suggested margin %g, above %g, enough for any run", margin, most)
			}
			for _, i := range short {
				paths[i] = generateShardAt(t, dir, opts, i, tc.n, margin, "suggested")
			}
			if err := MergeShards(paths, out, nil); err != nil {
				t.Fatalf("shards %v rerun with the suggested --shard-margin %g: %v", short, margin, err)
			}
			got, _ := os.ReadFile(out)
			if want, _ := os.ReadFile(whole); !bytes.Equal(got, want) {
				t.Errorf("merged shards differ from the unsharded file (%d vs %d bytes)", len(got), len(want))
			}
		})
	}
}

// TestMergeSuggestionGrows: a second failure suggests more than the first. Of the shards
// the first failure names, only the first is rerun with its suggestion; the second failure
// names the others, which kept the small margin, and must not ask them for less than the
// margin already suggested (before, it suggested 0.9 after 0.95 here, from their own margin
// of 0.1).
func TestMergeSuggestionGrows(t *testing.T) {
	const count, n = 2000, 3
	dir := t.TempDir()
	opts := saturationRun(count)
	paths := make([]string, n)
	for i := range paths {
		paths[i] = generateShardAt(t, dir, opts, i, n, 0.1, "small")
	}
	out := filepath.Join(dir, "merged.arrow")
	err := MergeShards(paths, out, nil)
	if err == nil {
		t.Fatal("shards with margin 0.1 merged")
	}
	first, short := suggestedMargin(t, err, paths)
	if len(short) < 2 {
		t.Fatalf("the first failure names shards %v, want two or more: %v", short, err)
	}
	paths[short[0]] = generateShardAt(t, dir, opts, short[0], n, first, "first")
	err = MergeShards(paths, out, nil)
	if err == nil {
		t.Fatalf("merged with shard %d alone rerun: the case no longer tests a second failure", short[0])
	}
	second, _ := suggestedMargin(t, err, paths)
	t.Logf("suggested --shard-margin %g, then %g", first, second)
	if second <= first {
		t.Errorf("the second failure suggests --shard-margin %g, the first %g: want more", second, first)
	}
}
