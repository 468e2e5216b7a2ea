package artifact

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

var testMeta = QueriesMeta{Split: "valid", Dataset: "toy", NumEntities: 1000, NumRelations: 20}

// testQueries returns n queries with varied types and list lengths, empty lists included:
// each with the anchors and relations of its structure, its answers sorted.
func testQueries(n int) []Query {
	types := []struct {
		name, structure   string
		anchors, relation int
	}{
		{"1p", "('e',('r',))", 1, 1},
		{"2in", "(('e',('r',)),('e',('r','n')))", 2, 2},
		{"custom", "(('e',('r','r','r','r')),('e',('r',)))", 2, 5},
	}
	qs := make([]Query, n)
	for i := range qs {
		t := types[i%len(types)]
		q := Query{ID: int64(3 * i), Type: t.name, Structure: t.structure}
		for j := 0; j < t.anchors; j++ {
			q.Anchors = append(q.Anchors, int32((i*7+j)%1000))
		}
		for j := 0; j < t.relation; j++ {
			q.Relations = append(q.Relations, int32((i+j)%20))
		}
		for j := 0; j < i%5; j++ { // i%5 == 0: no easy answers
			q.Easy = append(q.Easy, int32((i*13+j)%1000))
		}
		for j := 0; j < i%4; j++ { // i%4 == 0: no hard answers
			q.Hard = append(q.Hard, int32((i*31+j*17)%1000))
		}
		slices.Sort(q.Easy)
		slices.Sort(q.Hard)
		q.Easy, q.Hard = slices.Compact(q.Easy), slices.Compact(q.Hard)
		qs[i] = q
	}
	return qs
}

func sameQueries(t *testing.T, got, want []Query) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d queries, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := &got[i], &want[i]
		if g.ID != w.ID || g.Type != w.Type || g.Structure != w.Structure ||
			!slices.Equal(g.Anchors, w.Anchors) || !slices.Equal(g.Relations, w.Relations) ||
			!slices.Equal(g.Easy, w.Easy) || !slices.Equal(g.Hard, w.Hard) {
			t.Fatalf("query %d:\n got %+v\nwant %+v", i, *g, *w)
		}
		for _, l := range [][]int32{g.Anchors, g.Relations, g.Easy, g.Hard} {
			if l == nil {
				t.Fatalf("query %d: nil list, want an empty one", i)
			}
		}
	}
}

// setStd points os.Stdin or os.Stdout at f for the rest of the test. Tests that use it
// must not run in parallel.
func setStd(t *testing.T, std **os.File, f *os.File) {
	t.Helper()
	old := *std
	*std = f
	t.Cleanup(func() { *std = old })
}

// The ways an artifact travels between two stages.
var transports = []struct {
	name string
	// roundTrip writes qs by one route and reads them back by another.
	roundTrip func(t *testing.T, qs []Query) (QueriesMeta, []Query, error)
}{
	{"file", func(t *testing.T, qs []Query) (QueriesMeta, []Query, error) {
		path := filepath.Join(t.TempDir(), "q.arrow")
		if err := WriteQueries(path, testMeta, qs); err != nil {
			t.Fatal(err)
		}
		return ReadQueries(path)
	}},
	{"pipe", func(t *testing.T, qs []Query) (QueriesMeta, []Query, error) {
		return viaPipe(t, func() error { return WriteQueries("-", testMeta, qs) })
	}},
	{"file into pipe", func(t *testing.T, qs []Query) (QueriesMeta, []Query, error) {
		path := filepath.Join(t.TempDir(), "q.arrow")
		if err := WriteQueries(path, testMeta, qs); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return viaPipe(t, func() error { _, err := os.Stdout.Write(data); return err })
	}},
	{"stdout redirected to file", func(t *testing.T, qs []Query) (QueriesMeta, []Query, error) {
		path := streamFile(t, qs)
		return ReadQueries(path)
	}},
	{"stdin redirected from file", func(t *testing.T, qs []Query) (QueriesMeta, []Query, error) {
		f, err := os.Open(streamFile(t, qs))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		setStd(t, &os.Stdin, f)
		return ReadQueries("-")
	}},
}

