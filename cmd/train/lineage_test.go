package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"

	"github.com/rocone/rocone/pkg/artifact"
)

// TestLineage: train records the KG's digest and the train file's fingerprint in the
// checkpoint and the log, and refuses what mixes KGs or runs, naming both files: a
// --valid file of another KG of the same name and counts (two id-only KGs that differ in
// one fact), a resume on a train file of another KG, a resume into the log of a run of
// the same configuration on another train file, a new run (or --auto-resume's) over the
// checkpoint or log of a run of the same configuration on another KG or train file. Each
// exits 1 with one message and changes no file.
func TestLineage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := stagetest.Build(t)
	dir := t.TempDir()
	l := stagetest.MakeLineage(t, dir)
	run := filepath.Join(t.TempDir(), "run") // copies to resume, so that the fixtures stay as they are
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile := func(src string) string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(run, filepath.Base(src))
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	onOther, onOtherLog, log1 := copyFile(l.ModelOnOther), copyFile(l.Log(l.ModelOnOther)), copyFile(l.Log(l.Model1))
	m1 := copyFile(l.Model1)
	base := []string{"--model", "rocone", "--dim", "8", "--batch", "16", "--negatives", "4", "--gamma", "12", "--lr", "0.01", "--eval-every", "0", "--checkpoint-every", "0", "-q"}
	for _, tc := range []struct {
		name string
		args []string
		msg  []string // in the message, in order
	}{
		{"valid queries of another KG", []string{"--train", l.Train, "--valid", l.TestOnOther, "--steps", "2", "--seed", "1", "--checkpoint", filepath.Join(run, "new.arrow")},
			[]string{"train: " + l.TestOnOther + ": queries of another KG (digest ", ") than " + l.Train + " (", "though dataset and counts agree"}},
		{"resume on a train file of another KG", []string{"--train", l.TrainOnOther, "--resume", "--steps", "4", "--seed", "1", "--checkpoint", m1},
			[]string{"train: " + l.TrainOnOther + ": queries of another KG (digest ", ") than the one the checkpoint " + m1 + " was trained on"}},
		{"a new run over the checkpoint of another KG", []string{"--train", l.Train, "--steps", "2", "--seed", "1", "--checkpoint", onOther},
			[]string{"train: --checkpoint " + onOther + " holds the checkpoint of another run (on another KG: digest ", "give --overwrite to replace it"}},
		{"a new run over the log of other train queries", []string{"--train", l.OtherTrain, "--steps", "2", "--seed", "1", "--checkpoint", filepath.Join(run, "new.arrow"), "--log", log1},
			[]string{"train: --log " + log1 + " holds the train log of another run (on other train queries: fingerprint ", "give --overwrite to replace it"}},
		{"--auto-resume over the checkpoint of another KG", []string{"--train", l.Train, "--auto-resume", "--steps", "2", "--seed", "1", "--checkpoint", onOther},
			[]string{"train: --checkpoint " + onOther + " holds the checkpoint of another run (on another KG: digest "}},
		{"resume into the log of another train file", []string{"--train", l.TrainOnOther, "--resume", "--steps", "4", "--seed", "1", "--checkpoint", onOther, "--log", log1},
			[]string{"train: " + log1 + " is the log of a run on another KG or train file", "than the checkpoint " + onOther + "'s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, fixtures := stagetest.SnapshotDir(t, run), stagetest.SnapshotDir(t, dir)
			code, stderr := stagetest.Run(t, bin, append(append([]string{}, base...), tc.args...)...)
			at := 0
			for _, m := range tc.msg {
				i := strings.Index(stderr[at:], m)
				if i < 0 {
					t.Errorf("exit %d, stderr %q: no %q (in order)", code, stderr, m)
					break
				}
				at += i + len(m)
			}
			if code != 1 || strings.Count(stderr, "train: ") != 1 {
				t.Errorf("exit %d, stderr %q; want 1 and one message", code, stderr)
			}
			stagetest.SameDir(t, "run folder", before, stagetest.SnapshotDir(t, run))
			stagetest.SameDir(t, "fixtures", fixtures, stagetest.SnapshotDir(t, dir))
		})
	}
	// Resuming with its own train file and log: the checkpoint and log keep the lineage.
	if code, stderr := stagetest.Run(t, bin, append(append([]string{}, base...), "--train", l.TrainOnOther, "--resume", "--steps", "4", "--seed", "1",
		"--checkpoint", onOther, "--log", onOtherLog)...); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	cm, err := artifact.ReadCheckpointMeta(onOther)
	if err != nil {
		t.Fatal(err)
	}
	lm, _, err := artifact.ReadTrainLog(onOtherLog)
	if err != nil {
		t.Fatal(err)
	}
	qm, _, err := artifact.ReadQueries(l.TrainOnOther)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Step != 4 || cm.KGDigest != qm.KGDigest || cm.KGDigest == "" || lm.KGDigest != cm.KGDigest || cm.TrainFingerprint == "" || lm.TrainFingerprint != cm.TrainFingerprint {
		t.Errorf("after resuming: step %d; KG digest queries %q, checkpoint %q, log %q; train fingerprint checkpoint %q, log %q",
			cm.Step, qm.KGDigest, cm.KGDigest, lm.KGDigest, cm.TrainFingerprint, lm.TrainFingerprint)
	}
}
