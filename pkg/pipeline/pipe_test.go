package pipeline

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagebuild"
)

// TestPipeExample builds the stage binaries and runs pipelines/pipe.sh on the tiny KG:
// every stage reads and writes IPC streams through pipes.
func TestPipeExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	bin := t.TempDir()
	build := stagebuild.Command(bin+"/", "../../cmd/sample", "../../cmd/train", "../../cmd/embed", "../../cmd/rank", "../../cmd/metrics")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := t.TempDir()
	cmd := exec.Command("bash", "../../pipelines/pipe.sh")
	cmd.Env = append(os.Environ(), "BIN="+bin, "DATA=../../testdata/tiny", "OUT="+out)
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pipe.sh: %v\n%s", err, got)
	}
	for _, want := range []string{"tiny test, rocone, 1 seed(s): -", "| rocone", "2in"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "test-queries.arrow")); err != nil {
		t.Error(err)
	}
}