// viaPipe runs write with stdout on a pipe and reads the queries from stdin on its other
// end.
func viaPipe(t *testing.T, write func() error) (QueriesMeta, []Query, error) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	setStd(t, &os.Stdout, pw)
	setStd(t, &os.Stdin, pr)
	done := make(chan error, 1)
	go func() {
		err := write()
		pw.Close()
		done <- err
	}()
	meta, qs, rerr := ReadQueries("-")
	io.Copy(io.Discard, pr) // let the writer finish should the reader stop early
	if err := <-done; err != nil {
		t.Fatalf("writing to the pipe: %v", err)
	}
	return meta, qs, rerr
}

// streamFile writes qs to stdout redirected to a file, as a shell does for stage > file,
// and returns the file's path.
func streamFile(t *testing.T, qs []Query) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "q.stream.arrow")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	setStd(t, &os.Stdout, f)
	if err := WriteQueries("-", testMeta, qs); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRoundTrip(t *testing.T) {
	sets := []struct {
		name string
		qs   []Query
	}{
		{"no rows", nil},
		{"one row of empty lists", []Query{{ID: 0, Type: "1p", Structure: "('e',('r',))",
			Anchors: []int32{4}, Relations: []int32{2}, Easy: []int32{}, Hard: nil}}},
		{"small", testQueries(50)},
		{"several batches", testQueries(2*maxBatchRows + 123)},
	}
	for _, tr := range transports {
		for _, set := range sets {
			t.Run(tr.name+"/"+set.name, func(t *testing.T) {
				meta, qs, err := tr.roundTrip(t, set.qs)
				if err != nil {
					t.Fatal(err)
				}
				if meta != testMeta {
					t.Errorf("meta = %+v, want %+v", meta, testMeta)
				}
				sameQueries(t, qs, set.qs)
			})
		}
	}
}

