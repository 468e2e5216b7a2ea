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

// TestShardEndToEnd: `embed --shard i/3` three times gives the unsharded cones row for row,
// each file recording shard=i/3; bad --shard values exit 1 with one "embed: " prefix and
// write nothing.
func TestShardEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := stagetest.Build(t)
	dir := t.TempDir()
	queries, cks := stagetest.Fixtures(t, dir, "rocone-1")
	base := []string{"--checkpoint", cks["rocone-1"], "--queries", queries, "-q"}
	whole := filepath.Join(dir, "whole.arrow")
	if code, stderr := stagetest.Run(t, bin, append(base, "-o", whole)...); code != 0 {
		t.Fatalf("unsharded: exit %d: %s", code, stderr)
	}
	_, want, err := artifact.ReadCones(whole)
	if err != nil {
		t.Fatal(err)
	}
	var got []artifact.Cone
	for i := 0; i < 2; i++ {
		p := filepath.Join(dir, fmt.Sprintf("c%d.arrow", i))
		if code, stderr := stagetest.Run(t, bin, append(base, "--shard", fmt.Sprintf("%d/2", i), "-o", p)...); code != 0 {
			t.Fatalf("shard %d/2: exit %d: %s", i, code, stderr)
		}
		meta, rows, err := artifact.ReadCones(p)
		if err != nil {
			t.Fatal(err)
		}
		if meta.Shard.String() != fmt.Sprintf("%d/2", i) || len(rows) == 0 {
			t.Errorf("%s: shard %q, %d rows", p, meta.Shard, len(rows))
		}
		got = append(got, rows...)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("2 shards: %d rows, unsharded %d, or they differ", len(got), len(want))
	}
	out := filepath.Join(dir, "out.arrow")
	for _, tc := range []struct{ shard, msg string }{
		{"2/2", "--shard \"2/2\": shard index 2 out of range"},
		{"1/0", "--shard \"1/0\": the number of shards must be at least 1"},
		{"0/5", "--shard 0/5: the 34 queries of " + queries + " are cut in whole blocks of 16 (a multiple of the batch), 3 of them"},
	} {
		before := stagetest.SnapshotDir(t, dir)
		code, stderr := stagetest.Run(t, bin, append(base, "--shard", tc.shard, "-o", out)...)
		if code != 1 || !strings.Contains(stderr, tc.msg) || strings.Count(stderr, "embed: ") != 1 {
			t.Errorf("--shard %s: exit %d, stderr %q; want 1 and %q", tc.shard, code, stderr, tc.msg)
		}
		stagetest.SameDir(t, "--shard "+tc.shard, before, stagetest.SnapshotDir(t, dir))
	}
}
