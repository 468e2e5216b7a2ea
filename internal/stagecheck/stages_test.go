package stagecheck

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
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
		args := []string{"build", "-o", build.dir + string(filepath.Separator)}
		for _, s := range stages {
			args = append(args, "./cmd/"+s)
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = repoRoot(t)
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

// repoRoot is the folder holding go.mod, above the test's working directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
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
