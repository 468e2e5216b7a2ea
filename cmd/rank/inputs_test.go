package main

import (
	"testing"

	"github.com/rocone/rocone/internal/stagetest"
)

// TestCorruptInputs runs rank on checkpoints and queries files with one byte changed in
// their footer or body: a clean exit naming the file, never a panic or an out-of-memory,
// no file changed (stagetest.CorruptInputs).
func TestCorruptInputs(t *testing.T) {
	stagetest.CorruptInputs(t, "r.arrow")
}
