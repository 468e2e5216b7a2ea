package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/artifacttest"
	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/compute/cpu"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/sample"
	"github.com/rocone/rocone/pkg/shard"
	"github.com/rocone/rocone/pkg/train"
)

// rankKeys are ranks rows as compared here (ReadRanks does not read the top-K columns).
func rankKeys(rs []artifact.Rank) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprint(r.ID, r.Type, r.Answer, r.Rank)
	}
	return out
}

// TestShardUnionEmbedRank: for n = 1, 2, 3 and 7, the n shards of embed and of rank (with
// the shards' cones, and embedding in rank), concatenated in shard order, are the
// unsharded cones and ranks row for row, with the queries' ids; every shard records
// shard=i/n and the whole file's query count and digest. Run with the optimised CPU
// kernels, whose results could depend on how queries are batched, at the default batch
// and at --batch 5 (shards then cut every lcm(5, 16) = 80 queries).
func TestShardUnionEmbedRank(t *testing.T) {
	dir := t.TempDir()
	queries := fixture(t, dir)
	_, qs, err := artifact.ReadQueries(queries)
	if err != nil {
		t.Fatal(err)
	}
	kernels := cpu.New(cpu.Options{})
	for _, variant := range []model.Variant{model.RoConE, model.ConE} {
		ck := filepath.Join(dir, string(variant)+".arrow")
		writeCheckpoint(t, ck, variant, 8, 1)
		wholeCones := filepath.Join(dir, string(variant)+"-cones.arrow")
		if err := Embed(EmbedConfig{Checkpoint: ck, Queries: queries, Output: wholeCones, Kernels: kernels}); err != nil {
			t.Fatal(err)
		}
		cmeta, wantCones, err := artifact.ReadCones(wholeCones)
		if err != nil {
			t.Fatal(err)
		}
		for _, batch := range []int{0, 5} {
			wholeRanks := filepath.Join(dir, fmt.Sprintf("%s-ranks-b%d.arrow", variant, batch))
			if err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: wholeRanks, Kernels: kernels, Batch: batch}); err != nil {
				t.Fatal(err)
			}
			rmeta, wantRanks, err := artifact.ReadRanks(wholeRanks)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{1, 2, 3, 7} {
				if batch == 5 && n == 7 {
					continue // 3 blocks of 80: TestRankShardRefusesOtherCones checks the refusal
				}
				t.Run(fmt.Sprintf("%s/batch=%d/n=%d", variant, batch, n), func(t *testing.T) {
					var cones []artifact.Cone
					var direct, fromCones []artifact.Rank
					nonEmpty := 0
					for i := 0; i < n; i++ {
						sh := shard.Spec{Index: i, Count: n}
						c := filepath.Join(dir, fmt.Sprintf("cones-%d-of-%d.arrow", i, n))
						if err := Embed(EmbedConfig{Checkpoint: ck, Queries: queries, Output: c, Kernels: kernels, Shard: sh, ShardBlock: batch}); err != nil {
							t.Fatal(err)
						}
						m, part, err := artifact.ReadCones(c)
						if err != nil {
							t.Fatal(err)
						}
						if (m.Shard != sh && n > 1) || m.QueriesHash != cmeta.QueriesHash {
							t.Errorf("cones shard %v records shard %v, digest %.12s", sh, m.Shard, m.QueriesHash)
						}
						cones = append(cones, part...)
						for k, via := range []string{"", c} {
							r := filepath.Join(dir, fmt.Sprintf("ranks-%d-of-%d-%d.arrow", i, n, k))
							if err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Cones: via, Output: r, Kernels: kernels, Batch: batch, Shard: sh}); err != nil {
								t.Fatal(err)
							}
							m, part, err := artifact.ReadRanks(r)
							if err != nil {
								t.Fatal(err)
							}
							if (m.Shard != sh && n > 1) || m.NumQueries != len(qs) || m.QueriesHash != rmeta.QueriesHash {
								t.Errorf("ranks shard %v records shard %v, %d queries, digest %.12s", sh, m.Shard, m.NumQueries, m.QueriesHash)
							}
							if via == "" {
								direct = append(direct, part...)
								if len(part) > 0 {
									nonEmpty++
								}
							} else {
								fromCones = append(fromCones, part...)
							}
						}
					}
					if batch == 0 && !reflect.DeepEqual(cones, wantCones) {
						t.Errorf("the %d cones shards hold %d rows, unsharded %d, or they differ", n, len(cones), len(wantCones))
					}
					if !reflect.DeepEqual(rankKeys(direct), rankKeys(wantRanks)) {
						t.Errorf("the %d rank shards hold %d rows, unsharded %d, or they differ", n, len(direct), len(wantRanks))
					}
					if batch == 0 && !reflect.DeepEqual(rankKeys(fromCones), rankKeys(wantRanks)) {
						t.Errorf("the %d rank shards from cones shards hold %d rows, unsharded %d, or they differ", n, len(fromCones), len(wantRanks))
					}
					if batch == 0 && n > 1 && nonEmpty < 2 {
						t.Errorf("only %d of %d shards ranked anything: the test does not cut", nonEmpty, n)
					}
				})
			}
		}
	}
}