func TestQueriesReader(t *testing.T) {
	want := testQueries(maxBatchRows + 10)
	path := filepath.Join(t.TempDir(), "q.arrow")
	if err := WriteQueries(path, testMeta, want); err != nil {
		t.Fatal(err)
	}
	r, err := OpenQueries(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Meta() != testMeta {
		t.Errorf("Meta() = %+v, want %+v", r.Meta(), testMeta)
	}
	var got []Query
	for r.Next() {
		got = append(got, r.Query())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.Next() {
		t.Error("Next after the end returned true")
	}
	sameQueries(t, got, want)

	// The lists of a batch share one array; appending to one must not touch another.
	q := got[1]
	relations := slices.Clone(q.Relations)
	_ = append(q.Anchors, -1)
	if !slices.Equal(got[1].Relations, relations) || !slices.Equal(got[0].Hard, want[0].Hard) {
		t.Error("appending to a query's anchors changed another list")
	}
}

func TestFormatDetection(t *testing.T) {
	qs := testQueries(10)
	file := filepath.Join(t.TempDir(), "q.arrow")
	if err := WriteQueries(file, testMeta, qs); err != nil {
		t.Fatal(err)
	}
	stream := streamFile(t, qs)
	for _, tc := range []struct {
		path       string
		fileFormat bool
	}{{file, true}, {stream, false}} {
		data, err := os.ReadFile(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.HasPrefix(data, []byte(fileMagic)); got != tc.fileFormat {
			t.Errorf("%s: begins with the file magic: %v, want %v", tc.path, got, tc.fileFormat)
		}
		r, err := Open(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.file != nil; got != tc.fileFormat {
			t.Errorf("%s: read as the file format: %v, want %v", tc.path, got, tc.fileFormat)
		}
		rows := 0
		for r.Next() {
			rows += int(r.Record().NumRows())
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if rows != len(qs) {
			t.Errorf("%s: %d rows, want %d", tc.path, rows, len(qs))
		}
	}
}

// dirEntries lists dir, temporary files included.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestAtomicWrite(t *testing.T) {
	qs := testQueries(20)

	t.Run("abort leaves nothing", func(t *testing.T) {
		dir := t.TempDir()
		w, err := CreateQueries(filepath.Join(dir, "q.arrow"), testMeta)
		if err != nil {
			t.Fatal(err)
		}
		for i := range qs {
			if err := w.Write(&qs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if names := dirEntries(t, dir); len(names) != 1 || !strings.HasPrefix(names[0], ".q.arrow.tmp-") {
			t.Errorf("while writing, directory holds %q, want one temporary file", names)
		}
		w.Abort()
		w.Abort()
		if names := dirEntries(t, dir); len(names) != 0 {
			t.Errorf("after Abort, directory holds %q", names)
		}
		if err := w.Close(); err == nil {
			t.Error("Close after Abort succeeded")
		}
	})

	t.Run("error mid-way leaves nothing", func(t *testing.T) {
		dir := t.TempDir()
		bad := append(slices.Clone(qs), Query{ID: qs[3].ID, Type: "1p", Structure: "('e',('r',))"})
		err := WriteQueries(filepath.Join(dir, "q.arrow"), testMeta, bad)
		if err == nil {
			t.Fatal("writing a duplicate id succeeded")
		}
		if names := dirEntries(t, dir); len(names) != 0 {
			t.Errorf("after the error, directory holds %q", names)
		}
	})

	t.Run("destination untouched until commit", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "q.arrow")
		if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		w, err := CreateQueries(path, testMeta)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		for i := range qs {
			if err := w.Write(&qs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if data, _ := os.ReadFile(path); string(data) != "old" {
			t.Fatalf("before Close, destination holds %q", data)
		}
		// A failed write, here a duplicate id, keeps the old file too.
		if err := WriteQueries(path, testMeta, append(qs, qs[0])); err == nil {
			t.Fatal("writing a duplicate id succeeded")
		}
		if data, _ := os.ReadFile(path); string(data) != "old" {
			t.Fatalf("after a failed write, destination holds %q", data)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		w.Abort() // no effect after Close
		if names := dirEntries(t, dir); !slices.Equal(names, []string{"q.arrow"}) {
			t.Errorf("after Close, directory holds %q", names)
		}
		_, got, err := ReadQueries(path)
		if err != nil {
			t.Fatal(err)
		}
		sameQueries(t, got, qs)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("mode %v, want 0644", fi.Mode().Perm())
		}
		if err := w.Close(); err == nil {
			t.Error("second Close succeeded")
		}
		if err := w.Write(&qs[0]); err == nil {
			t.Error("Write after Close succeeded")
		}
	})

	t.Run("destination is a directory", func(t *testing.T) {
		dir := t.TempDir()
		_, err := CreateQueries(dir, testMeta)
		if err == nil || err.Error() != dir+": is a directory" {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("missing directory", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "no", "q.arrow")
		_, err := CreateQueries(path, testMeta)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("err = %v, want one naming %s", err, path)
		}
	})
}

func TestAbortedStream(t *testing.T) {
	qs := testQueries(maxBatchRows + 1) // one batch is flushed before the abort
	path := filepath.Join(t.TempDir(), "q.stream.arrow")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	setStd(t, &os.Stdout, f)
	w, err := CreateQueries("-", testMeta)
	if err != nil {
		t.Fatal(err)
	}
	for i := range qs {
		if err := w.Write(&qs[i]); err != nil {
			t.Fatal(err)
		}
	}
	w.Abort()
	_, _, err = ReadQueries(path)
	if err == nil || !strings.Contains(err.Error(), path+": truncated Arrow stream") {
		t.Errorf("reading an aborted stream: err = %v, want a truncated stream", err)
	}
	// The whole stream cut before its end-of-stream marker, right after its checksum
	// trailer, which is not counted as a record batch.
	data, err := os.ReadFile(streamFile(t, qs))
	if err != nil {
		t.Fatal(err)
	}
	cut := writeTemp(t, data[:len(data)-8])
	_, _, err = ReadQueries(cut)
	if want := cut + ": truncated Arrow stream: input ended after 2 record batches without the end-of-stream marker"; err == nil || err.Error() != want {
		t.Errorf("a stream without its end-of-stream marker: err = %v\nwant %s", err, want)
	}
}

func TestTruncated(t *testing.T) {
	qs := testQueries(6)
	dir := t.TempDir()
	file := filepath.Join(dir, "q.arrow")
	if err := WriteQueries(file, testMeta, qs); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		format, path string
	}{{"file", file}, {"stream", streamFile(t, qs)}} {
		t.Run(tc.format, func(t *testing.T) {
			data, err := os.ReadFile(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			cut := filepath.Join(dir, "cut.arrow")
			// Every prefix, those ending between messages included.
			for n := 1; n < len(data); n++ {
				if err := os.WriteFile(cut, data[:n], 0o644); err != nil {
					t.Fatal(err)
				}
				_, got, err := ReadQueries(cut)
				if err == nil {
					t.Fatalf("%d of %d bytes: read %d queries, no error", n, len(data), len(got))
				}
				if !strings.HasPrefix(err.Error(), cut+": ") {
					t.Fatalf("%d of %d bytes: error %q does not name the path", n, len(data), err)
				}
			}
			// Just the end-of-stream marker or the file's closing magic missing.
			if err := os.WriteFile(cut, data[:len(data)-8], 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err = ReadQueries(cut)
			if want := cut + ": truncated"; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("err = %v, want it to begin %q", err, want)
			}
			// The same through a pipe.
			_, _, err = viaPipe(t, func() error { _, err := os.Stdout.Write(data[:len(data)/2]); return err })
			if want := "stdin: truncated"; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("through a pipe: err = %v, want it to begin %q", err, want)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.arrow")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadQueries(path); err == nil || err.Error() != path+": empty input" {
		t.Errorf("empty file: err = %v", err)
	}
	_, _, err := viaPipe(t, func() error { return nil })
	if err == nil || err.Error() != "stdin: empty input" {
		t.Errorf("empty pipe: err = %v", err)
	}
	if _, _, err := ReadQueries(filepath.Join(t.TempDir(), "missing.arrow")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
	csv := filepath.Join(t.TempDir(), "q.csv")
	if err := os.WriteFile(csv, []byte("id,type\n1,1p\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadQueries(csv); err == nil || err.Error() != csv+": not an Arrow IPC file or stream" {
		t.Errorf("CSV file: err = %v", err)
	}
	dir := t.TempDir()
	if _, _, err := ReadQueries(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("directory: err = %v", err)
	}
}

// writeRaw writes an artifact with any schema, bypassing the checks of the queries
// writer, after fill has appended its rows.
func writeRaw(t *testing.T, path string, schema *arrow.Schema, fill func(b *array.RecordBuilder)) {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	if fill != nil {
		fill(b)
	}
	rec := b.NewRecord()
	defer rec.Release()
	w, err := createRecords(path, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer w.abort()
	if err := w.write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
}

// testSchema returns the queries schema with its metadata and fields changed by edit.
func testSchema(edit func(md map[string]string, fields []arrow.Field) []arrow.Field) *arrow.Schema {
	md := map[string]string{
		"artifact": "queries", "version": "1", "split": "test", "dataset": "toy",
		"num_entities": "100", "num_relations": "10", "kg_digest": "",
	}
	fields := slices.Clone(queriesSpec.fields)
	fields = edit(md, fields)
	var keys, values []string
	for k, v := range md {
		keys, values = append(keys, k), append(values, v)
	}
	m := arrow.NewMetadata(keys, values)
	return arrow.NewSchema(fields, &m)
}

func TestSchemaErrors(t *testing.T) {
	int64s := arrow.ListOf(arrow.PrimitiveTypes.Int64)
	for _, tc := range []struct {
		name string
		edit func(md map[string]string, fields []arrow.Field) []arrow.Field
		want string // the error after "PATH: "
	}{
		{"wrong kind", func(md map[string]string, f []arrow.Field) []arrow.Field {
			md["artifact"] = "cones"
			return f
		}, `artifact is "cones", want "queries"`},
		{"not an artifact", func(md map[string]string, f []arrow.Field) []arrow.Field {
			delete(md, "artifact")
			return f
		}, `no "artifact" in the schema metadata; not a pipeline artifact (want "queries")`},
		{"wrong version", func(md map[string]string, f []arrow.Field) []arrow.Field {
			md["version"] = "2"
			return f
		}, `version 2 not supported (want 1)`},
		{"wrong column type", func(md map[string]string, f []arrow.Field) []arrow.Field {
			f[colAnchors].Type = int64s
			return f
		}, `column "anchors" has type list<item: int64, nullable>, want list<item: int32>`},
		{"wrong id type", func(md map[string]string, f []arrow.Field) []arrow.Field {
			f[colID].Type = arrow.PrimitiveTypes.Int32
			return f
		}, `column "id" has type int32, want int64`},
		{"columns out of order", func(md map[string]string, f []arrow.Field) []arrow.Field {
			f[colEasy], f[colHard] = f[colHard], f[colEasy]
			return f
		}, `column 5 is "hard", want "easy"`},
		{"missing column", func(md map[string]string, f []arrow.Field) []arrow.Field {
			return f[:colHard]
		}, `missing column "hard" (column 6)`},
		{"extra column", func(md map[string]string, f []arrow.Field) []arrow.Field {
			return append(f, arrow.Field{Name: "score", Type: arrow.PrimitiveTypes.Float32})
		}, `unexpected column "score" (want 7 columns)`},
		{"missing metadata", func(md map[string]string, f []arrow.Field) []arrow.Field {
			delete(md, "num_relations")
			return f
		}, `no "num_relations" in the schema metadata`},
		{"bad count", func(md map[string]string, f []arrow.Field) []arrow.Field {
			md["num_entities"] = "-3"
			return f
		}, `schema metadata num_entities="-3" is not a count`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "q.arrow")
			writeRaw(t, path, testSchema(tc.edit), nil)
			_, _, err := ReadQueries(path)
			if want := path + ": " + tc.want; err == nil || err.Error() != want {
				t.Errorf("err = %v\nwant %s", err, want)
			}
		})
	}
}

// appendRaw appends one row to a queries record builder.
func appendRaw(b *array.RecordBuilder, id int64, typ string, lists ...[]int32) {
	b.Field(colID).(*array.Int64Builder).Append(id)
	b.Field(colType).(*array.StringBuilder).Append(typ)
	b.Field(colStructure).(*array.StringBuilder).Append("('e',('r',))")
	for i := 0; i < 4; i++ {
		lb := b.Field(colAnchors + i).(*array.ListBuilder)
		lb.Append(true)
		if i < len(lists) {
			lb.ValueBuilder().(*array.Int32Builder).AppendValues(lists[i], nil)
		}
	}
}

func TestContractErrors(t *testing.T) {
	ok := testSchema(func(md map[string]string, f []arrow.Field) []arrow.Field { return f })
	for _, tc := range []struct {
		name string
		fill func(b *array.RecordBuilder)
		want string
	}{
		{"duplicate id", func(b *array.RecordBuilder) {
			appendRaw(b, 7, "1p")
			appendRaw(b, 3, "1p")
			appendRaw(b, 7, "1p")
		}, "row 2: duplicate id 7 (also at row 0)"},
		{"negative id", func(b *array.RecordBuilder) {
			appendRaw(b, 1, "1p")
			appendRaw(b, -1, "1p")
		}, "row 1: negative id -1"},
		{"empty type", func(b *array.RecordBuilder) {
			appendRaw(b, 1, "")
		}, "row 0 (id 1): empty type"},
		{"anchor out of range", func(b *array.RecordBuilder) {
			appendRaw(b, 1, "1p", []int32{5})
			appendRaw(b, 2, "1p", []int32{6, 100})
		}, "row 1 (id 2): anchor 100 out of range [0, 100)"},
		{"relation out of range", func(b *array.RecordBuilder) {
			appendRaw(b, 1, "1p", []int32{5}, []int32{10})
		}, "row 0 (id 1): relation 10 out of range [0, 10)"},
		{"negative answer", func(b *array.RecordBuilder) {
			appendRaw(b, 1, "1p", nil, nil, nil, []int32{1, 2})
			appendRaw(b, 2, "1p", nil, nil, nil, []int32{-4})
		}, "row 1 (id 2): hard answer -4 out of range [0, 100)"},
		{"null list", func(b *array.RecordBuilder) {
			appendRaw(b, 1, "1p")
			b.Field(colID).(*array.Int64Builder).Append(2)
			b.Field(colType).(*array.StringBuilder).Append("1p")
			b.Field(colStructure).(*array.StringBuilder).Append("('e',('r',))")
			b.Field(colAnchors).(*array.ListBuilder).Append(true)
			b.Field(colRelations).(*array.ListBuilder).Append(true)
			b.Field(colEasy).(*array.ListBuilder).AppendNull()
			b.Field(colHard).(*array.ListBuilder).Append(true)
		}, "row 1: easy is null"},
		{"null in a list", func(b *array.RecordBuilder) {
			appendRaw(b, 1, "1p", []int32{5})
			appendRaw(b, 2, "1p", []int32{6})
			appendRaw(b, 3, "1p")
			b.Field(colAnchors).(*array.ListBuilder).ValueBuilder().AppendNull()
		}, "rows 0 to 2: anchors holds a null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "q.arrow")
			writeRaw(t, path, ok, tc.fill)
			_, _, err := ReadQueries(path)
			if want := path + ": " + tc.want; err == nil || err.Error() != want {
				t.Errorf("err = %v\nwant %s", err, want)
			}
		})
	}
}

func TestDuplicateAcrossBatches(t *testing.T) {
	qs := testQueries(maxBatchRows + 5)
	qs[len(qs)-1].ID = qs[2].ID
	path := filepath.Join(t.TempDir(), "q.arrow")
	err := WriteQueries(path, testMeta, qs)
	want := fmt.Sprintf("%s: row %d: duplicate id %d (also at row 2)", path, len(qs)-1, qs[2].ID)
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

func TestWriteChecks(t *testing.T) {
	q := func(edit func(q *Query)) Query {
		q := Query{ID: 1, Type: "1p", Structure: "('e',('r',))", Anchors: []int32{1}, Relations: []int32{2}, Hard: []int32{3}}
		edit(&q)
		return q
	}
	for _, tc := range []struct {
		name string
		q    Query
		want string
	}{
		{"negative id", q(func(q *Query) { q.ID = -2 }), "row 1 (id -2): negative id"},
		{"duplicate id", q(func(q *Query) { q.ID = 0 }), "row 1: duplicate id 0 (also at row 0)"},
		{"empty type", q(func(q *Query) { q.Type = "" }), "row 1 (id 1): empty type"},
		{"empty structure", q(func(q *Query) { q.Structure = "" }), "row 1 (id 1): empty structure"},
		{"anchor", q(func(q *Query) { q.Anchors = []int32{1000} }), "row 1 (id 1): anchor 1000 out of range [0, 1000)"},
		{"relation", q(func(q *Query) { q.Relations = []int32{-1} }), "row 1 (id 1): relation -1 out of range [0, 20)"},
		{"easy", q(func(q *Query) { q.Easy = []int32{0, 1000} }), "row 1 (id 1): easy answer 1000 out of range [0, 1000)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "q.arrow")
			w, err := CreateQueries(path, testMeta)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			first := q(func(q *Query) { q.ID = 0 })
			if err := w.Write(&first); err != nil {
				t.Fatal(err)
			}
			if err := w.Write(&tc.q); err == nil || err.Error() != path+": "+tc.want {
				t.Fatalf("err = %v\nwant %s: %s", err, path, tc.want)
			}
			// The rejected row is not written; the writer goes on.
			last := q(func(q *Query) { q.ID = 5 })
			if err := w.Write(&last); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			_, got, err := ReadQueries(path)
			if err != nil {
				t.Fatal(err)
			}
			sameQueries(t, got, []Query{first, last})
		})
	}

	for _, meta := range []QueriesMeta{
		{Dataset: "toy", NumEntities: 1, NumRelations: 1},
		{Split: "test", NumEntities: 1, NumRelations: 1},
		{Split: "test", Dataset: "toy", NumEntities: -1, NumRelations: 1},
	} {
		if _, err := CreateQueries(filepath.Join(t.TempDir(), "q.arrow"), meta); err == nil {
			t.Errorf("CreateQueries with %+v succeeded", meta)
		}
	}
}

// Files written by other tools (pyarrow among them) declare their columns and list
// elements nullable; that is fine as long as they hold no nulls.
func TestNullableFieldsAccepted(t *testing.T) {
	schema := testSchema(func(md map[string]string, f []arrow.Field) []arrow.Field {
		for i := range f {
			f[i].Nullable = true
			if _, ok := f[i].Type.(*arrow.ListType); ok {
				f[i].Type = arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Int32, Nullable: true})
			}
		}
		return f
	})
	path := filepath.Join(t.TempDir(), "q.arrow")
	writeRaw(t, path, schema, func(b *array.RecordBuilder) {
		appendRaw(b, 4, "1p", []int32{1}, []int32{2}, nil, []int32{3, 4})
	})
	meta, got, err := ReadQueries(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Query{{ID: 4, Type: "1p", Structure: "('e',('r',))", Anchors: []int32{1}, Relations: []int32{2}, Easy: []int32{}, Hard: []int32{3, 4}}}
	sameQueries(t, got, want)
	if meta != (QueriesMeta{Split: "test", Dataset: "toy", NumEntities: 100, NumRelations: 10}) {
		t.Errorf("meta = %+v", meta)
	}
}

func BenchmarkReadQueries(b *testing.B) {
	const rows, answers = 100_000, 300
	qs := make([]Query, rows)
	hard := make([]int32, answers)
	for i := range hard {
		hard[i] = int32(i)
	}
	for i := range qs {
		qs[i] = Query{ID: int64(i), Type: "2i", Structure: "(('e',('r',)),('e',('r',)))",
			Anchors: []int32{1, 2}, Relations: []int32{3, 4}, Easy: hard[:10], Hard: hard}
	}
	path := filepath.Join(b.TempDir(), "q.arrow")
	if err := WriteQueries(path, testMeta, qs); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, _, err := ReadQueries(path); err != nil {
			b.Fatal(err)
		}
	}
}
