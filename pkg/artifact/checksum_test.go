package artifact

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// schemaChecksum returns an artifact's schema content_sha256.
func schemaChecksum(t *testing.T, path string) string {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	v, _ := r.Schema().Metadata().GetValue(MetaChecksum)
	return v
}

// trailerOf reads a stream to its end and returns its trailer's digest.
func trailerOf(t *testing.T, path string) string {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if !r.hasTrailer {
		t.Fatalf("%s: no trailer", path)
	}
	return r.trailer
}

// TestChecksumForms: a file carries its digest in the schema, a stream in its trailer,
// and both are the same digest of the same content; what the reader computes agrees.
func TestChecksumForms(t *testing.T) {
	for _, k := range artifactKinds {
		t.Run(k.kind, func(t *testing.T) {
			file := writeTemp(t, sample(t, k.kind, false))
			stream := writeTemp(t, sample(t, k.kind, true))
			sum := schemaChecksum(t, file)
			if !isDigest(sum) {
				t.Fatalf("file: %s=%q, want a SHA-256", MetaChecksum, sum)
			}
			if got := schemaChecksum(t, stream); got != checksumTrailer {
				t.Errorf("stream: schema %s=%q, want %q", MetaChecksum, got, checksumTrailer)
			}
			if got := trailerOf(t, stream); got != sum {
				t.Errorf("stream trailer %s, file %s", got, sum)
			}
			// A converter's stream keeps the file's schema, its digest included, and no
			// trailer: it is checked against the schema's digest.
			plain := writeTemp(t, plainStream(t, sample(t, k.kind, false)))
			if err := k.read(plain); err != nil {
				t.Errorf("plain stream: %v", err)
			}
		})
	}
}

// TestChecksumBatching: the digest is of the content, not of how it is cut into record
// batches or where its buffers start.
func TestChecksumBatching(t *testing.T) {
	qs := testQueries(40)
	path := filepath.Join(t.TempDir(), "q.arrow")
	if err := WriteQueries(path, testMeta, qs); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var recs []arrow.Record
	for r.Next() {
		rec := r.Record()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := r.Err(); err != nil || len(recs) != 1 {
		t.Fatalf("%d batches, %v", len(recs), err)
	}
	whole := recs[0]
	defer whole.Release()
	for _, cuts := range [][]int64{{40}, {1, 39}, {17, 3, 20}, {0, 40, 0}, {13, 13, 14}} {
		h, err := newContentHash(r.Schema())
		if err != nil {
			t.Fatal(err)
		}
		at := int64(0)
		for _, n := range cuts {
			part := whole.NewSlice(at, at+n) // offset buffers: the slices start mid-buffer
			if err := h.add(part); err != nil {
				t.Fatal(err)
			}
			part.Release()
			at += n
		}
		if got, want := h.sum(), schemaChecksum(t, path); got != want {
			t.Errorf("cut %v: digest %s, want %s", cuts, got, want)
		}
	}
}

// TestChecksumRefused: inputs whose checksum is missing, wrong or malformed, or whose
// trailer is, are refused with an error naming the input and saying what is wrong.
func TestChecksumRefused(t *testing.T) {
	data := sample(t, "ranks", false)
	fr, err := ipc.NewFileReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	schema := fr.Schema()
	rec, err := fr.Record(0)
	if err != nil {
		t.Fatal(err)
	}
	rec.Retain()
	defer rec.Release()
	sum, _ := schema.Metadata().GetValue(MetaChecksum)

	// rewrite writes rec as a plain stream under a schema with content_sha256 set to
	// sum ("" for none), optionally through edit of the raw message sequence.
	rewrite := func(sum string, recs ...arrow.Record) []byte {
		s := withMeta(schema, MetaChecksum, sum)
		if sum == "" {
			md := s.Metadata()
			i := md.FindKey(MetaChecksum)
			keys := append(append([]string{}, md.Keys()[:i]...), md.Keys()[i+1:]...)
			values := append(append([]string{}, md.Values()[:i]...), md.Values()[i+1:]...)
			m := arrow.NewMetadata(keys, values)
			s = arrow.NewSchema(s.Fields(), &m)
		}
		var out bytes.Buffer
		w := ipc.NewWriter(&out, ipc.WithSchema(s))
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		return out.Bytes()
	}
	// withTrailers writes a stream of the given parts: records, and trailers (a digest
	// string) anywhere.
	withTrailers := func(parts ...any) []byte {
		s := withMeta(schema, MetaChecksum, checksumTrailer)
		var out bytes.Buffer
		sp := &streamPayloads{w: &out}
		w := ipc.NewWriterWithPayloadWriter(sp, ipc.WithSchema(s))
		for _, p := range parts {
			switch p := p.(type) {
			case arrow.Record:
				if err := w.Write(p); err != nil {
					t.Fatal(err)
				}
			case string:
				m, err := trailerMessage(s, p)
				if err != nil {
					t.Fatal(err)
				}
				writeMessage(&out, m)
			}
		}
		out.Write([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
		return out.Bytes()
	}
	edited := func() arrow.Record { // the same batch with one rank changed
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		for i, c := range rec.Columns() {
			for r := 0; r < int(rec.NumRows()); r++ {
				if i == 3 && r == 0 {
					b.Field(3).(*array.Int32Builder).Append(c.(*array.Int32).Value(0) + 1)
					continue
				}
				if err := b.Field(i).AppendValueFromString(c.ValueStr(r)); err != nil {
					t.Fatal(err)
				}
			}
		}
		return b.NewRecord()
	}()
	defer edited.Release()

	for _, tc := range []struct {
		name string
		data []byte
		msg  string
	}{
		{"no checksum", rewrite("", rec), "no content checksum (schema metadata content_sha256): written before artifacts carried one, or not by this pipeline; write it again with this version's rank"},
		{"placeholder", rewrite(checksumPlaceholder, rec), "is neither a SHA-256 nor \"trailer\""},
		{"another digest", rewrite(strings.Repeat("ab", 32), rec), "content checksum mismatch"},
		{"a changed rank", rewrite(sum, edited), "content checksum mismatch"},
		{"a row dropped", rewrite(sum, rec.NewSlice(0, rec.NumRows()-1)), "content checksum mismatch"},
		{"no trailer", withTrailers(rec), "the stream ended without its checksum trailer"},
		{"a wrong trailer", withTrailers(rec, strings.Repeat("0", 64)), "content checksum mismatch"},
		{"a trailer of a changed rank", withTrailers(edited, sum), "content checksum mismatch"},
		{"a batch after the trailer", withTrailers(rec, sum, rec), "follows the checksum trailer"},
		{"trailer in a file", func() []byte {
			var out bytes.Buffer
			fw, err := ipc.NewFileWriter(&posWriter{w: &out}, ipc.WithSchema(withMeta(schema, MetaChecksum, checksumTrailer)))
			if err != nil {
				t.Fatal(err)
			}
			fw.Write(rec)
			fw.Close()
			return out.Bytes()
		}(), "only a stream has a checksum trailer"},
		{"digest one letter off", bytes.Replace(data, []byte(sum), []byte(sum[:63]+map[bool]string{true: "1", false: "0"}[sum[63] == '0']), -1), "content checksum mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, pipe := range []bool{false, true} {
				err := readAs(t, artifactKinds[3].read, tc.data, pipe)
				if err == nil || !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("pipe %v: %v, want %q", pipe, err, tc.msg)
				}
			}
		})
	}
	// The stream of the same parts, trailer right, reads.
	if err := readAs(t, artifactKinds[3].read, withTrailers(rec, sum), false); err != nil {
		t.Errorf("a right trailer: %v", err)
	}
}

