package main

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/pipeline"
	"github.com/rocone/rocone/pkg/shard"
)

// TestShardEndToEnd: given 2 seeds ranked in 3 shards each (6 files), the binary reports
// 2 seeds with the metrics artifact rows of the 2 unsharded ranks files; a missing or
// repeated shard exits 1 with one "metrics: " prefix, naming the files, and writes
// nothing.
func TestShardEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := stagetest.Build(t)
	dir := t.TempDir()
	queries, cks := stagetest.Fixtures(t, dir, "rocone-1", "rocone-2")
	var whole, shards []string
	for _, name := range []string{"rocone-1", "rocone-2"} {
		p := filepath.Join(dir, "ranks-"+name+".arrow")
		if err := pipeline.Rank(pipeline.RankConfig{Checkpoint: cks[name], Queries: queries, Output: p, Kernels: compute.Reference[float32]{}}); err != nil {
			t.Fatal(err)
		}
		whole = append(whole, p)
		for i := 0; i < 3; i++ {
			p := filepath.Join(dir, fmt.Sprintf("ranks-%s-%d-of-3.arrow", name, i))
			if err := pipeline.Rank(pipeline.RankConfig{Checkpoint: cks[name], Queries: queries, Output: p, Kernels: compute.Reference[float32]{},
				Shard: shard.Spec{Index: i, Count: 3}}); err != nil {
				t.Fatal(err)
			}
			shards = append(shards, p)
		}
	}
	run := func(out string, ranks ...string) (int, string, []artifact.MetricsRow) {
		code, stderr := stagetest.Run(t, bin, append([]string{"--resamples", "40", "-o", out}, ranks...)...)
		if code != 0 {
			return code, stderr, nil
		}
		_, rows, err := artifact.ReadMetrics(out)
		if err != nil {
			t.Fatal(err)
		}
		return code, stderr, rows
	}
	_, stderr, want := run(filepath.Join(dir, "whole.arrow"), whole...)
	if want == nil {
		t.Fatalf("unsharded: %s", stderr)
	}
	code, stderr, got := run(filepath.Join(dir, "sharded.arrow"), shards...)
	if code != 0 || !reflect.DeepEqual(got, want) || got[0].Seeds != 2 {
		t.Fatalf("6 shard files: exit %d (%s); rows equal to the unsharded seeds': %v", code, stderr, reflect.DeepEqual(got, want))
	}
	for _, tc := range []struct {
		name  string
		ranks []string
		msg   string
	}{
		{"missing", []string{shards[0], shards[2], shards[3], shards[4], shards[5]}, "shard 1/3 missing (given 2 of 3: " + shards[0] + " " + shards[2] + ")"},
		{"repeated", append(shards[:3:3], shards[1], shards[3], shards[4], shards[5]), shards[1] + " and " + shards[1] + " are both shard 1/3"},
	} {
		out := filepath.Join(dir, "refused.arrow")
		before := stagetest.SnapshotDir(t, dir)
		code, stderr, _ := run(out, tc.ranks...)
		if code != 1 || !strings.Contains(stderr, tc.msg) || strings.Count(stderr, "metrics: ") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", tc.name, code, stderr, tc.msg)
		}
		stagetest.SameDir(t, tc.name, before, stagetest.SnapshotDir(t, dir))
	}
}
