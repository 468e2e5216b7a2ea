package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocone/rocone/pkg/outfile/outfiletest"
)

// corruptions returns copies of an artifact with one byte changed, at positions spread
// over its footer (the last 10 bytes, the footer before them, and the index entries
// within it) and over the rest, plus each 4-byte word of the footer's last 64 bytes set to
// a huge length.
func corruptions(t *testing.T, path string) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	footerLen := int(binary.LittleEndian.Uint32(data[len(data)-10:]))
	footer := len(data) - 10 - footerLen
	add := func(i int, how string, edit func(b []byte)) {
		if i < 0 || i+4 > len(data) {
			return
		}
		b := append([]byte(nil), data...)
		edit(b)
		out[how+" at "+strconv.Itoa(i)] = b
	}
	for i := footer; i < len(data); i += max(1, footerLen/24) {
		add(i, "^0xff", func(b []byte) { b[i] ^= 0xff })
	}
	for i := len(data) - 10; i < len(data)-4; i++ {
		add(i, "^0x80", func(b []byte) { b[i] ^= 0x80 })
	}
	for i := len(data) - 64; i < len(data)-10; i += 4 {
		add(i, "=0x7fffff00", func(b []byte) { binary.LittleEndian.PutUint32(b[i:], 0x7fffff00) })
	}
	for i := 8; i < footer; i += max(1, footer/12) {
		add(i, "^0xff", func(b []byte) { b[i] ^= 0xff })
	}
	return out
}

// TestCorruptInputs runs embed on checkpoints and queries files with one byte changed in
// their footer or body: every run ends with a clean exit (0, when the change hit bytes
// that do not matter, or 1 with a message naming the file), never a panic (exit status 2)
// or a fatal out-of-memory, and changes no file.
func TestCorruptInputs(t *testing.T) {
	f := outfiletest.Make(t)
	for _, in := range []struct{ flag, path string }{{"--checkpoint", f.Checkpoint}, {"--queries", f.Test}} {
		for how, data := range corruptions(t, in.path) {
			t.Run(strings.TrimPrefix(in.flag, "--")+" "+how, func(t *testing.T) {
				dir := t.TempDir()
				bad := filepath.Join(dir, "bad.arrow")
				os.WriteFile(bad, data, 0o644)
				args := []string{"--checkpoint", f.Checkpoint, "--queries", f.Test, "-q", "-o", filepath.Join(dir, "c.arrow")}
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
					if _, err := os.Stat(filepath.Join(dir, "c.arrow")); err == nil {
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
