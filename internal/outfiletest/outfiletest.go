// Package outfiletest is what the end-to-end tests of package outfile's promises in
// cmd/*/outputs_test.go share: it runs a stage's real main() in a child process (the
// test binary itself, started again), so that the exit status and stderr are the
// binary's, and it snapshots files to assert that nothing an input or a pre-existing
// file held changed.
package outfiletest

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocone/rocone/internal/traintest"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/pipeline"
	"github.com/rocone/rocone/pkg/train"
)

const mainEnv = "ROCONE_OUTFILETEST_MAIN"

// Hook runs main, and exits, when this test binary was started by Command to stand for
// the command. A command's test file calls it from an init function:
//
//	func init() { outfiletest.Hook(main) }
//
// In an ordinary test run it does nothing.
func Hook(main func()) {
	if os.Getenv(mainEnv) == "" {
		return
	}
	main()
	os.Exit(0)
}

// Command is the command with args, run by the test binary's Hook; env adds variables.
func Command(args []string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), mainEnv+"=1"), env...)
	return cmd
}

// Result is how a run ended.
type Result struct {
	Code           int
	Stdout, Stderr string
	Elapsed        time.Duration
}

// Run runs the command to its end, at most timeout (then it is killed and the test fails).
func Run(t *testing.T, timeout time.Duration, args ...string) Result {
	t.Helper()
	cmd := Command(args)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(timeout):
			cmd.Process.Kill()
		}
	}()
	cmd.Wait()
	close(done)
	r := Result{Code: cmd.ProcessState.ExitCode(), Stdout: stdout.String(), Stderr: stderr.String(), Elapsed: time.Since(start)}
	if r.Elapsed >= timeout {
		t.Fatalf("%v: still running after %v; killed\n%s", args, timeout, r.Stderr)
	}
	return r
}

// RunRedirected runs the command to its end as Run does, with its standard output
// redirected by bash: redirect is what follows the command, such as ">> FILE",
// "1<> FILE", "> /dev/full", ">&-" (closed) or "| cat" (a pipe; the exit status is the
// command's, by pipefail). Its stdout is not captured.
func RunRedirected(t *testing.T, timeout time.Duration, redirect string, args ...string) Result {
	t.Helper()
	cmd := Command(append([]string{"-c", `set -o pipefail; "$0" "$@" ` + redirect, os.Args[0]}, args...))
	cmd.Path, cmd.Args[0] = "/bin/bash", "bash"
	cmd.Err = nil
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(timeout, func() { cmd.Process.Kill() })
	cmd.Wait()
	timer.Stop()
	r := Result{Code: cmd.ProcessState.ExitCode(), Stderr: stderr.String(), Elapsed: time.Since(start)}
	if r.Elapsed >= timeout {
		t.Fatalf("%v %s: still running after %v; killed\n%s", args, redirect, timeout, r.Stderr)
	}
	return r
}

// Expect checks a run's exit status and that its stderr holds every one of want.
func (r Result) Expect(t *testing.T, code int, want ...string) {
	t.Helper()
	if r.Code != code {
		t.Errorf("exit status %d, want %d; stderr:\n%s", r.Code, code, r.Stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.Stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.Stderr)
		}
	}
}

// Snapshot is what a set of paths held: for a folder, every entry under it.
type Snapshot map[string]string

// Take snapshots paths (files, links, folders, devices, pipes).
func Take(t *testing.T, paths ...string) Snapshot {
	t.Helper()
	s := Snapshot{}
	for _, root := range paths {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			v := fi.Mode().Type().String()
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				l, _ := os.Readlink(p)
				v += " -> " + l
			case fi.Mode().IsRegular():
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				v += " " + string(b)
			}
			s[p] = v
			return nil
		})
	}
	return s
}

// Unchanged asserts that the snapshotted paths hold what they held, and that nothing
// new appeared under a snapshotted folder except the names in except (outputs).
func (s Snapshot) Unchanged(t *testing.T, except ...string) {
	t.Helper()
	var roots []string
	for p := range s {
		roots = append(roots, p)
	}
	now := Take(t, roots...)
	for p, v := range s {
		if now[p] != v {
			t.Errorf("%s changed (%.60q, was %.60q)", p, now[p], v)
		}
	}
next:
	for p := range now {
		if _, ok := s[p]; ok {
			continue
		}
		for _, e := range except {
			if p == e {
				continue next
			}
		}
		t.Errorf("%s appeared", p)
	}
}

// NoTemp asserts that no temporary output file (.NAME.tmp-N) is left in dir.
func NoTemp(t *testing.T, dir string) {
	t.Helper()
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", filepath.Join(dir, e.Name()))
		}
	}
}

// Fixtures are small real artifacts of the tiny KG.
type Fixtures struct {
	Dir        string // where they are
	Data       string // testdata/tiny
	Train      string // train queries
	Test       string // test queries
	Checkpoint string // a model trained for 2 steps on Train
	TrainLog   string // its train log
	Ranks      string // its ranks of Test
}

