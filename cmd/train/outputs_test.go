package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocone/rocone/internal/outfiletest"
	"github.com/rocone/rocone/pkg/artifact"
)

// The tests below run this test binary as the train command (outfiletest.Hook), so that
// they see its exit status and stderr.
func init() { outfiletest.Hook(main) }

// TestOutputsRefused: a checkpoint or log that is an input, the other output, stdout or a
// device, or in a folder that takes no files, is refused before any work, with exit
// status 1 and a message naming both flags and paths; no file changes.
func TestOutputsRefused(t *testing.T) {
	tr, va := data(t)
	dir := t.TempDir()
	train, valid := filepath.Join(dir, "train.arrow"), filepath.Join(dir, "valid.arrow")
	for src, dst := range map[string]string{tr: train, va: valid} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(dst, b, 0o644)
	}
	os.Symlink("train.arrow", filepath.Join(dir, "link.arrow"))
	os.Link(valid, filepath.Join(dir, "hard.arrow"))
	conf := filepath.Join(dir, "c.yaml")
	os.WriteFile(conf, []byte("dim: 8\nsteps: 3\n"), 0o644)
	ck := filepath.Join(dir, "m.arrow")
	ro := outfiletest.ReadOnly(t)
	base := append([]string{"--train", train, "--valid", valid}, tiny...)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"--checkpoint is --train by ./", []string{"--checkpoint", dir + "/./train.arrow"}, "--checkpoint " + dir + "/./train.arrow is the same file as --train " + train},
		{"--checkpoint is --train by a link", []string{"--checkpoint", filepath.Join(dir, "link.arrow")}, "--checkpoint " + filepath.Join(dir, "link.arrow") + " is the same file as --train " + train},
		{"--checkpoint is --valid by a hard link", []string{"--checkpoint", filepath.Join(dir, "hard.arrow")}, "--checkpoint " + filepath.Join(dir, "hard.arrow") + " is the same file as --valid " + valid},
		{"--checkpoint is --config", []string{"--config", conf, "--checkpoint", conf}, "--checkpoint " + conf + " is the same file as --config " + conf},
		{"--log is --train", []string{"--checkpoint", ck, "--log", train}, "--log " + train + " is the same file as --train " + train},
		{"--log is --checkpoint", []string{"--checkpoint", ck, "--log", ck}, "--log " + ck + " is the same file as --checkpoint " + ck},
		// --resume reads the checkpoint's configuration first: it is found not to be one.
		{"--resume on --train", []string{"--checkpoint", train, "--resume"}, train + `: artifact is "queries", want "checkpoint"`},
		{"--checkpoint -", []string{"--checkpoint", "-"}, "--checkpoint -: must be a file, not stdout"},
		{"--checkpoint /dev/null", []string{"--checkpoint", "/dev/null"}, "--checkpoint /dev/null: a character device, not a file"},
		{"--partial is --checkpoint", []string{"--checkpoint", ck, "--partial", ck}, "--partial " + ck + " is the same file as --checkpoint " + ck},
		{"--best is --checkpoint", []string{"--checkpoint", ck, "--keep-best", "--best", ck}, "--best " + ck + " is the same file as --checkpoint " + ck},
		{"--best is --valid", []string{"--checkpoint", ck, "--keep-best", "--best", valid}, "--best " + valid + " is the same file as --valid " + valid},
		{"--best in a read-only folder", []string{"--checkpoint", ck, "--keep-best", "--best", filepath.Join(ro, "b.arrow")}, "--best " + filepath.Join(ro, "b.arrow") + ": cannot create files in " + ro},
		{"--log in a read-only folder", []string{"--checkpoint", ck, "--log", filepath.Join(ro, "log.arrow")}, "--log " + filepath.Join(ro, "log.arrow") + ": cannot create files in " + ro},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := outfiletest.Take(t, dir)
			r := outfiletest.Run(t, 2*time.Minute, append(append(base[:len(base):len(base)], "--steps", "3"), c.args...)...)
			r.Expect(t, 1, "train: "+c.want)
			before.Unchanged(t)
		})
	}
}

// TestReadOnlyFoundBeforeWork: a checkpoint folder that takes no files fails a run of a
// million steps at once, before any training (no progress line), not at the first
// checkpoint.
func TestReadOnlyFoundBeforeWork(t *testing.T) {
	tr, _ := data(t)
	ro := outfiletest.ReadOnly(t)
	ck := filepath.Join(ro, "m.arrow")
	// Not -q: a progress line would show that training started.
	args := []string{"--train", tr, "--checkpoint", ck, "--steps", "1000000", "--checkpoint-every", "500000", "--dim", "8", "--batch", "16", "--negatives", "4"}
	r := outfiletest.Run(t, time.Minute, args...)
	r.Expect(t, 1, "train: --checkpoint "+ck+": cannot create files in "+ro)
	if lines := strings.Count(strings.TrimSpace(r.Stderr), "\n") + 1; lines != 1 {
		t.Errorf("stderr has %d lines, want the error only:\n%s", lines, r.Stderr)
	}
	if r.Elapsed > 20*time.Second {
		t.Errorf("took %v to fail", r.Elapsed)
	}
	t.Logf("failed after %v", r.Elapsed)
}

