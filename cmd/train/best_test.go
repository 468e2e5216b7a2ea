package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocone/rocone/internal/artifacttest"
	"github.com/rocone/rocone/internal/outfiletest"
	"github.com/rocone/rocone/pkg/artifact"
)

// TestKeepBestEndToEnd runs train --keep-best --patience to its early stop; then the same
// command with --partial and --auto-resume, stopped by SIGTERM mid-run and run again as
// it was: the second run resumes the partial checkpoint (it does not start over) and
// ends with the uninterrupted run's best and final checkpoints, bit for bit, at the same
// early stop, which the train log's metadata and the last message record.
func TestKeepBestEndToEnd(t *testing.T) {
	tr, va := data(t)
	dir := t.TempDir()
	loud := tiny[:len(tiny)-1] // without -q: the messages are checked
	if tiny[len(tiny)-1] != "-q" {
		t.Fatalf("tiny %v does not end in -q", tiny)
	}
	common := append([]string{"--train", tr, "--valid", va, "--steps", "60", "--eval-every", "2", "--keep-best", "--patience", "2",
		"--best-metric", "mrr:epfo"}, loud...)
	straight := filepath.Join(dir, "a.arrow")
	if err := runApp(append(common, "--checkpoint", straight, "-q")...); err != nil {
		t.Fatal(err)
	}
	meta, _, err := artifact.ReadTrainLog(filepath.Join(dir, "a-log.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	var stop struct {
		Step     int    `json:"step"`
		Patience int    `json:"patience"`
		Metric   string `json:"metric"`
		BestStep int    `json:"best_step"`
	}
	if err := json.Unmarshal([]byte(meta.EarlyStop), &stop); err != nil || stop.Patience != 2 || stop.Metric != "mrr:epfo" || stop.Step >= 59 {
		t.Fatalf("the straight run's log records no early stop: %q (%v)", meta.EarlyStop, err)
	}
	ck, err := artifact.ReadCheckpointMeta(straight)
	if err != nil || ck.Step != int64(stop.Step+1) {
		t.Fatalf("the checkpoint holds %d steps (%v), want %d: the run stops after the validation of step %d", ck.Step, err, stop.Step+1, stop.Step)
	}
	best, err := artifact.ReadCheckpointMeta(filepath.Join(dir, "a.best.arrow"))
	if err != nil || best.Step != int64(stop.BestStep+1) {
		t.Fatalf("the best checkpoint holds %d steps (%v), want %d", best.Step, err, stop.BestStep+1)
	}

	b, partial := filepath.Join(dir, "b.arrow"), filepath.Join(dir, "b.partial.arrow")
	args := append(common, "--checkpoint", b, "--partial", partial, "--auto-resume", "--checkpoint-every", "1", "--workers", "1")
	slow := append(args[:len(args):len(args)], "--test-step-sleep", "40ms")
	run := outfiletest.Start(t, slow)
	waitCheckpoint(t, partial, 3)
	run.Process.Signal(syscall.SIGTERM)
	run.Wait().Expect(t, 1, "train: interrupted: "+partial+" holds", "--auto-resume")
	cut, err := artifact.ReadCheckpointMeta(partial)
	if err != nil || cut.Step >= int64(stop.Step) {
		t.Fatalf("interrupted at step %d (%v): too late to test a resume (the run stops after %d)", cut.Step, err, stop.Step)
	}
	if _, err := os.Stat(b); !os.IsNotExist(err) {
		t.Fatalf("--checkpoint %s exists after an interruption (%v): only the finished run may write it", b, err)
	}
	r := outfiletest.Run(t, 2*time.Minute, args...)
	r.Expect(t, 0, "resuming "+partial+": it holds "+strconv.FormatInt(cut.Step, 10)+" of 60 steps of this run",
		"stopped early after step "+strconv.Itoa(stop.Step)+": mrr:epfo has not improved for 2 validations",
		"kept in "+filepath.Join(dir, "b.best.arrow"))
	if strings.Contains(r.Stderr, "starting a new run") {
		t.Fatalf("the second run started over:\n%s", r.Stderr)
	}
	artifacttest.SameTensors(t, straight, b)
	artifacttest.SameTensors(t, filepath.Join(dir, "a.best.arrow"), filepath.Join(dir, "b.best.arrow"))
	if _, err := os.Stat(partial); !os.IsNotExist(err) {
		t.Fatalf("--partial %s is left after the run finished (%v)", partial, err)
	}
	again, _, err := artifact.ReadTrainLog(filepath.Join(dir, "b-log.arrow"))
	if err != nil || again.EarlyStop != meta.EarlyStop || again.Best != meta.Best {
		t.Fatalf("the resumed run's log: best %s, early_stop %s (%v); straight: %s, %s", again.Best, again.EarlyStop, err, meta.Best, meta.EarlyStop)
	}
	outfiletest.NoTemp(t, dir)
}
