package main

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"

	"github.com/rocone/rocone/pkg/artifact"
)

// TestShardEndToEnd: `rank --shard i/3` three times gives the unsharded ranks row for row
// (the queries' ids kept), each file recording shard=i/3; bad --shard values exit 1 with
// one "rank: " prefix and write nothing.
func TestShardEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := stagetest.Build(t)
	dir := t.TempDir()
	queries, cks := stagetest.Fixtures(t, dir, "rocone-1")
	base := []string{"--checkpoint", cks["rocone-1"], "--queries", queries, "-q", "--batch", "4"}
	whole := filepath.Join(dir, "whole.arrow")
	if code, stderr := stagetest.Run(t, bin, append(base, "-o", whole)...); code != 0 {
		t.Fatalf("unsharded: exit %d: %s", code, stderr)
	}
	_, want, err := artifact.ReadRanks(whole)
	if err != nil {
		t.Fatal(err)
	}
	var got []artifact.Rank
	for i := 0; i < 3; i++ {
		p := filepath.Join(dir, fmt.Sprintf("r%d.arrow", i))
		if code, stderr := stagetest.Run(t, bin, append(base, "--shard", fmt.Sprintf("%d/3", i), "-o", p)...); code != 0 {
			t.Fatalf("shard %d/3: exit %d: %s", i, code, stderr)
		}
		meta, rows, err := artifact.ReadRanks(p)
		if err != nil {
			t.Fatal(err)
		}
		if meta.Shard.String() != fmt.Sprintf("%d/3", i) || len(rows) == 0 {
			t.Errorf("%s: shard %q, %d rows", p, meta.Shard, len(rows))
		}
		got = append(got, rows...)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("3 shards: %d rows, unsharded %d, or they differ", len(got), len(want))
	}
	out := filepath.Join(dir, "out.arrow")
	for _, tc := range []struct{ shard, msg string }{
		{"3/3", "--shard \"3/3\": shard index 3 out of range"},
		{"-1/2", "--shard \"-1/2\": shard index -1 out of range"},
		{"x", "--shard \"x\": want i/n"},
		{"0/40", "--shard 0/40: the 34 queries of " + queries + " are cut in whole blocks of 16"},
	} {
		before := stagetest.SnapshotDir(t, dir)
		code, stderr := stagetest.Run(t, bin, append(base, "--shard", tc.shard, "-o", out)...)
		if code != 1 || !strings.Contains(stderr, tc.msg) || strings.Count(stderr, "rank: ") != 1 {
			t.Errorf("--shard %s: exit %d, stderr %q; want 1 and %q", tc.shard, code, stderr, tc.msg)
		}
		stagetest.SameDir(t, "--shard "+tc.shard, before, stagetest.SnapshotDir(t, dir))
	}
}
