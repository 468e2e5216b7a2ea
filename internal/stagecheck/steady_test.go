package stagecheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"
)

// TestSteadyRate checks scripts/cuda/steady.sh's steady_rate, the rate bench.sh and
// device-step.sh report, on train logs as `metrics curves --csv` writes them: the mean
// step after the warm-up, less the steps at whose end the learning rate drops (there the
// schedule's new Adam, no part of a step, is in the step's time), and an error naming the
// step where the log has a gap.
func TestSteadyRate(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	steady := filepath.Join(stagetest.RepoRoot(t), "scripts", "cuda", "steady.sh")
	// A log of steps 0 … 9, each 10 ms but step 0 (50 ms: start-up) and step 5 (200 ms:
	// the lr drops at its end); validation rows and columns in another order between.
	log := func(skip int) string {
		var b strings.Builder
		b.WriteString("log,step,kind,type,lr,loss,elapsed_s\n")
		elapsed := 0.0
		for s := 0; s < 10; s++ {
			lr, d := "5e-05", 0.010
			switch {
			case s == 0:
				d = 0.050
			case s == 5:
				d = 0.200
			case s > 5:
				lr = "1e-05"
			}
			elapsed += d
			if s != skip {
				fmt.Fprintf(&b, "x.arrow,%d,train,,%s,0.5,%.9f\n", s, lr, elapsed)
			}
			if s == 4 {
				fmt.Fprintf(&b, "x.arrow,%d,valid,1p,%s,,%.9f\n", s, lr, elapsed)
			}
		}
		return b.String()
	}
	rate := func(csv, warm string) (string, error) {
		path := filepath.Join(t.TempDir(), "log.csv")
		if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("bash", "-c", `. "$1" && steady_rate "$2" "$3"`, "bash", steady, path, warm).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	for _, c := range []struct{ warm, want string }{
		// Steps 2 … 9 less step 5 (0.2 s): 7 steps of 10 ms; the last step 9 ends at 0.33 s.
		{"2", "0.010000000 7 1 0.330000000 9 0.200000"},
		// From step 1: the same, 8 steps.
		{"1", "0.010000000 8 1 0.330000000 9 0.200000"},
		// Past the drop: nothing left out.
		{"7", "0.010000000 3 0 0.330000000 9 0.000000"},
	} {
		if got, err := rate(log(-1), c.warm); err != nil || got != c.want {
			t.Errorf("WARM %s: %q, %v; want %q", c.warm, got, err, c.want)
		}
	}
	if got, err := rate(log(7), "2"); err == nil || !strings.Contains(got, "step 6 or 7 missing") {
		t.Errorf("a log without step 7: %q, %v; want an error naming it", got, err)
	}
	if got, err := rate(log(-1), "10"); err == nil || !strings.Contains(got, "no steps after the first 10") {
		t.Errorf("WARM past the log: %q, %v; want an error", got, err)
	}
}
