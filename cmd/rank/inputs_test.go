package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocone/rocone/pkg/stagetest"

	"github.com/rocone/rocone/pkg/outfile/outfiletest"
)

// TestCorruptInputs runs rank on checkpoints and queries files with one byte changed in
// their footer or body: every run ends with a clean exit (0, when the change hit bytes
// that do not matter, or 1 with a message naming the file), never a panic (exit status 2)
// or a fatal out-of-memory, and changes no file.
func TestCorruptInputs(t *testing.T) {
	f := outfiletest.Make(t)
	for _, in := range []struct{ flag, path string }{{"--checkpoint", f.Checkpoint}, {"--queries", f.Test}} {
		for how, data := range stagetest.Corruptions(t, in.path) {
			t.Run(strings.TrimPrefix(in.flag, "--")+" "+how, func(t *testing.T) {
				dir := t.TempDir()
				bad := filepath.Join(dir, "bad.arrow")
				os.WriteFile(bad, data, 0o644)
				args := []string{"--checkpoint", f.Checkpoint, "--queries", f.Test, "-q", "-o", filepath.Join(dir, "r.arrow")}
				for i := range args {
					if args[i] == in.flag {
						args[i+1] = bad
					}
				}
				before := outfiletest.Take(t, f.Dir, bad)
				r := outfiletest.Run(t, time.Minute, args...)
				if strings.Contains(r.Stderr, "panic") || strings.Contains(r.Stderr, "goroutine ") || strings.Contains(r.Stderr, "out of memory") {
					t.Fatalf("exit %d:\n%s", r.Code, r.Stderr)
				}
				switch r.Code {
				case 0:
				case 1:
					if !strings.Contains(r.Stderr, bad) {
						t.Errorf("the message does not name %s:\n%s", bad, r.Stderr)
					}
					if _, err := os.Stat(filepath.Join(dir, "r.arrow")); err == nil {
						t.Error("an output was left")
					}
				default:
					t.Errorf("exit status %d:\n%s", r.Code, r.Stderr)
				}
				before.Unchanged(t)
			})
		}
	}
}
