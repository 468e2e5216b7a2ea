package main

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocone/rocone/internal/outfiletest"
	"github.com/rocone/rocone/internal/traintest"
	"github.com/rocone/rocone/pkg/artifact"
)

// The tests below run this test binary as the sample command (outfiletest.Hook), so
// that they see its exit status and stderr.
func init() { outfiletest.Hook(main) }

// copyData copies testdata/tiny into dir/tiny, so that a test can point outputs at it.
func copyData(t *testing.T, dir string) string {
	t.Helper()
	src, dst := traintest.Dir(), filepath.Join(dir, "tiny")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

var small = []string{"--split", "test", "-q", "--types", "1p,2p", "--count", "1p=20,2p=10"}

func generate(data string, extra ...string) []string {
	return append(append([]string{"generate", "--data", data}, small...), extra...)
}

// TestOutputsRefused: outputs that are inputs, folders or unwritable places are refused
// before any work, with exit status 1 and a message naming the flags and paths, and
// nothing changes.
func TestOutputsRefused(t *testing.T) {
	dir := t.TempDir()
	data := copyData(t, dir)
	pickle := filepath.Join(dir, "q.pkl")
	b, err := os.ReadFile(filepath.Join(traintest.Dir(), "..", "tiny-queries.pkl"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(pickle, b, 0o644)
	os.Symlink(filepath.Join(data, "test.tsv"), filepath.Join(dir, "link.tsv"))
	os.WriteFile(filepath.Join(dir, "file"), []byte("a file"), 0o644)
	trainTSV := filepath.Join(data, "train.tsv")
	if _, err := os.Stat(trainTSV); err != nil {
		t.Fatalf("testdata/tiny has no train.tsv: %v", err)
	}
	ro := outfiletest.ReadOnly(t)
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"-o is a --data file by ./", generate(data, "-o", data+"/./train.tsv"), []string{"-o " + data + "/./train.tsv is the same file as --data " + trainTSV}},
		{"-o is a --data file by a link", generate(data, "-o", filepath.Join(dir, "link.tsv")), []string{"link.tsv is the same file as --data " + filepath.Join(data, "test.tsv")}},
		{"-o is --pickle", []string{"import-betae", "--data", data, "--split", "test", "-q", "--pickle", pickle, "-o", pickle}, []string{"-o " + pickle + " is the same file as --pickle " + pickle}},
		{"-o is a folder", generate(data, "-o", data), []string{"-o " + data + ": is a directory"}},
		{"-o under a file", generate(data, "-o", filepath.Join(dir, "file", "q.arrow")), []string{"not a directory"}},
		{"-o in a read-only folder", generate(data, "-o", filepath.Join(ro, "q.arrow")), []string{"-o " + filepath.Join(ro, "q.arrow") + ": cannot create files in " + ro}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := outfiletest.Take(t, dir)
			r := outfiletest.Run(t, time.Minute, c.args...)
			r.Expect(t, 1, c.want...)
			if !strings.HasPrefix(r.Stderr, "sample: ") {
				t.Errorf("stderr %q", r.Stderr)
			}
			before.Unchanged(t)
		})
	}
}