// TestRankShardRefusesOtherCones: rank --shard with the cones of another shard, or of
// shards cut at another batch size, is an error naming the cones file; a shard that would
// hold no query is an error saying how many shards the queries allow.
func TestRankShardRefusesOtherCones(t *testing.T) {
	dir := t.TempDir()
	queries := fixture(t, dir)
	ck := filepath.Join(dir, "m.arrow")
	writeCheckpoint(t, ck, model.RoConE, 8, 1)
	cones := filepath.Join(dir, "cones-1-of-3.arrow")
	if err := Embed(EmbedConfig{Checkpoint: ck, Queries: queries, Output: cones, Kernels: compute.Reference[float32]{}, Shard: shard.Spec{Index: 1, Count: 3}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		shard shard.Spec
		batch int
		err   string
		cones string
	}{
		{shard.Spec{Index: 2, Count: 3}, 0, "holds the cones of shard 1/3 of the queries, but this is shard 2/3", ""},
		{shard.Spec{}, 0, "holds the cones of shard 1/3 of the queries, but this is the whole queries file", ""},
		{shard.Spec{Index: 1, Count: 3}, 48, "cones-1-of-3.arrow: shard 1/3 of the cones lacks query", ""},
		{shard.Spec{Index: 0, Count: 7}, 5, "--shard 0/7: the 210 queries of " + queries + " are cut in whole blocks of 80 (a multiple of the batch), 3 of them: shard 0/7 holds none; use at most 3 shard(s)", "-"},
	} {
		via := cones
		if tc.cones == "-" {
			via = ""
		}
		err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Cones: via, Output: filepath.Join(dir, "r.arrow"), Kernels: compute.Reference[float32]{}, Shard: tc.shard, Batch: tc.batch})
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("shard %v batch %d: error %v, want %q", tc.shard, tc.batch, err, tc.err)
		}
	}
}

