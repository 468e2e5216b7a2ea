package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/pipeline"
)

// TestLineage: rank refuses to use a model on what it was not trained for, naming both
// files: queries of another KG of the same name and counts (two id-only KGs that differ
// in one fact, where an entity-table digest tells nothing), a --data folder of another
// KG, cones of another model. What it ranks carries the model's lineage.
func TestLineage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := stagetest.Build(t)
	dir := t.TempDir()
	l := stagetest.MakeLineage(t, dir)
	cones := filepath.Join(dir, "cones-m1.arrow")
	if err := pipeline.Embed(pipeline.EmbedConfig{Checkpoint: l.Model1, Queries: l.Test, Output: cones, Kernels: compute.Reference[float32]{}}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "ranks.arrow")
	for _, tc := range []struct {
		name string
		args []string
		msg  []string // in the message, in order
	}{
		{"queries of another KG", []string{"--checkpoint", l.Model1, "--queries", l.TestOnOther},
			[]string{"rank: " + l.TestOnOther + ": queries of another KG (digest ", ") than " + l.Model1 + " was trained on (digest ", `though dataset "tiny" and counts agree`}},
		{"a model of another KG", []string{"--checkpoint", l.ModelOnOther, "--queries", l.Test},
			[]string{"rank: " + l.Test + ": queries of another KG", "than " + l.ModelOnOther + " was trained on"}},
		{"--data of another KG", []string{"--checkpoint", l.Model1, "--queries", l.Test, "--top", "3", "--data", l.OtherKG},
			[]string{"rank: " + l.OtherKG + " is another KG (digest ", ") than " + l.Model1 + " was trained on (digest ", "though its counts agree"}},
		{"cones of another model", []string{"--checkpoint", l.Model2, "--queries", l.Test, "--cones", cones},
			[]string{"rank: " + cones + ": cones computed with checkpoint " + l.Model1, "not " + l.Model2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := stagetest.SnapshotDir(t, dir)
			code, stderr := stagetest.Run(t, bin, append(tc.args, "-q", "-o", out)...)
			at := 0
			for _, m := range tc.msg {
				i := strings.Index(stderr[at:], m)
				if i < 0 {
					t.Errorf("exit %d, stderr %q: no %q (in order)", code, stderr, m)
					break
				}
				at += i + len(m)
			}
			if code != 1 || strings.Count(stderr, "rank: ") != 1 {
				t.Errorf("exit %d, stderr %q; want 1 and one message", code, stderr)
			}
			stagetest.SameDir(t, tc.name, before, stagetest.SnapshotDir(t, dir))
		})
	}

	// The model on its own KG's queries and folder: the ranks carry its lineage, which is
	// the queries' KG and the train file's fingerprint.
	if code, stderr := stagetest.Run(t, bin, "--checkpoint", l.Model1, "--queries", l.Test, "--top", "3", "--data", l.KG, "-q", "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rm, _, err := artifact.ReadRanks(out)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := artifact.ReadCheckpointMeta(l.Model1)
	if err != nil {
		t.Fatal(err)
	}
	qm, _, err := artifact.ReadQueries(l.Test)
	if err != nil {
		t.Fatal(err)
	}
	om, _, err := artifact.ReadQueries(l.TestOnOther)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case qm.KGDigest == "" || qm.KGDigest == om.KGDigest:
		t.Errorf("the two KGs' queries have KG digests %q and %q", qm.KGDigest, om.KGDigest)
	case cm.KGDigest != qm.KGDigest || rm.KGDigest != qm.KGDigest:
		t.Errorf("KG digest: queries %q, checkpoint %q, ranks %q", qm.KGDigest, cm.KGDigest, rm.KGDigest)
	case cm.TrainFingerprint == "" || rm.TrainFingerprint != cm.TrainFingerprint:
		t.Errorf("train fingerprint: checkpoint %q, ranks %q", cm.TrainFingerprint, rm.TrainFingerprint)
	}
	cmeta, _, err := artifact.ReadCones(cones)
	if err != nil {
		t.Fatal(err)
	}
	if cmeta.KGDigest != cm.KGDigest || cmeta.TrainFingerprint != cm.TrainFingerprint {
		t.Errorf("cones lineage %q %q, checkpoint's %q %q", cmeta.KGDigest, cmeta.TrainFingerprint, cm.KGDigest, cm.TrainFingerprint)
	}
}
