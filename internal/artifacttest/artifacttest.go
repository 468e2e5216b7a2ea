// Package artifacttest edits artifacts for tests: their rows as plain Go values, written
// back with a valid content checksum (artifact.Create), so that a test can make an
// artifact that breaks its kind's contract (an id out of range, answers out of order, a
// row dropped) and see a reader refuse it for that, not for its checksum; and it splices
// an edited artifact's values under the original's checksum, so that a test can make an
// artifact whose checksum no longer matches its content and see that refused. It is for
// tests only.
package artifacttest

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/rocone/rocone/pkg/artifact"
)

// Row is one row: column name → value, as int8, int32, int64, float32, float64, bool,
// string, []int32, []int64, []float32 or []string (a fixed-size list is a []float32).
type Row map[string]any

// Read returns an artifact's schema (its metadata included) and rows.
func Read(t testing.TB, path string) (*arrow.Schema, []Row) {
	t.Helper()
	schema, rows, _ := read(t, path)
	return schema, rows
}

// read is Read, with the number of rows of each record batch.
func read(t testing.TB, path string) (*arrow.Schema, []Row, []int) {
	t.Helper()
	var sizes []int
	r, err := artifact.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var rows []Row
	for r.Next() {
		rec := r.Record()
		sizes = append(sizes, int(rec.NumRows()))
		for i := 0; i < int(rec.NumRows()); i++ {
			row := Row{}
			for c, col := range rec.Columns() {
				v, err := value(col, i)
				if err != nil {
					t.Fatalf("%s: column %s: %v", path, rec.ColumnName(c), err)
				}
				row[rec.ColumnName(c)] = v
			}
			rows = append(rows, row)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return r.Schema(), rows, sizes
}

func value(a arrow.Array, i int) (any, error) {
	switch a := a.(type) {
	case *array.Int8:
		return a.Value(i), nil
	case *array.Int32:
		return a.Value(i), nil
	case *array.Int64:
		return a.Value(i), nil
	case *array.Float32:
		return a.Value(i), nil
	case *array.Float64:
		return a.Value(i), nil
	case *array.Boolean:
		return a.Value(i), nil
	case *array.String:
		return a.Value(i), nil
	case *array.List:
		lo, hi := a.ValueOffsets(i)
		return slice(a.ListValues(), int(lo), int(hi))
	case *array.FixedSizeList:
		n := int(a.DataType().(*arrow.FixedSizeListType).Len())
		off := a.Data().Offset()
		return slice(a.ListValues(), (off+i)*n, (off+i+1)*n)
	}
	return nil, fmt.Errorf("type %s not handled", a.DataType())
}

func slice(a arrow.Array, lo, hi int) (any, error) {
	switch a := a.(type) {
	case *array.Int32:
		return append([]int32{}, a.Int32Values()[lo:hi]...), nil
	case *array.Int64:
		return append([]int64{}, a.Int64Values()[lo:hi]...), nil
	case *array.Float32:
		return append([]float32{}, a.Float32Values()[lo:hi]...), nil
	case *array.String:
		out := []string{}
		for j := lo; j < hi; j++ {
			out = append(out, a.Value(j))
		}
		return out, nil
	}
	return nil, fmt.Errorf("list of %s not handled", a.DataType())
}

// Write writes rows under schema (whose content_sha256, if any, is replaced by the new
// content's) at path, through artifact.Create, with a valid checksum, without any check
// of the kind's contract: in record batches of the given sizes, or one batch.
func Write(t testing.TB, path string, schema *arrow.Schema, rows []Row, sizes ...int) {
	t.Helper()
	if len(sizes) == 0 {
		sizes = []int{len(rows)}
	}
	w, err := artifact.Create(path, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, n := range sizes {
		if n > len(rows) {
			t.Fatalf("a batch of %d rows, %d left", n, len(rows))
		}
		for _, row := range rows[:n] {
			for c, f := range schema.Fields() {
				v, ok := row[f.Name]
				if !ok {
					t.Fatalf("a row without column %s", f.Name)
				}
				if err := appendValue(b.Field(c), v); err != nil {
					t.Fatalf("column %s: %v", f.Name, err)
				}
			}
		}
		rows = rows[n:]
		rec := b.NewRecord()
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func appendValue(b array.Builder, v any) error {
	switch b := b.(type) {
	case *array.Int8Builder:
		b.Append(v.(int8))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Float32Builder:
		b.Append(v.(float32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.ListBuilder:
		b.Append(true)
		return appendAll(b.ValueBuilder(), v)
	case *array.FixedSizeListBuilder:
		b.Append(true)
		return appendAll(b.ValueBuilder(), v)
	default:
		return fmt.Errorf("builder %T not handled", b)
	}
	return nil
}

func appendAll(b array.Builder, v any) error {
	switch v := v.(type) {
	case []int32:
		b.(*array.Int32Builder).AppendValues(v, nil)
	case []int64:
		b.(*array.Int64Builder).AppendValues(v, nil)
	case []float32:
		b.(*array.Float32Builder).AppendValues(v, nil)
	case []string:
		b.(*array.StringBuilder).AppendValues(v, nil)
	default:
		return fmt.Errorf("list value %T not handled", v)
	}
	return nil
}

// Edit writes the artifact src again at dst with its metadata and rows edited: edit gets
// the metadata (key → value, content_sha256 left out) and the rows, changes them in
// place or returns others. dst carries a valid checksum of the new content; while the
// number of rows stays, it keeps src's record batches.
func Edit(t testing.TB, src, dst string, edit func(meta map[string]string, rows []Row) []Row) {
	t.Helper()
	schema, rows, sizes := read(t, src)
	n := len(rows)
	md := schema.Metadata()
	meta := map[string]string{}
	for i, k := range md.Keys() {
		if k != artifact.MetaChecksum {
			meta[k] = md.Values()[i]
		}
	}
	rows = edit(meta, rows)
	var keys, values []string
	for _, k := range md.Keys() { // the original order first, then any new key
		if v, ok := meta[k]; ok {
			keys, values = append(keys, k), append(values, v)
			delete(meta, k)
		}
	}
	for k, v := range meta {
		keys, values = append(keys, k), append(values, v)
	}
	m := arrow.NewMetadata(keys, values)
	if len(rows) != n {
		sizes = nil
	}
	Write(t, dst, arrow.NewSchema(schema.Fields(), &m), rows, sizes...)
}

// Splice returns the bytes of the artifact file edited (an edit of orig, artifacttest.Edit)
// with orig's checksum in place of its own: the content of one under the checksum of the
// other, every byte else a valid Arrow file. An edit that changes a value and no length
// gives a file that differs from orig in that value only.
func Splice(t testing.TB, orig, edited string) []byte {
	t.Helper()
	a, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(edited)
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := checksum(t, orig), checksum(t, edited)
	if sa == sb {
		t.Fatalf("%s and %s have the same content", orig, edited)
	}
	out := bytes.ReplaceAll(b, []byte(sb), []byte(sa))
	if bytes.Equal(out, a) {
		t.Fatal("the splice is the original")
	}
	return out
}

func checksum(t testing.TB, path string) string {
	t.Helper()
	r, err := artifact.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	v, ok := r.Schema().Metadata().GetValue(artifact.MetaChecksum)
	if !ok || len(v) != 64 {
		t.Fatalf("%s: content_sha256 %q: not a file's digest", path, v)
	}
	return v
}

// Stream writes the artifact src again at dst as an IPC stream, the form a stage writes
// to stdout (artifact.Create on an open descriptor): the schema says the checksum is in
// the trailer, which ends the stream.
func Stream(t testing.TB, src, dst string) {
	t.Helper()
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := artifact.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := artifact.Create(fmt.Sprintf("/dev/fd/%d", f.Fd()), r.Schema())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for r.Next() {
		if err := w.Write(r.Record()); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// CorruptTrailer returns a stream's bytes with one hex digit of its trailer's digest (the
// last 64 hex digits in it) changed.
func CorruptTrailer(t testing.TB, stream []byte) []byte {
	t.Helper()
	out := bytes.Clone(stream)
	for end := len(out); end >= 64; end-- {
		hexRun := true
		for _, c := range out[end-64 : end] {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				hexRun = false
				break
			}
		}
		if hexRun {
			if out[end-1] == '0' {
				out[end-1] = '1'
			} else {
				out[end-1] = '0'
			}
			return out
		}
	}
	t.Fatal("no digest in the stream")
	return nil
}

// WriteLegacy writes the artifact src at dst as versions before checksums did: the same
// schema, without content_sha256, and the same record batches, in the IPC file format.
func WriteLegacy(t testing.TB, src, dst string) {
	t.Helper()
	r, err := artifact.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	md := r.Schema().Metadata()
	var keys, values []string
	for i, k := range md.Keys() {
		if k != artifact.MetaChecksum {
			keys, values = append(keys, k), append(values, md.Values()[i])
		}
	}
	m := arrow.NewMetadata(keys, values)
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(arrow.NewSchema(r.Schema().Fields(), &m)))
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		if err := w.Write(r.Record()); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
