package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"
)

// TestFlagValuesEndToEnd: embed refuses the checkpoint rank refuses, with the same
// message (one check, pipeline.checkFinite), exit 1 and no file changed.
func TestFlagValuesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := stagetest.Build(t)
	dir := t.TempDir()
	queries, cks := stagetest.Fixtures(t, dir, "rocone-1")
	nan := filepath.Join(dir, "nan.arrow")
	stagetest.WithNaN(t, cks["rocone-1"], nan)
	out := filepath.Join(dir, "cones.arrow")
	before := stagetest.SnapshotDir(t, dir)
	code, stderr := stagetest.Run(t, bin, "--checkpoint", nan, "--queries", queries, "-q", "-o", out)
	if code != 1 || !strings.Contains(stderr, "nan.arrow: parameter entity[0, 1] is NaN") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !strings.HasPrefix(stderr, "embed: ") || strings.Contains(stderr, "embed: embed:") {
		t.Errorf("stderr %q: want one \"embed: \" prefix", stderr)
	}
	stagetest.SameDir(t, "files", before, stagetest.SnapshotDir(t, dir))
	if code, stderr := stagetest.Run(t, bin, "--checkpoint", cks["rocone-1"], "--queries", queries, "-q", "-o", out); code != 0 {
		t.Fatalf("a finite checkpoint: exit %d: %s", code, stderr)
	}
}
