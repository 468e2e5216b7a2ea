package pipeline

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocone/rocone/internal/artifacttest"
	"github.com/rocone/rocone/pkg/artifact"
)

// TestMakeResume interrupts the Makefile pipeline's training, as a user would (SIGTERM
// to make, or Ctrl-C: SIGINT to make's whole process group), then runs the same make
// again: the training resumes from its partial checkpoint (it does not start over), and
// the model it ends with equals, bit for bit, an uninterrupted training's. Until it is
// finished, model.arrow does not exist, so make never takes an interrupted run's
// checkpoint for a finished model.
func TestMakeResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs make and the stage binaries")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	counts := "--count 1p=20,2p=8,3p=8,2i=8,3i=8,ip=8,pi=8,2u=8,up=8,2in=6,3in=6,inp=6,pin=6,pni=6"
	const steps = 40
	flags := "--dim 8 --steps " + strconv.Itoa(steps) + " --batch 16 --negatives 4 --eval-every 5 --checkpoint-every 1 --workers 1"
	vars := func(out, trainFlags string) []string {
		return []string{"--no-print-directory", "-f", "pipelines/Makefile", "OUT=" + out, "DATA=testdata/tiny", "DATASET=tiny", "SEEDS=0",
			"VALID_FLAGS=" + counts, "TEST_FLAGS=" + counts, "TRAIN_FLAGS=" + trainFlags}
	}
	makeCmd := func(args ...string) *exec.Cmd {
		cmd := exec.Command("make", args...)
		cmd.Dir = "../.."
		return cmd
	}
	base := t.TempDir()
	if got, err := makeCmd(append(vars(base, flags), "queries", "bin/train")...).CombinedOutput(); err != nil {
		t.Fatalf("make queries: %v\n%s", err, got)
	}
	// The uninterrupted training, by the same binary with the same flags.
	straight := filepath.Join(base, "straight.arrow")
	train := exec.Command("bin/train", append(strings.Fields(flags), "--train", filepath.Join(base, "train-queries.arrow"),
		"--valid", filepath.Join(base, "valid-queries.arrow"), "--model", "rocone", "--seed", "0", "--device", "cpu", "-q",
		"--checkpoint", straight, "--log", "")...)
	train.Dir = "../.."
	if got, err := train.CombinedOutput(); err != nil {
		t.Fatalf("the straight training: %v\n%s", err, got)
	}

	for _, tc := range []struct {
		name  string
		group bool // the signal goes to make's process group (a terminal's Ctrl-C), not make alone
		sig   syscall.Signal
	}{
		{"SIGTERM to make", false, syscall.SIGTERM},
		{"SIGINT to the process group", true, syscall.SIGINT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			for _, f := range []string{"train-queries.arrow", "valid-queries.arrow", "test-queries.arrow"} {
				b, err := os.ReadFile(filepath.Join(base, f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(out, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			seed := filepath.Join(out, "rocone", "seed0")
			model, partial := filepath.Join(seed, "model.arrow"), filepath.Join(seed, "model.partial.arrow")
			// Slowed down (the steps are otherwise milliseconds), so that it is certainly
			// interrupted mid-run; the sleep changes nothing computed.
			first := makeCmd(append(vars(out, flags+" --test-step-sleep 40ms"), "models")...)
			first.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var log bytes.Buffer
			first.Stdout, first.Stderr = &log, &log
			if err := first.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- first.Wait() }()
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
				if meta, err := artifact.ReadCheckpointMeta(partial); err == nil && meta.Step >= 3 {
					break
				}
				select {
				case err := <-done:
					t.Fatalf("make ended before it was interrupted: %v\n%s", err, log.String())
				default:
				}
				if time.Now().After(deadline) {
					first.Process.Kill()
					t.Fatalf("no partial checkpoint after a minute:\n%s", log.String())
				}
			}
			pid := first.Process.Pid
			if tc.group {
				pid = -pid
			}
			if err := syscall.Kill(pid, tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err == nil {
					t.Fatalf("make succeeded although interrupted:\n%s", log.String())
				}
			case <-time.After(time.Minute):
				syscall.Kill(-first.Process.Pid, syscall.SIGKILL)
				t.Fatalf("make did not stop within a minute of %s:\n%s", tc.sig, log.String())
			}
			if !strings.Contains(log.String(), "stopping at the next step") || !strings.Contains(log.String(), "train: interrupted: "+partial+" holds") {
				t.Fatalf("train did not checkpoint on the signal:\n%s", log.String())
			}
			cut, err := artifact.ReadCheckpointMeta(partial)
			if err != nil || cut.Step < 3 || cut.Step >= steps {
				t.Fatalf("after the interruption the partial checkpoint holds %d steps (%v):\n%s", cut.Step, err, log.String())
			}
			if _, err := os.Stat(model); !os.IsNotExist(err) {
				t.Fatalf("%s exists after the interruption (%v)", model, err)
			}

			again, err := makeCmd(append(vars(out, flags), "models")...).CombinedOutput()
			if err != nil {
				t.Fatalf("make again: %v\n%s", err, again)
			}
			want := "resuming " + partial + ": it holds " + strconv.FormatInt(cut.Step, 10) + " of " + strconv.Itoa(steps) + " steps of this run"
			if !strings.Contains(string(again), want) || strings.Contains(string(again), "starting a new run") {
				t.Fatalf("the second make did not resume (want %q):\n%s", want, again)
			}
			artifacttest.SameTensors(t, straight, model)
			if _, err := os.Stat(partial); !os.IsNotExist(err) {
				t.Errorf("%s is left after the training finished (%v)", partial, err)
			}
			artifacttest.EachStepOnce(t, filepath.Join(seed, "train-log.arrow"), steps)
			if dry, err := makeCmd(append(vars(out, flags), "-n", "models")...).CombinedOutput(); err != nil || strings.Contains(string(dry), "bin/train") {
				t.Fatalf("a third make would train again (%v):\n%s", err, dry)
			}
		})
	}
}
