package kg

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

// TestAutoFormat: auto-detection reads a train file as ids only when its first line is
// three integers; a names file whose entities or relations happen to be numbers is names.
func TestAutoFormat(t *testing.T) {
	for _, tc := range []struct {
		first string
		want  Format
	}{
		{"0\t0\t1", FormatIDs},
		{"1\tr\t2", FormatNames},
		{"a\t1\t2", FormatNames},
		{"a\tr\t1", FormatNames},
		{"1\t2\tb", FormatNames},
		{"a\tr\tb", FormatNames},
	} {
		f := strings.Split(tc.first, "\t")
		train := tc.first + "\n" + f[2] + "\t" + f[1] + "\t" + f[0] + "\n"
		if tc.want == FormatIDs {
			train = "0\t0\t1\n1\t1\t0\n"
		}
		dir := writeDataset(t, map[string]string{"train.tsv": train, "valid.tsv": "", "test.tsv": ""})
		d, err := Load(dir, FormatAuto)
		if err != nil {
			t.Errorf("%q: %v", tc.first, err)
			continue
		}
		if want := "format " + string(tc.want) + " "; !strings.Contains(d.FormatNote, want) {
			t.Errorf("%q: format note %q, want %q", tc.first, d.FormatNote, want)
		}
		if names := d.EntityNames != nil; names != (tc.want == FormatNames) {
			t.Errorf("%q: entity names %q with format %s", tc.first, d.EntityNames, tc.want)
		}
	}
}

// TestIDCounts: a dataset of ids has as many entities (relations) as its largest id says,
// or as its name table lists; the largest ids of a dataset without name tables are
// bounded by its triples (one line with a huge id must not size every table by it), up to
// exactly the bound; and a dataset that drops nothing warns of nothing.
func TestIDCounts(t *testing.T) {
	for _, tc := range []struct {
		name           string
		files          map[string]string
		entities, rels int
		err            string
	}{
		{"one entity, a self-loop", map[string]string{"train.tsv": "0\t0\t0\n0\t1\t0\n", "valid.tsv": "", "test.tsv": ""}, 1, 2, ""},
		{"the base dataset", nil, 3, 4, ""},
		{"entity ids up to twice the triples", map[string]string{"train.tsv": "0\t0\t3\n3\t1\t0\n", "valid.tsv": "", "test.tsv": ""}, 4, 2, ""},
		{"entity id past twice the triples", map[string]string{"train.tsv": "0\t0\t4\n4\t1\t0\n", "valid.tsv": "", "test.tsv": ""}, 0, 0,
			"entity id 4, but the 2 triples of the dataset name at most 4 entities"},
		{"a huge entity id", map[string]string{"train.tsv": "0\t0\t2000000000\n2000000000\t1\t0\n", "valid.tsv": "", "test.tsv": ""}, 0, 0,
			"entity id 2000000000"},
		{"more named entities than triples", map[string]string{"train.tsv": "0\t0\t1\n1\t1\t0\n", "valid.tsv": "", "test.tsv": "",
			"entities.tsv": "0\ta\n1\tb\n2\tc\n3\td\n4\te\n5\tf\n"}, 6, 2, ""},
		{"relation ids up to twice the triples and 2", map[string]string{"train.tsv": "0\t4\t1\n1\t5\t0\n", "valid.tsv": "", "test.tsv": ""}, 2, 6, ""},
		{"relation id past twice the triples and 2", map[string]string{"train.tsv": "0\t6\t1\n1\t7\t0\n", "valid.tsv": "", "test.tsv": ""}, 0, 0,
			"relation id 7, but the 2 triples"},
		{"more named relations than triples", map[string]string{"train.tsv": "0\t0\t1\n1\t1\t0\n", "valid.tsv": "", "test.tsv": "",
			"relations.tsv": "0\t+a\n1\t-a\n2\t+b\n3\t-b\n4\t+c\n5\t-c\n6\t+d\n7\t-d\n"}, 2, 8, ""},
		{"head id at the named count", map[string]string{"entities.tsv": "0\ta\n1\tb\n2\tc\n", "test.tsv": "3\t0\t0\n0\t1\t3\n"}, 0, 0,
			"test.tsv:1: entity id out of range [0,3) in 3 0 0"},
		{"tail id at the named count", map[string]string{"entities.tsv": "0\ta\n1\tb\n2\tc\n", "test.tsv": "0\t0\t3\n3\t1\t0\n"}, 0, 0,
			"test.tsv:1: entity id out of range [0,3) in 0 0 3"},
	} {
		d, err := Load(writeDataset(t, tc.files), FormatIDs)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if d.NumEntities != tc.entities || d.NumRelations != tc.rels {
			t.Errorf("%s: %d entities, %d relations; want %d, %d", tc.name, d.NumEntities, d.NumRelations, tc.entities, tc.rels)
		}
		if len(d.Warnings) != 0 {
			t.Errorf("%s: warnings %q for a dataset that drops nothing", tc.name, d.Warnings)
		}
	}
}

