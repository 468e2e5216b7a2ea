package sample

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
// the command line), are byte for byte the unsharded file; each shard records shard=i/n
// and holds its range of every type's queries.
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
		perType := map[string]int{}
		for _, q := range rows {
			perType[q.Type]++
		}
		for _, n := range []int{1, 2, 3, 7} {
			t.Run(fmt.Sprintf("%s/n=%d", split, n), func(t *testing.T) {
				paths := generateShards(t, dir, split, opts, n)
				for i, p := range paths {
					meta, qs, err := artifact.ReadQueries(p)
					if err != nil {
						t.Fatal(err)
					}
					if want := (shard.Spec{Index: i, Count: n}); meta.Shard != want && !(n == 1 && meta.Shard.Whole()) {
						t.Errorf("%s records shard %v, want %v", p, meta.Shard, want)
					}
					got := map[string]int{}
					for _, q := range qs {
						got[q.Type]++
					}
					for typ, total := range perType {
						lo, hi := (shard.Spec{Index: i, Count: n}).Range(total)
						if got[typ] != hi-lo {
							t.Errorf("%s holds %d %s queries, want %d of %d", p, got[typ], typ, hi-lo, total)
						}
					}
				}
				// Reversed on the command line: merge orders them by their metadata.
				rev := make([]string, len(paths))
				for i, p := range paths {
					rev[len(paths)-1-i] = p
				}
				merged := filepath.Join(dir, fmt.Sprintf("%s-merged-%d.arrow", split, n))
				if err := MergeShards(rev, merged); err != nil {
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
// another split, another n), an unsharded file among shards, a shard whose share of a type
// is not its cut's, and an output that is one of the shards are refused naming the files;
// nothing is written.
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
	meta, qs, err := artifact.ReadQueries(three[1])
	if err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.arrow")
	if err := artifact.WriteQueries(short, meta, qs[:len(qs)-1]); err != nil {
		t.Fatal(err)
	}
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
		{"other n", []string{three[0], two[1], three[2]}, "", "is shard 0/3 but"},
		{"unsharded among shards", []string{three[0], whole, three[2]}, "", "whole.arrow has no shard metadata"},
		{"short shard", []string{three[0], short, three[2]}, "", "short.arrow (shard 1/3) holds"},
		{"output is a shard", three, three[0], "-o"},
		{"none", nil, "", "no shard files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.out
			if out == "" {
				out = filepath.Join(t.TempDir(), "merged.arrow")
			}
			before, _ := os.ReadFile(three[0])
			err := MergeShards(tc.shards, out)
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
