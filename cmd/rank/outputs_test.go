package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocone/rocone/internal/outfiletest"
	"github.com/rocone/rocone/pkg/artifact"
)

// The tests below run this test binary as the rank command (outfiletest.Hook), so that
// they see its exit status and stderr.
func init() { outfiletest.Hook(main) }

// TestOutputs: -o over any input (--checkpoint, --queries, --cones, a --data file) is
// refused before any work (exit status 1, both flags and paths named, no file changed);
// /dev/stdout and devices are written in place.
func TestOutputs(t *testing.T) {
	f := outfiletest.Make(t)
	data := filepath.Join(f.Dir, "tiny")
	if err := os.CopyFS(data, os.DirFS(f.Data)); err != nil {
		t.Fatal(err)
	}
	os.Symlink("model.arrow", filepath.Join(f.Dir, "link.arrow"))
	cones := filepath.Join(f.Dir, "cones.arrow")
	os.WriteFile(cones, []byte("cones"), 0o644) // never read: the check comes first
	in := []string{"--checkpoint", f.Checkpoint, "--queries", f.Test, "-q"}
	for _, c := range []struct {
		name  string
		extra []string
		out   string
		code  int
		want  string
	}{
		{"-o is --checkpoint", nil, f.Checkpoint, 1, "rank: -o " + f.Checkpoint + " is the same file as --checkpoint " + f.Checkpoint},
		{"-o is --checkpoint by ./", nil, f.Dir + "/./model.arrow", 1, "rank: -o " + f.Dir + "/./model.arrow is the same file as --checkpoint " + f.Checkpoint},
		{"-o is --checkpoint by a link", nil, filepath.Join(f.Dir, "link.arrow"), 1, "is the same file as --checkpoint " + f.Checkpoint},
		{"-o is --queries", nil, f.Test, 1, "rank: -o " + f.Test + " is the same file as --queries " + f.Test},
		{"-o is --cones", []string{"--cones", cones}, cones, 1, "rank: -o " + cones + " is the same file as --cones " + cones},
		{"-o is a --data file", []string{"--top", "3", "--data", data}, filepath.Join(data, "entities.tsv"), 1,
			"rank: -o " + filepath.Join(data, "entities.tsv") + " is the same file as --data " + filepath.Join(data, "entities.tsv")},
		{"-o /dev/null", nil, "/dev/null", 0, ""},
		{"-o /dev/full", nil, "/dev/full", 1, "rank: /dev/full: no space left on device"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := outfiletest.Take(t, f.Dir)
			outfiletest.Run(t, time.Minute, append(append(in, c.extra...), "-o", c.out)...).Expect(t, c.code, c.want)
			before.Unchanged(t)
		})
	}
	t.Run("-o /dev/stdout", func(t *testing.T) {
		r := outfiletest.Run(t, time.Minute, append(in, "-o", "/dev/stdout")...)
		r.Expect(t, 0)
		p := filepath.Join(t.TempDir(), "r.arrow")
		os.WriteFile(p, []byte(r.Stdout), 0o644)
		_, want, err := artifact.ReadRanks(f.Ranks)
		if err != nil {
			t.Fatal(err)
		}
		if _, got, err := artifact.ReadRanks(p); err != nil || len(got) != len(want) {
			t.Fatalf("read %d ranks from stdout, %v; want %d", len(got), err, len(want))
		}
	})
}

// TestStdoutIsAnOutput: rank -o - over its own inputs by a shell redirection is refused
// before any input is read (issue 21).
func TestStdoutIsAnOutput(t *testing.T) {
	f := outfiletest.Make(t)
	in := []string{"--checkpoint", f.Checkpoint, "--queries", f.Test, "-q", "-o", "-"}
	outfiletest.RunRedirects(t, f.Dir, []outfiletest.Redirect{
		outfiletest.R("1<> --checkpoint", in, "1<> "+f.Checkpoint, 1, "rank: -o - (stdout) is the same file as --checkpoint "+f.Checkpoint),
		outfiletest.R(">> --queries", in, ">> "+f.Test, 1, "rank: -o - (stdout) is the same file as --queries "+f.Test),
		outfiletest.R("--ask's answers >> --checkpoint", []string{"--checkpoint", f.Checkpoint, "--data", f.Data, "--ask", "(0,(0,))", "-q"},
			">> "+f.Checkpoint, 1, "rank: the answers on - (stdout) is the same file as --checkpoint "+f.Checkpoint),
	})
}