// TestSIGTERM: SIGTERM, like SIGINT, ends the run at the next step with a checkpoint
// that --resume continues (exit status 1, saying so); a second signal ends a run that
// does not stop at once, with the last checkpoint intact and no temporary file.
func TestSIGTERM(t *testing.T) {
	tr, va := data(t)
	t.Run("checkpoints", func(t *testing.T) {
		dir := t.TempDir()
		ck := filepath.Join(dir, "m.arrow")
		run := outfiletest.Start(t, append([]string{"--train", tr, "--valid", va, "--checkpoint", ck, "--steps", "1000000",
			"--eval-every", "0", "--checkpoint-every", "5", "--workers", "1"}, tiny...))
		waitCheckpoint(t, ck, 1)
		run.Process.Signal(syscall.SIGTERM)
		run.Wait().Expect(t, 1, "train: SIGTERM: stopping at the next step", "train: interrupted: "+ck+" holds", "continue with --resume")
		meta, err := artifact.ReadCheckpointMeta(ck)
		if err != nil || meta.Step <= 0 || meta.Step >= 1000000 {
			t.Fatalf("checkpoint after SIGTERM: step %d, %v", meta.Step, err)
		}
		outfiletest.NoTemp(t, dir)
	})
	t.Run("second signal", func(t *testing.T) {
		dir := t.TempDir()
		ck := filepath.Join(dir, "m.arrow")
		// --test-hang-after: the run blocks once 10 steps are checkpointed, so the first
		// signal, sent once they are, cannot end it.
		run := outfiletest.Start(t, append([]string{"--train", tr, "--checkpoint", ck, "--steps", "100", "--eval-every", "0",
			"--checkpoint-every", "1", "--test-hang-after", "10", "--workers", "1"}, tiny...))
		waitCheckpoint(t, ck, 10)
		run.Process.Signal(syscall.SIGINT)
		run.Stderr.WaitFor(t, "stopping at the next step", time.Minute)
		run.Process.Signal(syscall.SIGTERM)
		run.Wait().Expect(t, 143, "train: SIGINT: stopping at the next step", "train: stopped by SIGTERM")
		if _, err := artifact.ReadCheckpoint(ck); err != nil {
			t.Fatalf("the checkpoint does not read: %v", err)
		}
		outfiletest.NoTemp(t, dir)
	})
}

// waitCheckpoint waits until ck holds a checkpoint of at least steps steps.
func waitCheckpoint(t *testing.T, ck string, steps int64) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		if meta, err := artifact.ReadCheckpointMeta(ck); err == nil && meta.Step >= steps {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint at %s after a minute", ck)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOneRunPerOutput: while a run holds its checkpoint, a second run naming the same
// checkpoint, or its log, fails at once naming the first run's pid and changes nothing;
// once the first has ended (here by a signal), the checkpoint is free again.
func TestOneRunPerOutput(t *testing.T) {
	tr, _ := data(t)
	dir := t.TempDir()
	ck := filepath.Join(dir, "m.arrow")
	args := append([]string{"--train", tr, "--checkpoint", ck, "--eval-every", "0", "--checkpoint-every", "1", "--workers", "1"}, tiny...)
	first := outfiletest.Start(t, append(append([]string{}, args...), "--steps", "100", "--test-hang-after", "2"))
	defer first.Process.Kill()
	waitCheckpoint(t, ck, 2)
	held := "another run is writing it (process " + strconv.Itoa(first.Process.Pid) + " holds"
	outfiletest.RunRedirects(t, dir, []outfiletest.Redirect{
		outfiletest.R("the same checkpoint", append(append([]string{}, args...), "--steps", "5", "--overwrite"), "", 1, "train: --checkpoint "+ck+": "+held),
		outfiletest.R("resuming it", append(append([]string{}, args...), "--steps", "5", "--resume"), "", 1, held),
		outfiletest.R("its log", append(append([]string{"--train", tr, "--checkpoint", filepath.Join(dir, "other.arrow")}, tiny...), "--log", filepath.Join(dir, "m-log.arrow"), "--steps", "5"),
			"", 1, "train: --log "+filepath.Join(dir, "m-log.arrow")+": "+held),
	})
	first.Process.Signal(syscall.SIGINT)
	first.Stderr.WaitFor(t, "stopping at the next step", time.Minute)
	first.Process.Signal(syscall.SIGTERM)
	first.Wait()
	if _, err := os.Stat(filepath.Join(dir, ".m.arrow.lock")); !os.IsNotExist(err) {
		t.Errorf("the lock file outlived its run: %v", err)
	}
	outfiletest.Run(t, time.Minute, append(append([]string{}, args...), "--steps", "3", "--resume")...).Expect(t, 0)
}

// TestStderrClosedEarly: a run whose progress reader went away (`2>&1 | head -1`) trains to
// the end and writes its checkpoint and log.
func TestStderrClosedEarly(t *testing.T) {
	tr, _ := data(t)
	dir := t.TempDir()
	ck, log := filepath.Join(dir, "m.arrow"), filepath.Join(dir, "m-log.arrow")
	loud := slices.DeleteFunc(slices.Clone(tiny), func(a string) bool { return a == "-q" }) // progress on stderr
	outfiletest.StderrClosedEarly(t, ck, append([]string{"--train", tr, "--checkpoint", ck, "--log", log, "--steps", "20", "--eval-every", "0"}, loud...)...)
	if _, err := os.Stat(log); err != nil {
		t.Error(err)
	}
}