// TestMetricsShards: 2 seeds ranked in 3 shards each (6 files, in any order) are 2 seeds,
// with the metrics of the 2 unsharded ranks files exactly; a shard missing or given
// twice, shards of two runs mixed, and a run given both whole and in shards are refused
// naming the files.
func TestMetricsShards(t *testing.T) {
	dir := t.TempDir()
	queries := fixture(t, dir)
	var whole []string
	shards := map[uint64][]string{}
	for seed := uint64(1); seed <= 2; seed++ {
		ck := filepath.Join(dir, fmt.Sprintf("m%d.arrow", seed))
		writeCheckpoint(t, ck, model.RoConE, 6, seed)
		out := filepath.Join(dir, fmt.Sprintf("ranks%d.arrow", seed))
		if err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: out, Kernels: compute.Reference[float32]{}}); err != nil {
			t.Fatal(err)
		}
		whole = append(whole, out)
		for i := 0; i < 3; i++ {
			out := filepath.Join(dir, fmt.Sprintf("ranks%d-%d-of-3.arrow", seed, i))
			if err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: out, Kernels: compute.Reference[float32]{}, Shard: shard.Spec{Index: i, Count: 3}}); err != nil {
				t.Fatal(err)
			}
			shards[seed] = append(shards[seed], out)
		}
	}
	metrics := func(ranks []string) ([]artifact.MetricsRow, string, error) {
		out := filepath.Join(t.TempDir(), "metrics.arrow")
		var table bytes.Buffer
		if err := Metrics(MetricsConfig{Ranks: ranks, Output: out, Resamples: 50, Seed: 1}, &table); err != nil {
			return nil, "", err
		}
		_, rows, err := artifact.ReadMetrics(out)
		return rows, table.String(), err
	}
	want, _, err := metrics(whole)
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := shards[1], shards[2]
	got, table, err := metrics([]string{s2[1], s1[2], s1[0], s2[0], s1[1], s2[2]})
	if err != nil {
		t.Fatal(err)
	}
	// The seeds come in the order of their first file: seed 2 first here.
	got2, _, err := metrics([]string{s1[2], s1[0], s2[0], s1[1], s2[2], s2[1]})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got2, want) || len(want) == 0 || !strings.Contains(table, "2 seed(s)") {
		t.Errorf("6 shard files of 2 seeds: metrics differ from the unsharded seeds' (%d vs %d rows); table:\n%s", len(got2), len(want), table)
	}
	if len(got) != len(want) {
		t.Errorf("seeds in another order: %d rows, want %d", len(got), len(want))
	}
	// One seed sharded, the other whole: also 2 seeds, the same metrics.
	if mixed, _, err := metrics([]string{s1[0], s1[1], s1[2], whole[1]}); err != nil || !reflect.DeepEqual(mixed, want) {
		t.Errorf("seed 1 in shards and seed 2 whole: %v (rows equal: %v)", err, reflect.DeepEqual(mixed, want))
	}
	// Shards cut with other batch sizes (blocks of 16 by default, of lcm(40, 16) = 80 with
	// --batch 40) do not tile the file: a gap or an overlap, named.
	ck1 := filepath.Join(dir, "m1.arrow")
	halves := map[string]string{}
	for _, h := range []struct {
		name  string
		index int
		batch int
	}{{"0-default", 0, 0}, {"1-default", 1, 0}, {"0-batch40", 0, 40}, {"1-batch40", 1, 40}} {
		out := filepath.Join(dir, "half-"+h.name+".arrow")
		if err := Rank(RankConfig{Checkpoint: ck1, Queries: queries, Output: out, Kernels: compute.Reference[float32]{},
			Batch: h.batch, Shard: shard.Spec{Index: h.index, Count: 2}}); err != nil {
			t.Fatal(err)
		}
		halves[h.name] = out
	}
	if _, _, err := metrics([]string{halves["0-default"], halves["1-default"]}); err != nil {
		t.Errorf("two halves cut alike: %v", err)
	}
	// Shard 1/3 of seed 1 with its first query's rows made shard 0's first query's: the
	// spans tile the file, the rows do not.
	_, first := artifacttest.Read(t, s1[0])
	stolen := filepath.Join(t.TempDir(), "ranks1-1-of-3.arrow")
	artifacttest.Edit(t, s1[1], stolen, func(_ map[string]string, rows []artifacttest.Row) []artifacttest.Row {
		id := rows[0]["id"]
		for _, r := range rows {
			if r["id"] == id {
				r["id"], r["type"] = first[0]["id"], first[0]["type"]
			}
		}
		return rows
	})
	for _, tc := range []struct {
		name  string
		ranks []string
		err   string
	}{
		{"a query in two shards", []string{s1[0], stolen, s1[2]}, fmt.Sprintf("%s and %s both rank query %d: shards of one run rank disjoint queries", s1[0], stolen, first[0]["id"])},
		{"gap between shards of other batches", []string{halves["0-batch40"], halves["1-default"]}, "items 80-112 are in no shard (" + halves["0-batch40"] + " ends at 80, " + halves["1-default"] + " begins at 112)"},
		{"overlap of shards of other batches", []string{halves["0-default"], halves["1-batch40"]}, "items 80-112 are in two shards"},
		{"missing", []string{s1[0], s1[2], s2[0], s2[1], s2[2]}, "shard 1/3 missing (given 2 of 3: " + s1[0] + " " + s1[2] + ")"},
		{"repeated", []string{s1[0], s1[1], s1[1], s1[2]}, s1[1] + " and " + s1[1] + " are both shard 1/3"},
		{"mixed runs", []string{s1[0], s1[1], s2[2]}, "shard 2/3 missing"},
		{"whole and shards of one run", []string{whole[0], s1[0], s1[1], s1[2]}, "rank the same checkpoint"},
		{"only shards", []string{s1[1]}, "shard 0/3, 2/3 missing"},
	} {
		_, _, err := metrics(tc.ranks)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
	}
}