// TestOutputsNotRegular: devices, pipes and descriptors are written in place, never
// replaced, and a device that fails writes fails the run.
func TestOutputsNotRegular(t *testing.T) {
	data := traintest.Dir()
	t.Run("/dev/null", func(t *testing.T) {
		outfiletest.Run(t, time.Minute, generate(data, "-o", "/dev/null")...).Expect(t, 0)
		if fi, err := os.Lstat("/dev/null"); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
			t.Fatalf("/dev/null is no longer a character device: %v", err)
		}
	})
	t.Run("/dev/full", func(t *testing.T) {
		if _, err := os.Stat("/dev/full"); err != nil {
			t.Skip("no /dev/full")
		}
		outfiletest.Run(t, time.Minute, generate(data, "-o", "/dev/full")...).Expect(t, 1, "sample: /dev/full: no space left on device")
	})
	t.Run("/dev/stdout", func(t *testing.T) {
		r := outfiletest.Run(t, time.Minute, generate(data, "-o", "/dev/stdout")...)
		r.Expect(t, 0)
		checkQueries(t, []byte(r.Stdout), 30)
	})
	t.Run("named pipe with a reader", func(t *testing.T) {
		dir := t.TempDir()
		fifo := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		got := make(chan []byte, 1)
		go func() {
			b, _ := os.ReadFile(fifo)
			got <- b
		}()
		outfiletest.Run(t, time.Minute, generate(data, "-o", fifo)...).Expect(t, 0)
		select {
		case b := <-got:
			checkQueries(t, b, 30)
		case <-time.After(time.Minute):
			t.Fatal("the reader is still waiting")
		}
		if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("the pipe was replaced")
		}
	})
	t.Run("process substitution (/dev/fd/N)", func(t *testing.T) {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		cmd := outfiletest.Command(generate(data, "-o", "/dev/fd/3"))
		cmd.ExtraFiles = []*os.File{pw}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		b, _ := io.ReadAll(pr)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		checkQueries(t, b, 30)
	})
	t.Run("symbolic link followed and kept", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "old.arrow"), []byte("old"), 0o644)
		link := filepath.Join(dir, "q.arrow")
		os.Symlink("old.arrow", link)
		outfiletest.Run(t, time.Minute, generate(data, "-o", link)...).Expect(t, 0)
		if l, err := os.Readlink(link); err != nil || l != "old.arrow" {
			t.Errorf("the link is now %q, %v", l, err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "old.arrow"))
		checkQueries(t, b, 30)
		outfiletest.NoTemp(t, dir)
	})
}

// checkQueries checks that b is a queries artifact of n queries.
func checkQueries(t *testing.T, b []byte, n int) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "got.arrow")
	os.WriteFile(p, b, 0o644)
	if _, qs, err := artifact.ReadQueries(p); err != nil || len(qs) != n {
		t.Fatalf("read %d queries, %v; want %d", len(qs), err, n)
	}
}

// TestSignalLeavesNoTemp: SIGTERM (or SIGINT) while the output's temporary file is in
// flight removes it, leaves a previous output as it was, and exits 128+signal with a
// message; stale temporary files of a killed run are removed by the next run.
func TestSignalLeavesNoTemp(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "q.arrow")
			os.WriteFile(out, []byte("a previous run's output"), 0o644)
			before := outfiletest.Take(t, dir)
			// ROCONE_TEST_HOLD_OUTPUTS stops the run for good once its temporary file exists.
			run := outfiletest.Start(t, generate(traintest.Dir(), "-o", out), "ROCONE_TEST_HOLD_OUTPUTS=1")
			run.Stderr.WaitFor(t, "holding", time.Minute)
			if tmps, _ := filepath.Glob(filepath.Join(dir, ".q.arrow.tmp-*")); len(tmps) != 1 {
				t.Fatalf("temporary files in flight: %v", tmps)
			}
			run.Process.Signal(sig)
			r := run.Wait()
			name := map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"}[sig]
			r.Expect(t, 128+int(sig), "sample: stopped by "+name+"; not written: "+out)
			before.Unchanged(t)
		})
	}
	t.Run("stale temporary files", func(t *testing.T) {
		dir := t.TempDir()
		out := filepath.Join(dir, "q.arrow")
		stale := filepath.Join(dir, ".q.arrow.tmp-12345")
		other := filepath.Join(dir, ".other.arrow.tmp-12345")
		for _, p := range []string{stale, other} {
			os.WriteFile(p, []byte("killed"), 0o600)
			old := time.Now().Add(-time.Hour)
			os.Chtimes(p, old, old)
		}
		outfiletest.Run(t, time.Minute, generate(traintest.Dir(), "-o", out)...).Expect(t, 0)
		if _, err := os.Stat(stale); err == nil {
			t.Errorf("%s not removed", stale)
		}
		if _, err := os.Stat(other); err != nil {
			t.Errorf("%s, another output's, removed", other)
		}
		b, _ := os.ReadFile(out)
		checkQueries(t, b, 30)
	})
}

