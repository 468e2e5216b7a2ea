package stagecheck

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rocone/rocone/internal/stagebuild"
	"github.com/rocone/rocone/internal/stagetest"
)

// stages are the binaries, each built from cmd/<name>.
var stages = []string{"sample", "train", "embed", "rank", "metrics"}

var build struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

// binaries builds the five stages once per test binary into a temporary folder, which it
// returns (removed by TestMain).
func binaries(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "stagecheck-bin-")
		if build.err != nil {
			return
		}
		var pkgs []string
		for _, s := range stages {
			pkgs = append(pkgs, "./cmd/"+s)
		}
		cmd := stagebuild.Command(build.dir+string(filepath.Separator), pkgs...)
		cmd.Dir = stagetest.RepoRoot(t)
		build.out, build.err = cmd.CombinedOutput()
	})
	if build.err != nil {
		t.Fatalf("go build: %v\n%s", build.err, build.out)
	}
	return build.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// run runs a stage binary in dir and returns its exit status, stdout and stderr.
func run(t *testing.T, dir, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("%s %q: %v", bin, args, err)
	return 0, "", ""
}
