package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rocone/rocone/internal/outfiletest"
)

// The tests below run this test binary as the embed command (outfiletest.Hook), so that
// they see its exit status and stderr.
func init() { outfiletest.Hook(main) }

// TestOutputs: -o over an input is refused before any work (exit status 1, both flags
// and paths named, no file changed); devices are written in place; a signal leaves no
// temporary file.
func TestOutputs(t *testing.T) {
	f := outfiletest.Make(t)
	os.Symlink(f.Test, filepath.Join(f.Dir, "link.arrow"))
	in := []string{"--checkpoint", f.Checkpoint, "--queries", f.Test, "-q"}
	for _, c := range []struct {
		name string
		out  string
		code int
		want string
	}{
		{"-o is --queries by ./", f.Dir + "/./test.arrow", 1, "embed: -o " + f.Dir + "/./test.arrow is the same file as --queries " + f.Test},
		{"-o is --queries by a link", filepath.Join(f.Dir, "link.arrow"), 1, "embed: -o " + filepath.Join(f.Dir, "link.arrow") + " is the same file as --queries " + f.Test},
		{"-o is --checkpoint", f.Checkpoint, 1, "embed: -o " + f.Checkpoint + " is the same file as --checkpoint " + f.Checkpoint},
		{"-o is a folder", f.Dir, 1, "embed: -o " + f.Dir + ": is a directory"},
		{"-o /dev/null", "/dev/null", 0, ""},
		{"-o /dev/full", "/dev/full", 1, "embed: /dev/full: no space left on device"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := outfiletest.Take(t, f.Dir)
			outfiletest.Run(t, time.Minute, append(in, "-o", c.out)...).Expect(t, c.code, c.want)
			before.Unchanged(t)
		})
	}
	if fi, err := os.Lstat("/dev/null"); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a character device: %v", err)
	}
	for _, sig := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGTERM, "SIGTERM", 143}, {syscall.SIGHUP, "SIGHUP", 129}} {
		t.Run(sig.name, func(t *testing.T) { signalLeavesNothing(t, in, sig.sig, sig.name, sig.code) })
	}
}

// signalLeavesNothing signals a run that has an output in flight: it exits with code,
// names the signal and the output not written, and leaves no temporary file.
func signalLeavesNothing(t *testing.T, in []string, sig syscall.Signal, name string, code int) {
	{
		out := filepath.Join(t.TempDir(), "cones.arrow")
		run := outfiletest.Start(t, append(in, "-o", out), "ROCONE_TEST_HOLD_OUTPUTS=1")
		run.Stderr.WaitFor(t, "holding", time.Minute)
		run.Process.Signal(sig)
		run.Wait().Expect(t, code, "embed: stopped by "+name+"; not written: "+out)
		if es, _ := os.ReadDir(filepath.Dir(out)); len(es) != 0 {
			t.Errorf("left %s", es[0].Name())
		}
	}
}

// TestStdoutIsAnOutput: -o - gets the checks of a path (issue 21): a stdout that a shell
// opened on an input (>>, 1<>) is refused before any input is read; a closed one too.
func TestStdoutIsAnOutput(t *testing.T) {
	f := outfiletest.Make(t)
	in := []string{"--checkpoint", f.Checkpoint, "--queries", f.Test, "-q", "-o", "-"}
	outfiletest.RunRedirects(t, f.Dir, []outfiletest.Redirect{
		outfiletest.R(">> --queries", in, ">> "+f.Test, 1, "embed: -o - (stdout) is the same file as --queries "+f.Test),
		outfiletest.R("1<> --checkpoint", in, "1<> "+f.Checkpoint, 1, "embed: -o - (stdout) is the same file as --checkpoint "+f.Checkpoint),
		outfiletest.R("closed", in, ">&-", 1, "embed: -o - (stdout): standard output is closed"),
		outfiletest.R("a new file", in, "> "+filepath.Join(f.Dir, "cones.arrow"), 0, ""),
	}, filepath.Join(f.Dir, "cones.arrow"))
}
