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

// TestEmptyValues: an empty value would pass for the flag's default (--device "" for cpu,
// export's --cones "" for no cones) or fail as an unnamed path: each is refused naming
// the flag, exit 1, no file changed.
func TestEmptyValues(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := stagetest.Build(t)
	dir := t.TempDir()
	queries, cks := stagetest.Fixtures(t, dir, "rocone-1")
	ck := cks["rocone-1"]
	out := filepath.Join(dir, "cones.arrow")
	exp := filepath.Join(dir, "export")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--checkpoint", ck, "--queries", queries, "-o", out, "--device", ""}, `embed: --device "": an empty value; give a DEVICE, or leave --device out (default: cpu)`},
		{[]string{"--checkpoint", "", "--queries", queries, "-o", out}, `embed: --checkpoint "": an empty value; give a FILE`},
		{[]string{"--checkpoint", ck, "--queries", "", "-o", out}, `embed: --queries "": an empty value; give a FILE`},
		{[]string{"--checkpoint", ck, "--queries", queries, "-o", ""}, `embed: -o "": an empty value; give a FILE`},
		{[]string{"export", "--checkpoint", ck, "--format", "npy", "-o", exp, "--cones", ""}, `embed: --cones "": an empty value; give a FILE`},
		{[]string{"export", "--checkpoint", ck, "--format", "npy", "-o", exp, "--data", ""}, `embed: --data "": an empty value; give a DIR, or leave --data out`},
		{[]string{"export", "--checkpoint", "", "--cones", out, "--format", "npy", "-o", exp}, `embed: --checkpoint "": an empty value; give a FILE`},
	} {
		before := stagetest.SnapshotDir(t, dir)
		code, stderr := stagetest.Run(t, bin, append(tc.args, "-q")...)
		if code != 1 || !strings.HasPrefix(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 1 and %q", tc.args, code, stderr, tc.want)
		}
		stagetest.SameDir(t, "files", before, stagetest.SnapshotDir(t, dir))
	}
}