// TestFieldCounts: a name table's row may be an id alone (an entity without a name), but
// a triple is three fields, never one.
func TestFieldCounts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		err   string
	}{
		{"a name table row without a name", map[string]string{"entities.tsv": "0\ta\n1\n2\tc\n"}, ""},
		{"a triple of one field", map[string]string{"test.tsv": "2\t0\t0\nabc\n"}, "test.tsv:2: want 3 tab-separated fields, got 1"},
		{"a triple of one number", map[string]string{"valid.tsv": "7\n"}, "valid.tsv:1: want 3 tab-separated fields, got 1"},
		{"a name table row of three fields", map[string]string{"entities.tsv": "0\ta\n1\tb\tx\n2\tc\n"}, "entities.tsv:2: want 2 tab-separated fields, got 3"},
	} {
		d, err := Load(writeDataset(t, tc.files), FormatAuto)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		} else if strings.Join(d.EntityNames, "|") != "a||c" {
			t.Errorf("%s: entity names %q", tc.name, d.EntityNames)
		}
	}
}

// TestGzipLines: an error in a gzipped file names the right place. A stream cut inside a
// line is reported after the last complete line, as a truncated stream and not as that
// partial line's field count; a complete stream whose last line has a wrong field count
// is reported as that line, not as a gzip error.
func TestGzipLines(t *testing.T) {
	var cut bytes.Buffer
	w := gzip.NewWriter(&cut)
	w.Write([]byte("0\t0\t1\n1\t1\t0\n1\t2"))
	w.Flush() // the text so far is decodable; the stream then ends without its trailer
	for _, tc := range []struct {
		name, train, want string
		not               string
	}{
		{"cut inside line 3", cut.String(), "train.tsv.gz: after line 2: gzip stream truncated", "fields"},
		{"complete, last line short", gz("0\t0\t1\n1\t1\t0\n1\t2\n"), "train.tsv.gz:3: want 3 tab-separated fields, got 2", "gzip"},
		{"complete, last line short, no newline", gz("0\t0\t1\n1\t1\t0\n1\t2"), "train.tsv.gz:3: want 3 tab-separated fields, got 2", "gzip"},
	} {
		dir := writeDataset(t, map[string]string{"train.tsv": "<missing>", "train.tsv.gz": tc.train})
		_, err := Load(dir, FormatAuto)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.not) {
			t.Errorf("%s: error %v, want %q without %q", tc.name, err, tc.want, tc.not)
		}
	}
}

// TestCheckName: a dataset name heads tables and keys seeds, so it must print as one
// table cell on one line.
func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  string
	}{
		{"FB15k-237", ""},
		{"my kg (v2)", ""},
		{"Zürich", ""},
		{"", "blank"},
		{" \t", "blank"},
		{"a\nb", `control character '\n'`},
		{"a\x7fb", "control character"},
		{"a|b", "'|'"},
	} {
		err := CheckName(tc.name)
		if tc.err == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.name, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: error %v, want %q", tc.name, err, tc.err)
		}
	}
}

// TestLabelWarnings: a dataset of names warns about labels only when some name is not a
// train entity, with their count.
func TestLabelWarnings(t *testing.T) {
	for _, tc := range []struct {
		labels, want string // want: the warnings, joined; "" for none
	}{
		{"a\tAy\nc\tSee\n", ""},
		{"a\tAy\nzz\tnobody\nyy\tnobody\n", "skipped 2 labels of names that are not train entities"},
	} {
		dir := writeDataset(t, map[string]string{"train.tsv": "a\tr\tb\nb\ts\tc\n", "valid.tsv": "", "test.tsv": "", "entity_labels.tsv": tc.labels})
		d, err := Load(dir, FormatAuto)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(d.Warnings, "\n"); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("labels %q: warnings %q, want %q", tc.labels, got, tc.want)
		}
	}
}