// TestWriterAnySchema: Create writes any records with their checksum, which Reader
// checks, in both forms.
func TestWriterAnySchema(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Float64},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean}, {Name: "s", Type: arrow.ListOf(arrow.BinaryTypes.String)}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := 0; i < 5; i++ {
		b.Field(0).(*array.Float64Builder).Append(float64(i) / 3)
		b.Field(1).(*array.BooleanBuilder).Append(i%2 == 0)
		l := b.Field(2).(*array.ListBuilder)
		l.Append(true)
		for j := 0; j < i; j++ {
			l.ValueBuilder().(*array.StringBuilder).Append(strings.Repeat("z", j))
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	dir := t.TempDir()
	path := filepath.Join(dir, "any.arrow")
	w, err := Create(path, schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	read := func(p string) error {
		r, err := Open(p)
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
		}
		return r.Err()
	}
	if err := read(path); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if err := readAs(t, read, toStream(t, data), true); err != nil {
		t.Fatal(err)
	}
	// One boolean flipped in the body: the value bytes differ in one bit.
	h, _ := newContentHash(withMeta(schema, MetaChecksum, ""))
	h.add(rec)
	before := h.sum()
	b2 := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b2.Release()
	for i := 0; i < 5; i++ {
		b2.Field(0).(*array.Float64Builder).Append(float64(i) / 3)
		b2.Field(1).(*array.BooleanBuilder).Append(i%2 == 0 != (i == 4))
		l := b2.Field(2).(*array.ListBuilder)
		l.Append(true)
		for j := 0; j < i; j++ {
			l.ValueBuilder().(*array.StringBuilder).Append(strings.Repeat("z", j))
		}
	}
	rec2 := b2.NewRecord()
	defer rec2.Release()
	h2, _ := newContentHash(withMeta(schema, MetaChecksum, ""))
	h2.add(rec2)
	if h2.sum() == before {
		t.Error("a flipped boolean leaves the digest unchanged")
	}
}
