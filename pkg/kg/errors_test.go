package kg

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeDataset(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	base := map[string]string{
		"train.tsv": "0\t0\t1\n1\t1\t0\n1\t2\t2\n2\t3\t1\n",
		"valid.tsv": "0\t2\t2\n2\t3\t0\n",
		"test.tsv":  "2\t0\t0\n0\t1\t2\n",
	}
	for k, v := range files {
		base[k] = v
	}
	for name, content := range base {
		if content == "<missing>" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func gz(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.String()
}

func TestLoadErrors(t *testing.T) {
	full := gz(strings.Repeat("0\t0\t1\n1\t1\t0\n", 2000))
	tests := []struct {
		name   string
		files  map[string]string
		format Format
		want   []string // substrings of the error
	}{
		{"wrong field count", map[string]string{"valid.tsv": "0\t2\t2\n2\t3\n"}, FormatAuto, []string{"valid.tsv:2", "want 3 tab-separated fields, got 2"}},
		{"non-integer id", map[string]string{"test.tsv": "2\t0\t0\n0\tx\t2\n"}, FormatIDs, []string{"test.tsv:2", `relation "x" is not a non-negative integer id`}},
		{"negative id", map[string]string{"test.tsv": "2\t0\t-4\n"}, FormatIDs, []string{"test.tsv:1", `tail "-4"`}},
		{"entity out of range", map[string]string{"entities.tsv": "0\ta\n1\tb\n2\tc\n", "test.tsv": "2\t0\t7\n7\t1\t2\n"}, FormatAuto, []string{"test.tsv:1", "entity id out of range [0,3)"}},
		{"relation out of range", map[string]string{"relations.tsv": "0\t+a\n1\t-a\n2\t+b\n3\t-b\n", "test.tsv": "2\t4\t0\n0\t5\t2\n"}, FormatAuto, []string{"test.tsv:1", "relation id 4 out of range [0,4)"}},
		{"missing inverse", map[string]string{"valid.tsv": "0\t2\t2\n"}, FormatAuto, []string{"valid.tsv:1", "no inverse row 2 3 0"}},
		{"missing file", map[string]string{"test.tsv": "<missing>"}, FormatAuto, []string{"no test.tsv[.gz]"}},
		{"truncated gzip", map[string]string{"train.tsv": "", "train.tsv.gz": full[:len(full)/2]}, FormatAuto, []string{"train.tsv.gz", "truncated"}},
		{"empty train", map[string]string{"train.tsv": ""}, FormatAuto, []string{"train.tsv", "no triples"}},
		{"name table out of order", map[string]string{"entities.tsv": "0\ta\n2\tb\n"}, FormatAuto, []string{"entities.tsv:2", `id "2", want 1`}},
		{"Latin-1 entity name", map[string]string{"entities.tsv": "0\ta\n1\tZ\xfcrich\n2\tc\n"}, FormatAuto, []string{"entities.tsv:2", "byte 4 is not valid UTF-8", "iconv"}},
		{"Latin-1 label", map[string]string{"entity_labels.tsv": "0\ta\n1\tb\xe9b\xe9\n"}, FormatAuto, []string{"entity_labels.tsv:2", "byte 4 is not valid UTF-8"}},
		{"Latin-1 name in triples", map[string]string{"train.tsv": "M\xfcller\tknows\tBob\n", "valid.tsv": "", "test.tsv": ""}, FormatNames, []string{"train.tsv:1", "byte 2 is not valid UTF-8"}},
		{"Latin-1 in gzip", map[string]string{"relations.tsv.gz": gz("0\t+a\n1\t-\xe0\n")}, FormatAuto, []string{"relations.tsv.gz:2", "byte 4 is not valid UTF-8"}},
		{"bad format", nil, Format("xml"), []string{`unknown triple format "xml"`}},
		{"train.tsv and train.txt", map[string]string{"train.txt": "0\t0\t1\n1\t1\t0\n"}, FormatAuto, []string{"train.tsv and", "train.txt are both there", "ambiguous"}},
		{"entities.tsv and entities.tsv.gz", map[string]string{"entities.tsv": "0\ta\n1\tb\n2\tc\n", "entities.tsv.gz": gz("0\ta\n1\tb\n2\tc\n")}, FormatAuto,
			[]string{"entities.tsv.gz and", "entities.tsv are both there"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := tc.files
			if _, ok := files["train.tsv.gz"]; ok {
				files["train.tsv"] = "<missing>"
			}
			dir := writeDataset(t, files)
			_, err := Load(dir, tc.format)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadNames(t *testing.T) {
	d, err := Load("../../testdata/tiny-names", FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := Load("../../testdata/tiny", FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	// The same KG: the same number of facts once ids are assigned, two directions each.
	if d.NumRelations != 10 || len(d.Train) != len(ids.Train) || len(d.Valid) != len(ids.Valid) || len(d.Test) != len(ids.Test) {
		t.Fatalf("names: %d relations, %d/%d/%d triples; ids: %d/%d/%d", d.NumRelations, len(d.Train), len(d.Valid), len(d.Test), len(ids.Train), len(ids.Valid), len(ids.Test))
	}
	// BetaE's rule: ids by first appearance in train, head before tail; 2k forward, 2k+1 inverse.
	first := strings.Fields(mustRead(t, "../../testdata/tiny-names/train.tsv"))
	if d.EntityNames[0] != first[0] || d.EntityNames[1] != first[2] || d.RelationNames[0] != "+"+first[1] || d.RelationNames[1] != "-"+first[1] {
		t.Fatalf("first names %v %v, first line %v", d.EntityNames[:2], d.RelationNames[:2], first[:3])
	}
	if d.Train[0] != (Triple{0, 0, 1}) || d.Train[1] != (Triple{1, 1, 0}) {
		t.Fatalf("first triples %v", d.Train[:2])
	}
	// One valid and one test fact name an entity unseen in train: dropped, with warnings.
	if len(d.Warnings) != 2 || len(ids.Warnings) != 2 {
		t.Fatalf("warnings %v / %v", d.Warnings, ids.Warnings)
	}
}

func mustRead(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGraphOut(t *testing.T) {
	ts := []Triple{{0, 2, 5}, {0, 0, 3}, {0, 2, 1}, {0, 2, 1}, {4, 1, 0}}
	g := NewGraph(6, 4, ts)
	if got := g.Out(0, 2); len(got) != 2 || got[0] != 1 || got[1] != 5 {
		t.Errorf("Out(0,2) = %v", got)
	}
	if got := g.Out(0, 1); got != nil {
		t.Errorf("Out(0,1) = %v", got)
	}
	if g.NumEdges() != 4 || g.NumRuns() != 3 || !g.HasEdges(4) || g.HasEdges(5) {
		t.Errorf("edges %d runs %d", g.NumEdges(), g.NumRuns())
	}
}
