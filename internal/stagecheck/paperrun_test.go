package stagecheck

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"
)

// trialSettings make scripts/paper-run.sh's run a trial on the CPU: few queries, d=8.
var trialSettings = []string{"DEVICE=cpu", "SAMPLE=--types 1p,2p,2i --count 1p=300,2p=150,2i=150",
	"EXTRA=--dim 8 --batch 32 --negatives 8 --workers 2"}

// entryRun is a results entry's run.json, the fields these tests check.
type entryRun struct {
	Dataset, Model, Device string
	Seed, Steps            int
	WallTimeS              float64 `json:"wall_time_s"`
	Commands               []string
}

// readEntryRun reads the run.json of the results entry in folder entry.
func readEntryRun(t *testing.T, entry string) entryRun {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(entry, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r entryRun
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Join(entry, "run.json"), err, b)
	}
	return r
}

// TestPaperRun runs scripts/paper-run.sh, which makes a results entry in a lent GPU
// session, on the CPU with a trial's settings (few queries, d=8): a call cut by its
// budget exits 0 and says the checkpoint is saved; a call that finishes training ranks
// the test queries and writes the entry (run.json, metrics.arrow, train-log.arrow),
// which `metrics results` (the script's last command) accepts; a call after that does
// nothing.
func TestPaperRun(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	root, bin := stagetest.RepoRoot(t), binaries(t)
	dir := t.TempDir()
	script := func(work, entry, steps, budget string) (string, error) {
		cmd := exec.Command(filepath.Join(root, "scripts", "paper-run.sh"), "fb15k-237", "rocone", "0", work, entry)
		cmd.Env = append(append(os.Environ(), trialSettings...), "BIN="+bin, "STEPS="+steps, "BUDGET="+budget)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// Cut by the budget: 10^6 steps in 2 seconds.
	out, err := script(filepath.Join(dir, "cut"), filepath.Join(dir, "results", "cut"), "1000000", "2")
	if err != nil || !strings.Contains(out, "the budget of 2s is spent") {
		t.Fatalf("a call cut by its budget: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "results", "cut")); !os.IsNotExist(err) {
		t.Errorf("a cut call wrote the entry: %v", err)
	}

	work, entry := filepath.Join(dir, "work"), filepath.Join(dir, "results", "fb15k-237", "rocone", "seed0-cpu")
	out, err = script(work, entry, "200", "600")
	if err != nil || !strings.Contains(out, "paper-run: wrote "+entry) {
		t.Fatalf("a finishing call: %v\n%s", err, out)
	}
	for _, f := range []string{"run.json", "metrics.arrow", "train-log.arrow"} {
		if _, err := os.Stat(filepath.Join(entry, f)); err != nil {
			t.Error(err)
		}
	}
	run := readEntryRun(t, entry)
	if run.Dataset != "fb15k-237" || run.Model != "rocone" || run.Steps != 200 || len(run.Commands) != 5 || run.WallTimeS <= 0 ||
		!strings.HasPrefix(run.Device, "CPU") || !strings.Contains(run.Commands[2], "--steps 200") {
		t.Errorf("run.json: %+v", run)
	}
	out, err = script(work, entry, "200", "600")
	if err != nil || !strings.Contains(out, "is complete") {
		t.Errorf("a call after the entry: %v\n%s", err, out)
	}
}

// TestDeviceStepTrial runs the trial part of scripts/cuda/device-step.sh (DEADLINE) alone
// on the CPU, with a trial's settings: the steps are the whole thousands that fit the
// time left at the slower of bench.sh's two default FB15k-237 rocone rates (a revert
// row's does not count), the entry is written under RESULTS/trial with that many steps,
// summary.md quotes its row, and the work folder is gone; with too little time left, or a
// DEADLINE, TRIAL_OVERHEAD, TRIAL_MS, TRIAL_STEPS or TRIAL_SEED that is not a number of the
// kind it needs, or TRIAL_STEPS that do not fit, the trial says it is skipped and why, and
// writes nothing. TRIAL_SEED and TRIAL_STEPS, where the steps fit, make the entry of that
// seed and length, and TRIAL_DATASET=nell-995 NELL-995's at its own rate.
func TestDeviceStepTrial(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	root, bin := stagetest.RepoRoot(t), binaries(t)
	run := func(deadline string, env ...string) (results, work, out string) {
		dir := t.TempDir()
		results, work = filepath.Join(dir, "results"), filepath.Join(dir, "work")
		// bench.sh's rate lines, as an earlier run of the script in RESULTS left them: the
		// slower default row says 1 s a step; with no overhead, 2,600 s less the time
		// already spent leave between 2,060 and 3,090 steps' time with the 3 % margin, so
		// 2,000 steps (5,000 at the faster row's 0.5 s, none at the revert row's 3 s).
		rates := "fb15k-237-rocone-d1600             500.0 ms/step  (  2.0 steps/s, steps 20-149)  300k steps: 41.67 h\n" +
			"fb15k-237-rocone-d1600-revert-etab 3000.0 ms/step  (  0.3 steps/s, steps 20-149)  300k steps: 250.00 h\n" +
			"fb15k-237-rocone-d1600-again       1000.0 ms/step  (  1.0 steps/s, steps 20-149)  300k steps: 83.33 h\n" +
			"nell995-rocone-d800                 700.0 ms/step  (  1.4 steps/s, steps 20-149)  300k steps: 58.33 h\n"
		if err := os.MkdirAll(filepath.Join(results, "bench"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(results, "bench", "rates.txt"), []byte(rates), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(root, "scripts", "cuda", "device-step.sh"), bin)
		cmd.Env = append(append(os.Environ(), trialSettings...), "RESULTS="+results, "TRIAL_WORK="+work,
			"SKIP=tests bench side kernels profile", "DEADLINE="+deadline, "TRIAL_OVERHEAD=0")
		cmd.Env = append(cmd.Env, env...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("device-step.sh: %v\n%s", err, b)
		}
		return results, work, string(b)
	}

	results, work, out := run("2600")
	entry := filepath.Join(results, "trial", "fb15k-237", "rocone", "seed0-2k-steps")
	if !strings.Contains(out, "trial: 2000 steps at 1000.0 ms/step") || !strings.Contains(out, "paper-run: wrote "+entry) ||
		!strings.Contains(out, "paper-run: exit 0") {
		t.Fatalf("the trial did not train 2,000 steps into %s:\n%s", entry, out)
	}
	if r := readEntryRun(t, entry); r.Dataset != "fb15k-237" || r.Seed != 0 || r.Steps != 2000 {
		t.Errorf("run.json: %+v; want fb15k-237, seed 0, 2000 steps", r)
	}
	if _, err := os.Stat(work); !os.IsNotExist(err) {
		t.Errorf("the work folder is left behind: %v", err)
	}
	summary, err := os.ReadFile(filepath.Join(results, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"paper-run: wrote " + entry, "| rocone ", "| `" + entry + "` | rocone | 0 | 2000 |"} {
		if !strings.Contains(string(summary), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, summary)
		}
	}

	// A given seed and step count (TRIAL_SEED, TRIAL_STEPS: a second seed of an earlier
	// session's trial), where they fit.
	results, _, out = run("2600", "TRIAL_SEED=1", "TRIAL_STEPS=2000")
	entry = filepath.Join(results, "trial", "fb15k-237", "rocone", "seed1-2k-steps")
	if !strings.Contains(out, "trial: 2000 steps at 1000.0 ms/step") || !strings.Contains(out, "paper-run: wrote "+entry) {
		t.Fatalf("TRIAL_SEED=1 TRIAL_STEPS=2000: no entry %s:\n%s", entry, out)
	}
	if r := readEntryRun(t, entry); r.Seed != 1 || r.Steps != 2000 {
		t.Errorf("run.json: %+v; want seed 1, 2000 steps", r)
	}

	// NELL-995 (TRIAL_DATASET), at its own row's rate: 2,600 s less the time spent leave
	// between 2,940 and 3,610 steps' time at 0.7 s and the 3 % margin, so 3,000 steps.
	results, _, out = run("2600", "TRIAL_DATASET=nell-995", "TRIAL_STEPS=3000")
	entry = filepath.Join(results, "trial", "nell-995", "rocone", "seed0-3k-steps")
	if !strings.Contains(out, "trial: 3000 steps at 700.0 ms/step") || !strings.Contains(out, "paper-run: wrote "+entry) {
		t.Fatalf("TRIAL_DATASET=nell-995: no entry %s:\n%s", entry, out)
	}
	if r := readEntryRun(t, entry); r.Dataset != "nell-995" || r.Steps != 3000 {
		t.Errorf("run.json: %+v; want nell-995, 3000 steps", r)
	}

	// Skipped, saying why, and writing nothing: too little time, and bad input.
	for _, c := range []struct {
		deadline string
		env      []string
		why      string
	}{
		{"60", nil, "is under 2,000 steps"},
		{"soon", nil, "DEADLINE=soon and TRIAL_OVERHEAD=0 must be whole seconds"},
		{"2600", []string{"TRIAL_OVERHEAD=-5"}, "must be whole seconds"},
		{"2600", []string{"TRIAL_MS=0"}, "no step time: 0; set TRIAL_MS"},
		{"2600", []string{"TRIAL_MS=fast"}, "no step time: fast; set TRIAL_MS"},
		{"2600", []string{"TRIAL_STEPS=5000"}, "TRIAL_STEPS=5000 do not fit"},
		{"2600", []string{"TRIAL_STEPS=1500"}, "TRIAL_STEPS=1500 must be whole thousands"},
		{"2600", []string{"TRIAL_STEPS=1000"}, "TRIAL_STEPS=1000 must be whole thousands, 2000 or more"},
		{"2600", []string{"TRIAL_SEED=one"}, "TRIAL_SEED=one must be a whole number"},
		{"2600", []string{"TRIAL_DATASET=wn18rr"}, "TRIAL_DATASET=wn18rr: want fb15k-237 or nell-995"},
	} {
		results, _, out := run(c.deadline, c.env...)
		if !strings.Contains(out, "trial: skipped") || !strings.Contains(out, c.why) {
			t.Errorf("DEADLINE=%s %v: the trial was not skipped with %q:\n%s", c.deadline, c.env, c.why, out)
		}
		if _, err := os.Stat(filepath.Join(results, "trial")); !os.IsNotExist(err) {
			t.Errorf("DEADLINE=%s %v: a skipped trial wrote %s: %v", c.deadline, c.env, filepath.Join(results, "trial"), err)
		}
	}
}
