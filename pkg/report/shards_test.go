package report

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/shard"
)

// TestGroupShards: the shards of one checkpoint's run (any order) are one group, in shard
// order; unsharded files are runs of their own; a set with a shard missing or repeated, or
// shards of two runs mixed, is refused naming the files.
func TestGroupShards(t *testing.T) {
	id := func(path, ck string) RunIdentity {
		return RunIdentity{Path: path, CheckpointHash: ck, Queries: "q", Dataset: "d", Split: "test"}
	}
	s := func(i, n int) shard.Spec { return shard.Spec{Index: i, Count: n} }
	for _, tc := range []struct {
		name   string
		runs   []RunIdentity
		specs  []shard.Spec
		groups [][]int
		err    string
	}{
		{"2 seeds × 3 shards", []RunIdentity{id("a2", "A"), id("b0", "B"), id("a0", "A"), id("a1", "A"), id("b2", "B"), id("b1", "B")},
			[]shard.Spec{s(2, 3), s(0, 3), s(0, 3), s(1, 3), s(2, 3), s(1, 3)}, [][]int{{2, 3, 0}, {1, 5, 4}}, ""},
		{"unsharded", []RunIdentity{id("a", "A"), id("b", "B")}, []shard.Spec{{}, {}}, [][]int{{0}, {1}}, ""},
		{"one sharded, one whole", []RunIdentity{id("a0", "A"), id("b", "B"), id("a1", "A")},
			[]shard.Spec{s(0, 2), {}, s(1, 2)}, [][]int{{0, 2}, {1}}, ""},
		{"0/1 is the whole: runs of their own (CheckSeeds then refuses one checkpoint twice)", []RunIdentity{id("a", "A"), id("a0", "A")},
			[]shard.Spec{{}, s(0, 1)}, [][]int{{0}, {1}}, ""},
		{"missing", []RunIdentity{id("a0", "A"), id("a2", "A")}, []shard.Spec{s(0, 3), s(2, 3)}, nil,
			"ranks shards of checkpoint sha256 A: shard 1/3 missing (given 2 of 3: a0 a2)"},
		{"repeated", []RunIdentity{id("a0", "A"), id("a1", "A"), id("x1", "A")}, []shard.Spec{s(0, 2), s(1, 2), s(1, 2)}, nil,
			"a1 and x1 are both shard 1/2"},
		{"mixed runs", []RunIdentity{id("a0", "A"), id("b1", "B")}, []shard.Spec{s(0, 2), s(1, 2)}, nil,
			"checkpoint sha256 A: shard 1/2 missing (given 1 of 2: a0)"},
		{"other cut", []RunIdentity{id("a0", "A"), id("a1", "A"), id("a2", "A")}, []shard.Spec{s(0, 2), s(1, 2), s(2, 3)}, nil,
			"a0 is shard 0/2 but a2 is shard 2/3"},
	} {
		got, err := GroupShards(tc.runs, tc.specs)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.groups) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.groups)
		}
	}
}