// Make makes the fixtures in a new folder of the test's (milliseconds).
func Make(t *testing.T) Fixtures {
	t.Helper()
	dir := t.TempDir()
	f := Fixtures{Dir: dir, Data: traintest.Dir()}
	f.Train = traintest.Generate(t, dir, "train.arrow", "train", nil, 1)
	f.Test = traintest.Generate(t, dir, "test.arrow", "test", nil, 2)
	f.Checkpoint = filepath.Join(dir, "model.arrow")
	f.TrainLog = filepath.Join(dir, "model-log.arrow")
	cfg := train.Default()
	cfg.Dim, cfg.Batch, cfg.Negatives, cfg.Steps, cfg.EvalEvery, cfg.CheckpointEvery = 8, 16, 4, 2, 0, 0
	if _, err := train.Run(context.Background(), cfg, train.Options{Train: f.Train, Checkpoint: f.Checkpoint, Log: f.TrainLog, Workers: 1}); err != nil {
		t.Fatalf("training the fixture: %v", err)
	}
	f.Ranks = filepath.Join(dir, "ranks.arrow")
	if err := pipeline.Rank(pipeline.RankConfig{Checkpoint: f.Checkpoint, Queries: f.Test, Output: f.Ranks, Kernels: compute.Reference[float32]{}, Workers: 1}); err != nil {
		t.Fatalf("ranking the fixture: %v", err)
	}
	return f
}

// Started is a command started with Start: the child process and its stderr so far.
type Started struct {
	*exec.Cmd
	Stderr *Buffer
}

// Start starts the command with args (Command; env adds variables), its stderr collected,
// for a test that acts on it while it runs (a signal, a second run).
func Start(t *testing.T, args []string, env ...string) Started {
	t.Helper()
	s := Started{Cmd: Command(args, env...), Stderr: &Buffer{}}
	s.Cmd.Stderr = s.Stderr
	if err := s.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// Wait waits for the command to end and returns its exit status and stderr.
func (s Started) Wait() Result {
	s.Cmd.Wait()
	return Result{Code: s.Cmd.ProcessState.ExitCode(), Stderr: s.Stderr.String()}
}

// Buffer collects a child's output; the test may read it while the child writes.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// WaitFor waits until b holds s, or fails the test after timeout.
func (b *Buffer) WaitFor(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !strings.Contains(b.String(), s); {
		if time.Now().After(deadline) {
			t.Fatalf("no %q after %v:\n%s", s, timeout, b.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ReadOnly returns a folder this process cannot create files in: a chmod 0555 folder, or,
// for root, whom permissions do not stop, /sys, which takes no new files. It skips the
// test when neither holds (root with a writable /sys).
func ReadOnly(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ro")
	os.Mkdir(dir, 0o555)
	if f, err := os.CreateTemp(dir, "probe"); err != nil {
		return dir
	} else {
		f.Close()
		os.Remove(f.Name())
	}
	if f, err := os.CreateTemp("/sys", "probe"); err == nil {
		f.Close()
		os.Remove(f.Name())
		t.Skip("root with a writable /sys: no read-only folder to test with")
	}
	return "/sys"
}

// Redirect is one run of a stage with its standard output redirected (RunRedirected).
type Redirect struct {
	Name     string
	Args     []string
	Redirect string
	Code     int    // the exit status wanted
	Want     string // what stderr must hold ("" for anything)
}

// RunRedirects runs each case as a subtest and checks its exit status, its stderr and that
// nothing under dir changed, but for the paths in except (what a case may write).
func RunRedirects(t *testing.T, dir string, cases []Redirect, except ...string) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			before := Take(t, dir)
			RunRedirected(t, time.Minute, c.Redirect, c.Args...).Expect(t, c.Code, c.Want)
			before.Unchanged(t, except...)
		})
	}
}

// R is a Redirect case.
func R(name string, args []string, redirect string, code int, want string) Redirect {
	return Redirect{Name: name, Args: args, Redirect: redirect, Code: code, Want: want}
}

// StderrClosedEarly runs a stage whose standard error is a pipe nobody reads any more
// (its read end closed before the start), as when progress is piped to `head -1` that has
// exited: the stage must still finish with exit 0 and commit out, leaving no temporary or
// lock file in out's folder (a SIGPIPE death would leave both and lose the output). The
// stage must write to stderr at least once (its progress or summary), or the case proves
// nothing.
func StderrClosedEarly(t *testing.T, out string, args ...string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	cmd := Command(args)
	cmd.Stderr = w
	err = cmd.Run()
	w.Close()
	if err != nil {
		t.Fatalf("with stderr closed early: %v, want exit 0", err)
	}
	if fi, err := os.Stat(out); err != nil || fi.Size() == 0 {
		t.Fatalf("%s not written: %v", out, err)
	}
	NoTemp(t, filepath.Dir(out))
	if _, err := os.Stat(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".lock")); !os.IsNotExist(err) {
		t.Errorf("the lock file of %s was left: %v", out, err)
	}
}
