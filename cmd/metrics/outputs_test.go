package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rocone/rocone/internal/outfiletest"
)

// The tests below run this test binary as the metrics command (outfiletest.Hook), so
// that they see its exit status and stderr.
func init() { outfiletest.Hook(main) }

// TestOutputs: -o, --plot and --curves over an input (a ranks file, the --log) or over
// each other, or a plot in a format not drawn, are refused before any work (exit status
// 1, the flag and path named, no file changed or made, nothing printed); a plot to a
// device is written in place.
func TestOutputs(t *testing.T) {
	f := outfiletest.Make(t)
	os.Symlink("ranks.arrow", filepath.Join(f.Dir, "link.arrow"))
	out, plot := filepath.Join(f.Dir, "m.arrow"), filepath.Join(f.Dir, "mrr.png")
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"-o is a ranks file", []string{"-o", f.Ranks, f.Ranks}, 1, "metrics: -o " + f.Ranks + " is the same file as ranks file " + f.Ranks},
		{"-o is a ranks file by a link", []string{"-o", filepath.Join(f.Dir, "link.arrow"), f.Ranks}, 1, "is the same file as ranks file " + f.Ranks},
		{"--plot is a ranks file by ./", []string{"--plot", f.Dir + "/./ranks.arrow", f.Ranks}, 1, "metrics: --plot " + f.Dir + "/./ranks.arrow is the same file as ranks file " + f.Ranks},
		{"--plot is -o", []string{"-o", out, "--plot", out, f.Ranks}, 1, "metrics: --plot " + out + " is the same file as -o " + out},
		{"--curves is --log", []string{"--log", f.TrainLog, "--curves", f.TrainLog, f.Ranks}, 1, "metrics: --curves " + f.TrainLog + " is the same file as --log " + f.TrainLog},
		{"-o is --log", []string{"-o", f.TrainLog, "--log", f.TrainLog, "--curves", plot, f.Ranks}, 1, "metrics: -o " + f.TrainLog + " is the same file as --log " + f.TrainLog},
		{"--curves is --plot", []string{"--plot", plot, "--log", f.TrainLog, "--curves", plot, f.Ranks}, 1, "metrics: --curves " + plot + " is the same file as --plot " + plot},
		{"--plot .jpg with -o", []string{"-o", out, "--plot", filepath.Join(f.Dir, "mrr.jpg"), f.Ranks}, 1,
			"metrics: --plot " + filepath.Join(f.Dir, "mrr.jpg") + ": unsupported plot format \".jpg\" (want .png or .svg)"},
		{"--curves .gif with -o and --plot", []string{"-o", out, "--plot", plot, "--log", f.TrainLog, "--curves", filepath.Join(f.Dir, "c.gif"), f.Ranks}, 1,
			"metrics: --curves " + filepath.Join(f.Dir, "c.gif") + ": unsupported plot format \".gif\" (want .png or .svg)"},
		{"curves --plot .gif with --csv", []string{"curves", "--csv", filepath.Join(f.Dir, "c.csv"), "--plot", filepath.Join(f.Dir, "c.gif"), f.TrainLog}, 1,
			"metrics: --plot " + filepath.Join(f.Dir, "c.gif") + ": unsupported plot format"},
		{"-o /dev/null", []string{"-o", "/dev/null", f.Ranks}, 0, ""},
		{"-o /dev/full", []string{"-o", "/dev/full", f.Ranks}, 1, "metrics: /dev/full: no space left on device"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := outfiletest.Take(t, f.Dir)
			r := outfiletest.Run(t, time.Minute, c.args...)
			r.Expect(t, c.code, c.want)
			before.Unchanged(t)
			if c.code != 0 && r.Stdout != "" {
				t.Errorf("a failed run printed %d bytes on stdout", len(r.Stdout))
			}
		})
	}
	// A plot's format comes from its name: a named pipe plot.png gets a PNG, in place.
	t.Run("--plot named pipe", func(t *testing.T) {
		fifo := filepath.Join(t.TempDir(), "plot.png")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		got := make(chan []byte, 1)
		go func() {
			b, _ := os.ReadFile(fifo)
			got <- b
		}()
		outfiletest.Run(t, time.Minute, "--plot", fifo, f.Ranks).Expect(t, 0)
		select {
		case b := <-got:
			if !bytes.HasPrefix(b, []byte("\x89PNG")) {
				t.Errorf("the reader got %d bytes, not a PNG", len(b))
			}
		case <-time.After(time.Minute):
			t.Fatal("the reader is still waiting")
		}
		if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("the pipe was replaced")
		}
	})
}

// TestStdoutIsAnOutput: the table and the patterns report on stdout are outputs like -o:
// stdout that is an input (>>, 1<>) or another output (-o /dev/stdout, /dev/fd/1) is
// refused before any input is read, and a failed or impossible write fails the stage.
func TestStdoutIsAnOutput(t *testing.T) {
	f := outfiletest.Make(t)
	patterns := []string{"patterns", "--checkpoint", f.Checkpoint, "--data", f.Data}
	results := filepath.Join(f.Dir, "results")
	if err := os.CopyFS(results, os.DirFS(filepath.Join("..", "..", "results"))); err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(results, "fb15k-237", "rocone", "seed0-20k-steps-h200")
	outfiletest.RunRedirects(t, f.Dir, []outfiletest.Redirect{
		outfiletest.R("table >> a ranks file", []string{f.Ranks}, ">> "+f.Ranks, 1, "the table on - (stdout) is the same file as ranks file "+f.Ranks),
		outfiletest.R("table 1<> the log", []string{"--log", f.TrainLog, "--plot", filepath.Join(f.Dir, "p.svg"), f.Ranks}, "1<> "+f.TrainLog, 1,
			"the table on - (stdout) is the same file as --log "+f.TrainLog),
		outfiletest.R("-o /dev/stdout into a file", []string{"-o", "/dev/stdout", f.Ranks}, "> "+filepath.Join(f.Dir, "t.txt"), 1,
			"-o /dev/stdout is the same file as the table on - (stdout)"),
		outfiletest.R("-o /dev/fd/1 into a pipe", []string{"-o", "/dev/fd/1", f.Ranks}, "| cat", 1, "-o /dev/fd/1 is the same file as the table on - (stdout)"),
		outfiletest.R("table > /dev/full", []string{"--resamples", "0", f.Ranks}, "> /dev/full", 1, "metrics: write /dev/stdout: no space left on device"),
		outfiletest.R("table, stdout closed", []string{f.Ranks}, ">&-", 1, "standard output is closed"),
		outfiletest.R("patterns >> the checkpoint", patterns, ">> "+f.Checkpoint, 1, "the report on - (stdout) is the same file as --checkpoint "+f.Checkpoint),
		outfiletest.R("patterns > /dev/full", patterns, "> /dev/full", 1, "metrics: writing standard output"),
		outfiletest.R("results >> an entry's metrics", []string{"results", results}, ">> "+filepath.Join(entry, "metrics.arrow"), 1,
			"the report on - (stdout) is the same file as results entry file "+filepath.Join(entry, "metrics.arrow")),
		outfiletest.R("results >> an entry's run.json", []string{"results", results}, ">> "+filepath.Join(entry, "run.json"), 1,
			"the report on - (stdout) is the same file as results entry file "+filepath.Join(entry, "run.json")),
		outfiletest.R("table and -o to /dev/null", []string{"--resamples", "0", "-o", "/dev/null", f.Ranks}, "> /dev/null", 0, ""),
	}, filepath.Join(f.Dir, "t.txt"))
}
