package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"
)

// TestShardEndToEnd: `sample generate --shard i/3` three times (one with another
// --shard-margin) and `sample merge` give the unsharded file byte for byte; bad --shard and
// --shard-margin values and an incomplete or repeated set exit
// 1 with one "sample: " prefix and a message naming the fault, writing nothing.
func TestShardEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := stagetest.Build(t)
	dir := t.TempDir()
	args := []string{"generate", "-q", "--data", "../../testdata/tiny", "--split", "valid", "--seed", "2",
		"--count", "1p=20,2p=9,3p=9,2i=9,3i=9,ip=9,pi=9,2u=9,up=9,2in=9,3in=9,inp=9,pin=9,pni=9"}
	whole := filepath.Join(dir, "whole.arrow")
	if code, stderr := stagetest.Run(t, bin, append(args, "-o", whole)...); code != 0 {
		t.Fatalf("unsharded: exit %d: %s", code, stderr)
	}
	var shards []string
	for i := 0; i < 3; i++ {
		p := filepath.Join(dir, fmt.Sprintf("s%d.arrow", i))
		shardArgs := append(args, "--shard", fmt.Sprintf("%d/3", i), "-o", p)
		if i == 1 {
			// Shards may differ in margin: it changes how far each samples, not the run.
			shardArgs = append(shardArgs, "--shard-margin", "0.3")
		}
		if code, stderr := stagetest.Run(t, bin, shardArgs...); code != 0 {
			t.Fatalf("shard %d/3: exit %d: %s", i, code, stderr)
		}
		shards = append(shards, p)
	}
	merged := filepath.Join(dir, "merged.arrow")
	if code, stderr := stagetest.Run(t, bin, "merge", "-o", merged, shards[2], shards[0], shards[1]); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	want, _ := os.ReadFile(whole)
	if got, _ := os.ReadFile(merged); !bytes.Equal(got, want) {
		t.Fatalf("merged shards differ from the unsharded file (%d vs %d bytes)", len(got), len(want))
	}
	out := filepath.Join(dir, "out.arrow")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{append(args, "--shard", "3/3", "-o", out), "--shard \"3/3\": shard index 3 out of range: shards are numbered 0 to 2"},
		{append(args, "--shard", "0/0", "-o", out), "--shard \"0/0\": the number of shards must be at least 1"},
		{append(args, "--shard", "1:3", "-o", out), "--shard \"1:3\": want i/n"},
		{append(args, "--shard", "0/3", "--shard-margin", "0", "-o", out), "--shard-margin 0: want a fraction above 0"},
		{append(args, "--shard", "0/3", "--shard-margin", "-0.1", "-o", out), "--shard-margin -0.1: want a fraction above 0"},
		{append(args, "--shard", "0/3", "--shard-margin", "NaN", "-o", out), "--shard-margin NaN: want a fraction above 0"},
		{append(args, "--shard-margin", "0.5", "-o", out), "--shard-margin: give it with --shard i/n"},
		{[]string{"merge", "-o", out, shards[0], shards[2]}, "shard 1/3 missing (given 2 of 3: " + shards[0] + " " + shards[2] + ")"},
		{[]string{"merge", "-o", out, shards[0], shards[1], shards[1], shards[2]}, "are both shard 1/3"},
		{[]string{"merge", "-o", out, shards[0], whole, shards[2]}, whole + " has no shard metadata"},
		{[]string{"merge", "-o", out}, "merge: give the shard files of one run"},
		{[]string{"merge", "-o", "", shards[0], shards[1], shards[2]}, `-o "": an empty value; give a FILE`},
		{[]string{"import-betae", "--data", "../../testdata/tiny", "--split", "valid", "--pickle", "", "-o", out}, `--pickle "": an empty value; give a FILE`},
		{[]string{"synth", "--entities", "10", "--relations", "1", "--edges", "20", "-o", ""}, `-o "": an empty value; give a DIR`},
	} {
		before := stagetest.SnapshotDir(t, dir)
		code, stderr := stagetest.Run(t, bin, tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.msg) || strings.Count(stderr, "sample: ") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.args, code, stderr, tc.msg)
		}
		after := stagetest.SnapshotDir(t, dir)
		if len(after) != len(before) {
			t.Errorf("%v: files before %d, after %d", tc.args, len(before), len(after))
		}
		for name, b := range before {
			if !bytes.Equal(after[name], b) {
				t.Errorf("%v changed %s", tc.args, name)
			}
		}
	}
}