// TestShardQueriesRefused: a queries file that is one shard of a sampling run is not a
// queries file to train on, validate with, embed or rank: each stage refuses it naming it
// and saying to merge the shards.
func TestShardQueriesRefused(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "m.arrow")
	writeCheckpoint(t, ck, model.RoConE, 6, 1)
	part := map[string]string{}
	for _, split := range []string{"train", "test"} {
		part[split] = filepath.Join(dir, split+"-1-of-2.arrow")
		opts := sample.Options{Seed: 1, Shard: shard.Spec{Index: 1, Count: 2}}
		if split == "test" {
			opts.Types, opts.Counts = []string{"1p", "2p"}, map[string]int{"1p": 10, "2p": 6}
		}
		if err := sample.GenerateToFile(context.Background(), sample.Source{Dir: "../../testdata/tiny"}, split, opts, part[split], nil); err != nil {
			t.Fatal(err)
		}
	}
	cfg := train.Default()
	cfg.Model, cfg.Dim, cfg.Batch, cfg.Negatives, cfg.Steps = "rocone", 6, 8, 2, 1
	wholeTrain := filepath.Join(dir, "train.arrow")
	if err := sample.GenerateToFile(context.Background(), sample.Source{Dir: "../../testdata/tiny"}, "train", sample.Options{Seed: 1}, wholeTrain, nil); err != nil {
		t.Fatal(err)
	}
	want := func(file string) string {
		return file + " is shard 1/2 of a sampling run, not a whole queries file: join the 2 shards with sample merge first"
	}
	for _, tc := range []struct {
		name string
		run  func() error
		file string
	}{
		{"embed", func() error {
			return Embed(EmbedConfig{Checkpoint: ck, Queries: part["test"], Output: filepath.Join(dir, "c.arrow"), Kernels: compute.Reference[float32]{}})
		}, part["test"]},
		{"rank", func() error {
			return Rank(RankConfig{Checkpoint: ck, Queries: part["test"], Output: filepath.Join(dir, "r.arrow"), Kernels: compute.Reference[float32]{}})
		}, part["test"]},
		{"train", func() error {
			_, err := train.Run(context.Background(), cfg, train.Options{Train: part["train"], Checkpoint: filepath.Join(dir, "t.arrow")})
			return err
		}, part["train"]},
		{"train --valid", func() error {
			_, err := train.Run(context.Background(), cfg, train.Options{Train: wholeTrain, Valid: part["test"], Checkpoint: filepath.Join(dir, "t.arrow")})
			return err
		}, part["test"]},
	} {
		if err := tc.run(); err == nil || !strings.Contains(err.Error(), want(tc.file)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, want(tc.file))
		}
	}
}
