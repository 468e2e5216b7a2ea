package kg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInputMessages covers the dataset-reading cases where the old message was wrong or
// unclear: a byte-order mark, auto-detection, a gzip stream cut inside a line, a corrupt
// gzip stream, --data naming a file.
func TestInputMessages(t *testing.T) {
	ids := "0\t0\t1\n1\t1\t0\n1\t2\t2\n2\t3\t1\n"
	long := strings.Repeat("0\t0\t1\n1\t1\t0\n", 3000)
	full := gz(long)
	// Cut the stream so that the text ends inside a line ("0\t0" or "0\t").
	cut := full[:len(full)*3/4]
	corrupt := []byte(full)
	corrupt[len(corrupt)/2] ^= 0xff
	tests := []struct {
		name     string
		files    map[string]string
		format   Format
		wantErr  []string // substrings of the error; nil: no error
		wantNote string   // substring of FormatNote
	}{
		{"BOM on an ids file", map[string]string{"train.tsv": "\ufeff" + ids}, FormatAuto, nil, "train.tsv: format ids (line 1 is three integers"},
		{"BOM on a names file", map[string]string{"train.tsv": "\ufeffa\tr\tb\n", "valid.tsv": "", "test.tsv": ""}, FormatAuto, nil, "format names (line 1 is not three integers"},
		{"ids given", nil, FormatIDs, nil, ""},
		{"truncated gzip", map[string]string{"train.tsv": "<missing>", "train.tsv.gz": cut}, FormatAuto, []string{"train.tsv.gz: after line", "gzip stream truncated"}, ""},
		{"truncated gzip in valid", map[string]string{"valid.tsv": "<missing>", "valid.tsv.gz": cut}, FormatAuto, []string{"valid.tsv.gz: after line", "gzip stream truncated"}, ""},
		{"corrupt gzip", map[string]string{"train.tsv": "<missing>", "train.tsv.gz": string(corrupt)}, FormatAuto, []string{"train.tsv.gz", "gzip stream corrupt"}, ""},
		{"wrong field count", map[string]string{"test.tsv": "2\t0\t0\n0 1\n"}, FormatAuto, []string{"test.tsv:2: want 3 tab-separated fields, got 2"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeDataset(t, tc.files)
			d, err := Load(dir, tc.format)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if tc.wantNote == "" && d.FormatNote != "" || !strings.Contains(d.FormatNote, tc.wantNote) {
					t.Fatalf("format note %q, want %q", d.FormatNote, tc.wantNote)
				}
				if tc.name == "BOM on an ids file" && (d.NumEntities != 3 || d.EntityNames != nil) {
					t.Fatalf("a BOM changed the reading: %d entities, names %v", d.NumEntities, d.EntityNames)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.wantErr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q, want %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "fields") && strings.Contains(tc.name, "gzip") {
				t.Fatalf("a gzip error reported as a field count: %v", err)
			}
		})
	}
}

func TestLoadNotAFolder(t *testing.T) {
	dir := writeDataset(t, nil)
	file := filepath.Join(dir, "train.tsv")
	_, err := Load(file, FormatAuto)
	if err == nil || !strings.Contains(err.Error(), file+": not a folder") {
		t.Fatalf("got %v", err)
	}
	_, err = Load(filepath.Join(dir, "nope"), FormatAuto)
	if err == nil || !os.IsNotExist(err) {
		t.Fatalf("missing folder: %v", err)
	}
}