// TestStdoutIsAnOutput: standard output gets the checks of any output (issue 21): a shell
// redirection that makes it one of the inputs is refused before any input is read, and a
// failed or impossible write fails the stage instead of exiting 0 with the output lost.
func TestStdoutIsAnOutput(t *testing.T) {
	dir := t.TempDir()
	data := copyData(t, dir)
	queries := filepath.Join(dir, "q.arrow")
	outfiletest.Run(t, time.Minute, generate(data, "-o", queries)...).Expect(t, 0)
	outfiletest.RunRedirects(t, dir, []outfiletest.Redirect{
		outfiletest.R("generate -o - >> a dataset file", generate(data, "-o", "-"), ">> "+filepath.Join(data, "train.tsv"), 1,
			"-o - (stdout) is the same file as --data "+filepath.Join(data, "train.tsv")),
		outfiletest.R("stats >> its input", []string{"stats", queries}, ">> "+queries, 1, "the stats on - (stdout) is the same file as queries file "+queries),
		outfiletest.R("stats 1<> its input", []string{"stats", queries}, "1<> "+queries, 1, "the stats on - (stdout) is the same file as queries file "+queries),
		outfiletest.R("stats > /dev/full", []string{"stats", queries}, "> /dev/full", 1, "sample: writing standard output: write /dev/stdout: no space left on device"),
		outfiletest.R("stats, stdout closed", []string{"stats", queries}, ">&-", 1, "standard output is closed"),
		outfiletest.R("generate -o -, stdout closed", generate(data, "-o", "-"), ">&-", 1, "-o - (stdout): standard output is closed"),
		outfiletest.R("stats > /dev/null", []string{"stats", queries}, "> /dev/null", 0, ""),
	})
}

// TestStderrClosedEarly: a stage whose stderr reader went away finishes its output.
func TestStderrClosedEarly(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "q.arrow")
	// Without -q: the stage reports on stderr.
	outfiletest.StderrClosedEarly(t, out, "generate", "--data", copyData(t, dir), "--split", "test", "--types", "1p,2p", "--count", "1p=20,2p=10", "-o", out)
	b, _ := os.ReadFile(out)
	checkQueries(t, b, 30)
}

// TestStatsSaysShard: sample stats says when a file is one shard of a sampling run.
func TestStatsSaysShard(t *testing.T) {
	dir := t.TempDir()
	data := copyData(t, dir)
	part, whole := filepath.Join(dir, "part.arrow"), filepath.Join(dir, "whole.arrow")
	outfiletest.Run(t, time.Minute, generate(data, "--shard", "0/2", "-o", part)...).Expect(t, 0)
	outfiletest.Run(t, time.Minute, generate(data, "-o", whole)...).Expect(t, 0)
	if r := outfiletest.Run(t, time.Minute, "stats", part, whole); r.Code != 0 ||
		strings.Count(r.Stdout, "shard 0/2 of a sampling run") != 1 || !strings.Contains(r.Stdout, "join the 2 shards with sample merge") {
		t.Errorf("exit %d; stdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestStatsAllOrNothing: sample stats refuses a file given twice (under two names, or -
// twice), and a run that fails on a later file prints nothing of the earlier ones.
func TestStatsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	data := copyData(t, dir)
	q, cut := filepath.Join(dir, "q.arrow"), filepath.Join(dir, "cut.arrow")
	outfiletest.Run(t, time.Minute, generate(data, "-o", q)...).Expect(t, 0)
	b, err := os.ReadFile(q)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cut, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stats", q, dir + "/./q.arrow"}, "are the same file, given twice"},
		{[]string{"stats", "-", "-"}, "- (stdin) is given twice"},
		{[]string{"stats", q, cut}, cut},
	} {
		r := outfiletest.Run(t, time.Minute, c.args...)
		if r.Code != 1 || r.Stdout != "" || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 1, no stdout, an error containing %q", c.args, r.Code, r.Stdout, r.Stderr, c.want)
		}
	}
}
