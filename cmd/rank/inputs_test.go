package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocone/rocone/internal/outfiletest"
	"github.com/rocone/rocone/internal/stagetest"

	"github.com/rocone/rocone/pkg/artifact"
)

// TestCorruptInputs runs rank on checkpoints and queries files with one byte changed in
// their footer or body: a clean exit naming the file, never a panic or an out-of-memory,
// no file changed (stagetest.CorruptInputs).
func TestCorruptInputs(t *testing.T) {
	stagetest.CorruptInputs(t, "r.arrow")
}

// TestNoHardAnswer: queries none of which has a hard answer (imported for another split,
// say) are refused before any scoring, naming the file, and no ranks file is made: it
// would have no row, which no stage reads.
func TestNoHardAnswer(t *testing.T) {
	f := outfiletest.Make(t)
	meta, qs, err := artifact.ReadQueries(f.Test)
	if err != nil {
		t.Fatal(err)
	}
	for i := range qs {
		qs[i].Hard = nil
	}
	noHard := filepath.Join(f.Dir, "no-hard.arrow")
	if err := artifact.WriteQueries(noHard, meta, qs); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(f.Dir, "r.arrow")
	before := outfiletest.Take(t, f.Dir)
	outfiletest.Run(t, time.Minute, "--checkpoint", f.Checkpoint, "--queries", noHard, "-q", "-o", out).Expect(t, 1,
		fmt.Sprintf("rank: %s: none of its %d queries has a hard answer, so there is nothing to rank", noHard, len(qs)))
	before.Unchanged(t)
}
