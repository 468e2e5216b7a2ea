package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocone/rocone/internal/outfiletest"
	"github.com/rocone/rocone/pkg/artifact"
)

// copyTiny copies testdata/tiny into a new folder, applying edit to file contents by name.
func copyTiny(t *testing.T, edit func(name string, data []byte) (string, []byte)) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir("../../testdata/tiny")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("../../testdata/tiny", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		name := e.Name()
		if edit != nil {
			name, data = edit(name, data)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runSample runs the sample stage with stderr captured.
func runSample(t *testing.T, args ...string) (stderr string, err error) {
	t.Helper()
	f, ferr := os.CreateTemp(t.TempDir(), "stderr")
	if ferr != nil {
		t.Fatal(ferr)
	}
	old := os.Stderr
	os.Stderr = f
	err = app().Run(append([]string{"sample"}, args...))
	os.Stderr = old
	f.Close()
	b, _ := os.ReadFile(f.Name())
	return string(b), err
}

// snapshot returns the bytes of every file under dir, by path.
func snapshot(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, dir := range dirs {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(p)
				m[p] = string(b)
			}
			return nil
		})
	}
	return m
}

// TestDatasetInputs runs sample on datasets whose reading used to go wrong without a
// word or with an unclear message, checking the exit, the message, that nothing is left
// at the output and that no input changed.
func TestDatasetInputs(t *testing.T) {
	bom := copyTiny(t, func(name string, data []byte) (string, []byte) {
		if name == "train.tsv" {
			data = append([]byte("\ufeff"), data...)
		}
		return name, data
	})
	truncated := copyTiny(t, func(name string, data []byte) (string, []byte) {
		if name == "train.tsv" {
			var b bytes.Buffer
			w := gzip.NewWriter(&b)
			w.Write(data)
			w.Close()
			return "train.tsv.gz", b.Bytes()[:b.Len()*2/3]
		}
		return name, data
	})
	pickles := t.TempDir()
	huge := filepath.Join(pickles, "huge.pkl")
	os.WriteFile(huge, append(append([]byte("\x80\x04\x8d"), binary.LittleEndian.AppendUint64(nil, 1<<40)...), "ab."...), 0o644)
	shape := filepath.Join(pickles, "shape.pkl")
	os.WriteFile(shape, []byte("\x80\x04}(\x8c\x01e\x8c\x01r\x85\x86]u."), 0o644)

	tests := []struct {
		name     string
		args     []string
		wantErr  []string // substrings of the error; nil: success
		wantLog  string   // substring of stderr
		noLog    string   // must not be on stderr
		notInErr string
	}{
		{"BOM on an ids train file", []string{"generate", "--data", bom, "--split", "valid", "--types", "1p", "--count", "1p=5"},
			nil, "train.tsv: format ids (line 1 is three integers", "", ""},
		{"auto format quiet", []string{"generate", "--data", bom, "--split", "valid", "--types", "1p", "--count", "1p=5", "-q"},
			nil, "", "format ids", ""},
		{"--data a file", []string{"generate", "--data", filepath.Join(bom, "train.tsv"), "--split", "valid"},
			[]string{"train.tsv: not a folder"}, "", "", ""},
		{"truncated gzip", []string{"generate", "--data", truncated, "--split", "valid"},
			[]string{"train.tsv.gz", "gzip stream truncated"}, "", "", "fields"},
		{"pickle declaring 2^40 bytes", []string{"import-betae", "--data", bom, "--split", "test", "--pickle", huge},
			[]string{"huge.pkl", "declares 1099511627776 bytes, but only 3 follow"}, "", "", ""},
		{"pickle of the wrong shape", []string{"import-betae", "--data", bom, "--split", "test", "--pickle", shape},
			[]string{"shape.pkl", "want a set of queries, found a list"}, "", "", "0x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, bom, truncated, pickles)
			outDir := t.TempDir()
			out := filepath.Join(outDir, "q.arrow")
			stderr, err := runSample(t, append(tc.args, "-o", out)...)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				meta, _, err := artifact.ReadQueries(out)
				if err != nil || meta.NumEntities != 82 {
					t.Fatalf("read back: %+v, %v (a BOM must not change the ids)", meta, err)
				}
			} else {
				if err == nil {
					t.Fatalf("no error, want %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				if tc.notInErr != "" && strings.Contains(err.Error(), tc.notInErr) {
					t.Errorf("error %q has %q", err, tc.notInErr)
				}
				if entries, _ := os.ReadDir(outDir); len(entries) != 0 {
					t.Errorf("left %v behind", entries[0].Name())
				}
			}
			if tc.wantLog != "" && !strings.Contains(stderr, tc.wantLog) {
				t.Errorf("stderr %q lacks %q", stderr, tc.wantLog)
			}
			if tc.noLog != "" && strings.Contains(stderr, tc.noLog) {
				t.Errorf("stderr %q has %q", stderr, tc.noLog)
			}
			after := snapshot(t, bom, truncated, pickles)
			if len(after) != len(before) {
				t.Fatalf("inputs: %d files before, %d after", len(before), len(after))
			}
			for p, b := range before {
				if after[p] != b {
					t.Errorf("%s changed", p)
				}
			}
		})
	}
}

// TestCorruptQueriesStats runs sample stats on queries files with one byte changed in
// their footer or body: a clean exit (0, or 1 with a message naming the file), never a
// panic or a fatal out-of-memory, and the file unchanged.
func TestCorruptQueriesStats(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "q.arrow")
	if err := app().Run([]string{"sample", "generate", "--data", "../../testdata/tiny", "--split", "valid", "-q",
		"--types", "1p,2p,2in", "--count", "1p=20,2p=20,2in=20", "-o", good}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	footerLen := int(binary.LittleEndian.Uint32(data[len(data)-10:]))
	footer := len(data) - 10 - footerLen
	var cases [][2]int // position, new value of the 4-byte word there or -1 for a flip
	for i := footer; i < len(data); i += max(1, footerLen/24) {
		cases = append(cases, [2]int{i, -1})
	}
	for i := len(data) - 64; i < len(data)-10; i += 4 {
		cases = append(cases, [2]int{i, 0x7fffff00})
	}
	for i := 8; i < footer; i += max(1, footer/12) {
		cases = append(cases, [2]int{i, -1})
	}
	for _, c := range cases {
		b := append([]byte(nil), data...)
		if c[1] < 0 {
			b[c[0]] ^= 0xff
		} else {
			binary.LittleEndian.PutUint32(b[c[0]:], uint32(c[1]))
		}
		bad := filepath.Join(dir, "bad.arrow")
		os.WriteFile(bad, b, 0o644)
		r := outfiletest.Run(t, time.Minute, "stats", bad)
		if strings.Contains(r.Stderr, "panic") || strings.Contains(r.Stderr, "goroutine ") || strings.Contains(r.Stderr, "out of memory") ||
			r.Code > 1 || (r.Code == 1 && !strings.Contains(r.Stderr, bad)) {
			t.Errorf("byte %d (%d): exit %d:\n%s", c[0], c[1], r.Code, r.Stderr)
		}
		if after, _ := os.ReadFile(bad); string(after) != string(b) {
			t.Errorf("byte %d: the input changed", c[0])
		}
	}
}
