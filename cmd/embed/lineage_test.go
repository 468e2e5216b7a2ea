package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"

	"github.com/rocone/rocone/pkg/artifact"
)

// TestLineage: embed refuses queries of another KG than the model's (same name and
// counts: two id-only KGs that differ in one fact), naming both files, and its cones
// carry the model's lineage.
func TestLineage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := stagetest.Build(t)
	dir := t.TempDir()
	l := stagetest.MakeLineage(t, dir)
	out := filepath.Join(dir, "cones.arrow")
	before := stagetest.SnapshotDir(t, dir)
	code, stderr := stagetest.Run(t, bin, "--checkpoint", l.Model1, "--queries", l.TestOnOther, "-o", out)
	want := "embed: " + l.TestOnOther + ": queries of another KG (digest "
	if code != 1 || !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, "than "+l.Model1+" was trained on") {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	stagetest.SameDir(t, "folder", before, stagetest.SnapshotDir(t, dir))
	if code, stderr := stagetest.Run(t, bin, "--checkpoint", l.Model1, "--queries", l.Test, "-o", out); code != 0 {
		t.Fatalf("its own KG's queries: exit %d: %s", code, stderr)
	}
	cm, _, err := artifact.ReadCones(out)
	if err != nil {
		t.Fatal(err)
	}
	km, err := artifact.ReadCheckpointMeta(l.Model1)
	if err != nil {
		t.Fatal(err)
	}
	if cm.KGDigest == "" || cm.KGDigest != km.KGDigest || cm.TrainFingerprint != km.TrainFingerprint {
		t.Errorf("cones lineage %q %q, the checkpoint's %q %q", cm.KGDigest, cm.TrainFingerprint, km.KGDigest, km.TrainFingerprint)
	}
}
