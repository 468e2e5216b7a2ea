package stagebuild

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandFollowsRace builds a program with a data race through Command and runs it
// with the race detector's settings of make test-race: built from a race test binary it
// must stop with the detector's report and status 66, built from a plain one it must run
// through. Either way a stage built by Command is built as this test binary was.
func TestCommandFollowsRace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "racy")
	if out, err := Command(bin, "./testdata/racy").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "GORACE=halt_on_error=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case Race && errors.As(err, &exit) && exit.ExitCode() == 66 && strings.Contains(string(out), "DATA RACE"):
	case !Race && err == nil && strings.TrimSpace(string(out)) == "true":
	default:
		t.Fatalf("built with -race: %v; the racy program: %v\n%s", Race, err, out)
	}
}
