package train

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/artifact"
)

// TestCheckpointDiff: a checkpoint is the same as itself and as a copy whose timings
// alone differ; one changed value, one changed metadata key, one changed state field and
// an unparsable state are each reported.
func TestCheckpointDiff(t *testing.T) {
	train, valid := files(t)
	ck := filepath.Join(t.TempDir(), "a.arrow")
	run(t, tinyConfig("rocone"), Options{Train: train, Valid: valid, Checkpoint: ck, Workers: 1})
	read := func() *artifact.Checkpoint {
		c, err := artifact.ReadCheckpoint(ck)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	base := read()
	setState := func(c *artifact.Checkpoint, edit func(*state)) {
		var st state
		if err := json.Unmarshal([]byte(c.Meta.State), &st); err != nil {
			t.Fatal(err)
		}
		edit(&st)
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		c.Meta.State = string(b)
	}
	for _, c := range []struct {
		name, want string
		edit       func(*artifact.Checkpoint)
	}{
		{"same", "", func(*artifact.Checkpoint) {}},
		{"timings (older checkpoints')", "", func(c *artifact.Checkpoint) { setState(c, func(s *state) { s.Timings = &Timings{Sampling: 3} }) }},
		{"value", "value 5", func(c *artifact.Checkpoint) { c.Tensors[1].Values[5]++ }},
		{"metadata", "metadata", func(c *artifact.Checkpoint) { c.Meta.AdamStep++ }},
		{"state", "training state", func(c *artifact.Checkpoint) { setState(c, func(s *state) { s.EvalEvery++ }) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			other := read()
			c.edit(other)
			diff, err := CheckpointDiff(base, other)
			if err != nil {
				t.Fatal(err)
			}
			if (c.want == "") != (diff == "") || !strings.Contains(diff, c.want) {
				t.Fatalf("diff %q, want one with %q", diff, c.want)
			}
		})
	}
	bad := read()
	bad.Meta.State = "{"
	if _, err := CheckpointDiff(base, bad); err == nil || !strings.Contains(err.Error(), "the second checkpoint: training state") {
		t.Fatalf("an unparsable state: %v", err)
	}
}
