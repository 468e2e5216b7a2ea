package artifact

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/rocone/rocone/pkg/outfile"
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
		{"a trailer that is no digest", withTrailers(rec, sum[:63]+"g"), `the checksum trailer's content_sha256="` + sum[:63] + `g" is not a SHA-256`},
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
	if err := readAll(path); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if err := readAs(t, readAll, toStream(t, data), true); err != nil {
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

// TestWithMeta: withMeta replaces the key where it is, first or last, and appends it
// when absent, so that a schema never carries the key twice.
func TestWithMeta(t *testing.T) {
	fields := []arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}
	for _, tc := range []struct {
		name                 string
		keys, values         []string
		wantKeys, wantValues []string
	}{
		{"absent", []string{"a"}, []string{"1"}, []string{"a", MetaChecksum}, []string{"1", "new"}},
		{"none", nil, nil, []string{MetaChecksum}, []string{"new"}},
		{"first", []string{MetaChecksum, "a"}, []string{"old", "1"}, []string{MetaChecksum, "a"}, []string{"new", "1"}},
		{"last", []string{"a", MetaChecksum}, []string{"1", "old"}, []string{"a", MetaChecksum}, []string{"1", "new"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := arrow.NewMetadata(tc.keys, tc.values)
			orig := arrow.NewSchema(fields, &md)
			got := withMeta(orig, MetaChecksum, "new").Metadata()
			if !slices.Equal(got.Keys(), tc.wantKeys) || !slices.Equal(got.Values(), tc.wantValues) {
				t.Errorf("metadata %v = %v, want %v = %v", got.Keys(), got.Values(), tc.wantKeys, tc.wantValues)
			}
			if !slices.Equal(orig.Metadata().Values(), tc.values) {
				t.Errorf("the schema given was changed: %v", orig.Metadata().Values())
			}
		})
	}
}

// TestChecksumSlicesEveryKind: for every kind of artifact, the digest of its sample is
// the same however each record batch is cut in two, the cut at every row, so that the
// values of each column type (fixed-width, boolean, string, list, fixed-size list)
// are hashed from where a slice starts in its buffers. TestChecksumBatching cuts one
// artifact of queries; the fixed-size lists of cones and checkpoints and the booleans of
// answers are only here.
func TestChecksumSlicesEveryKind(t *testing.T) {
	for _, k := range artifactKinds {
		t.Run(k.kind, func(t *testing.T) {
			path := writeTemp(t, sample(t, k.kind, false))
			want := schemaChecksum(t, path)
			fr, err := ipc.NewFileReader(bytes.NewReader(sample(t, k.kind, false)))
			if err != nil {
				t.Fatal(err)
			}
			defer fr.Close()
			var recs []arrow.Record
			var most int64
			for i := 0; i < fr.NumRecords(); i++ {
				rec, err := fr.Record(i)
				if err != nil {
					t.Fatal(err)
				}
				rec.Retain() // the reader releases it at the next Record
				defer rec.Release()
				recs = append(recs, rec)
				most = max(most, rec.NumRows())
			}
			for cut := int64(0); cut <= most; cut++ {
				h, err := newContentHash(fr.Schema())
				if err != nil {
					t.Fatal(err)
				}
				for _, rec := range recs {
					at := min(cut, rec.NumRows())
					for _, part := range []arrow.Record{rec.NewSlice(0, at), rec.NewSlice(at, rec.NumRows())} {
						if err := h.add(part); err != nil {
							t.Fatalf("cut at row %d: %v", cut, err)
						}
						part.Release()
					}
				}
				if got := h.sum(); got != want {
					t.Errorf("cut at row %d: digest %s, want %s", cut, got, want)
				}
			}
		})
	}
}

// TestChecksumValuesOffset: a list or fixed-size list column whose values start inside
// their buffers (their array has an offset of its own, as another Arrow library may hand
// a writer) has the digest of the same content laid out from the start, and one value
// changed changes it.
func TestChecksumValuesOffset(t *testing.T) {
	i32 := arrow.PrimitiveTypes.Int32
	ints := func(vs ...int32) arrow.ArrayData {
		return array.NewData(i32, len(vs), []*memory.Buffer{nil, int32Buf(vs...)}, nil, 0, 0)
	}
	// Two rows: [1 2] and [3 4], their values laid out from skip on (after skip values
	// that are no part of the column).
	lists := func(skip int, vs ...int32) arrow.ArrayData {
		values := array.NewSliceData(ints(append(make([]int32, skip), vs...)...), int64(skip), int64(skip+len(vs)))
		return array.NewData(arrow.ListOf(i32), 2, []*memory.Buffer{nil, int32Buf(0, 2, 4)}, []arrow.ArrayData{values}, 0, 0)
	}
	fixedLists := func(skip int, vs ...int32) arrow.ArrayData {
		values := array.NewSliceData(ints(append(make([]int32, skip), vs...)...), int64(skip), int64(skip+len(vs)))
		return array.NewData(arrow.FixedSizeListOf(2, i32), 2, []*memory.Buffer{nil}, []arrow.ArrayData{values}, 0, 0)
	}
	for _, c := range []struct {
		name string
		make func(skip int, vs ...int32) arrow.ArrayData
	}{
		{"list", lists},
		{"fixed-size list", fixedLists},
	} {
		t.Run(c.name, func(t *testing.T) {
			digest := func(d arrow.ArrayData) string {
				col := array.MakeFromData(d)
				defer col.Release()
				schema := arrow.NewSchema([]arrow.Field{{Name: "l", Type: d.DataType()}}, nil)
				rec := array.NewRecord(schema, []arrow.Array{col}, int64(d.Len()))
				defer rec.Release()
				if err := validateRecord(rec); err != nil {
					t.Fatal(err)
				}
				h, err := newContentHash(schema)
				if err != nil {
					t.Fatal(err)
				}
				if err := h.add(rec); err != nil {
					t.Fatal(err)
				}
				return h.sum()
			}
			want := digest(c.make(0, 1, 2, 3, 4))
			for _, skip := range []int{1, 3} {
				if got := digest(c.make(skip, 1, 2, 3, 4)); got != want {
					t.Errorf("values from %d: digest %s, want %s", skip, got, want)
				}
			}
			if digest(c.make(1, 1, 2, 3, 5)) == want {
				t.Error("a changed value leaves the digest unchanged")
			}
		})
	}
}

// TestDepthBound: every walk of a column's type or data (the content digest, the stream
// trailer's layout, the validation of a batch) takes the nesting the flatbuffer check
// allows, maxFieldDepth levels of lists, and refuses one more, so that none of them
// recurses without a bound whichever way a schema reaches it.
func TestDepthBound(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		for _, depth := range []int{maxFieldDepth, maxFieldDepth + 1} {
			d := nestedLists(depth, fixed)
			schema := arrow.NewSchema([]arrow.Field{{Name: "deep", Type: d.DataType()}}, nil)
			_, hashErr := newContentHash(schema)
			_, layoutErr := trailerMessage(schema, strings.Repeat("0", 64))
			validErr := validateData(d, 0)
			for _, c := range []struct {
				walk string
				err  error
			}{
				{"content digest", hashErr},
				{"trailer layout", layoutErr},
				{"validation", validErr},
			} {
				refused := c.err != nil && strings.Contains(c.err.Error(), "nested more than 8 deep")
				if want := depth > maxFieldDepth; refused != want {
					t.Errorf("fixed %v, %d lists deep: %s: %v, want refused %v", fixed, depth, c.walk, c.err, want)
				}
			}
		}
	}
}

// TestWriteMessage: a message without a body is framed as the IPC format gives it: the
// continuation marker, the length of the metadata padded to a multiple of 8 bytes, the
// metadata and zeros, 8-byte aligned as a whole.
func TestWriteMessage(t *testing.T) {
	for n := range 25 {
		meta := bytes.Repeat([]byte{0xab}, n)
		var out bytes.Buffer
		if err := writeMessage(&out, meta); err != nil {
			t.Fatal(err)
		}
		b := out.Bytes()
		padded := (n + 7) / 8 * 8
		switch {
		case len(b) != 8+padded:
			t.Errorf("%d bytes of metadata: a message of %d bytes, want %d", n, len(b), 8+padded)
		case !bytes.Equal(b[:4], []byte{0xff, 0xff, 0xff, 0xff}):
			t.Errorf("%d bytes of metadata: continuation marker % x", n, b[:4])
		case int(binary.LittleEndian.Uint32(b[4:])) != padded:
			t.Errorf("%d bytes of metadata: length %d, want %d", n, binary.LittleEndian.Uint32(b[4:]), padded)
		case !bytes.Equal(b[8:8+n], meta) || !bytes.Equal(b[8+n:], make([]byte, padded-n)):
			t.Errorf("%d bytes of metadata: % x, want the metadata and zeros", n, b[8:])
		}
	}
}

// TestNodeHashShortBuffers: hashing a column whose buffers are too short for its rows is
// an error, not a panic or a read past the buffer. The readers validate every batch
// before hashing it (validateRecord), so this is the hash's own guard, for a batch that
// reaches it some other way.
func TestNodeHashShortBuffers(t *testing.T) {
	i64, str, boolean := arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String, arrow.FixedWidthTypes.Boolean
	for _, c := range []struct {
		name string
		d    arrow.ArrayData
		want string // "": hashed
	}{
		{"int64", array.NewData(i64, 3, []*memory.Buffer{nil, bytesBuf(24)}, nil, 0, 0), ""},
		{"int64 a byte short", array.NewData(i64, 3, []*memory.Buffer{nil, bytesBuf(23)}, nil, 0, 0), "values buffer too short"},
		{"int64 without values", array.NewData(i64, 3, []*memory.Buffer{nil}, nil, 0, 0), "values buffer too short"},
		{"bool", array.NewData(boolean, 9, []*memory.Buffer{nil, bytesBuf(2)}, nil, 0, 0), ""},
		{"bool a byte short", array.NewData(boolean, 9, []*memory.Buffer{nil, bytesBuf(1)}, nil, 0, 0), "values buffer too short"},
		{"string", array.NewData(str, 2, []*memory.Buffer{nil, int32Buf(0, 1, 3), bytesBuf(3)}, nil, 0, 0), ""},
		{"string offsets short", array.NewData(str, 2, []*memory.Buffer{nil, int32Buf(0, 1), bytesBuf(3)}, nil, 0, 0), "offsets buffer too short"},
		{"string offsets backwards", array.NewData(str, 2, []*memory.Buffer{nil, int32Buf(0, 2, 1), bytesBuf(3)}, nil, 0, 0), "corrupt offsets"},
		{"string past its bytes", array.NewData(str, 2, []*memory.Buffer{nil, int32Buf(0, 1, 4), bytesBuf(3)}, nil, 0, 0), "corrupt offsets"},
		{"string without bytes", array.NewData(str, 2, []*memory.Buffer{nil, int32Buf(0, 1, 3)}, nil, 0, 0), "corrupt offsets"},
		{"list without values", array.NewData(arrow.ListOf(i64), 1, []*memory.Buffer{nil, int32Buf(0, 0)}, nil, 0, 0), "list without its values"},
		{"fixed-size list without values", array.NewData(arrow.FixedSizeListOf(2, i64), 1, []*memory.Buffer{nil}, nil, 0, 0), "list without its values"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, err := newNodeHash(c.d.DataType(), 0)
			if err != nil {
				t.Fatal(err)
			}
			err = n.add(c.d, 0, int64(c.d.Len()))
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestPatchChecksumBounds: patchChecksum reads only within the size given: a schema
// message or footer declared past it is refused, naming the bytes, and one that ends
// exactly at the last byte, or starts at the first, is read (then refused for holding no
// placeholder).
func TestPatchChecksumBounds(t *testing.T) {
	const size = 64
	for _, tc := range []struct {
		name              string
		msgLen, footerLen uint32
		want              string // the error; "" for one that is not about the bounds
	}{
		{"message past the end", size - 15, 0, "checksum: 49 bytes at 16 do not fit in the 64 written"},
		{"message to the end, footer before the start", size - 16, 100, "checksum: 100 bytes at -46 do not fit in the 64 written"},
		{"no message, footer from the start", 0, size - 10, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := make([]byte, size)
			binary.LittleEndian.PutUint32(data[8:], 0xffffffff)
			binary.LittleEndian.PutUint32(data[12:], tc.msgLen)
			binary.LittleEndian.PutUint32(data[size-10:], tc.footerLen)
			out, err := outfile.Create(filepath.Join(t.TempDir(), "x.arrow"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Abort()
			if _, err := out.Write(data); err != nil {
				t.Fatal(err)
			}
			err = patchChecksum(out, size, strings.Repeat("0", 64))
			if tc.want != "" && (err == nil || err.Error() != tc.want) {
				t.Errorf("err = %v, want %s", err, tc.want)
			}
			if tc.want == "" && (err == nil || !strings.HasPrefix(err.Error(), "checksum: ") || strings.Contains(err.Error(), "do not fit")) {
				t.Errorf("err = %v, want one past the bounds check", err)
			}
		})
	}
}

// TestTrailerWithRows: a stream whose checksum trailer carries rows is refused, naming the
// trailer's record batch. The trailer is built by hand: a record batch of three int32 rows
// whose metadata holds content_sha256.
func TestTrailerWithRows(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{4, 5}, nil)
	rec := b.NewRecord()
	defer rec.Release()

	s := withMeta(schema, MetaChecksum, checksumTrailer)
	var out bytes.Buffer
	w := ipc.NewWriterWithPayloadWriter(&streamPayloads{w: &out}, ipc.WithSchema(s))
	for i := 0; i < 2; i++ { // record batches 0 and 1; the trailer is batch 2
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	h, err := newContentHash(s)
	if err != nil {
		t.Fatal(err)
	}
	h.add(rec)
	h.add(rec)
	const rows = 3
	body := make([]byte, 16) // three int32 values, padded to 8 bytes
	for i := 0; i < rows; i++ {
		binary.LittleEndian.PutUint32(body[4*i:], uint32(7+i))
	}
	if err := writeMessage(&out, trailerWithRows(rows, int64(len(body)), h.sum())); err != nil {
		t.Fatal(err)
	}
	out.Write(body)
	out.Write([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})

	for _, pipe := range []bool{false, true} {
		err := readAs(t, readAll, out.Bytes(), pipe)
		want := "corrupt Arrow stream: record batch 2: the checksum trailer holds 3 rows, want none"
		if err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("pipe %v: %v, want ...%q", pipe, err, want)
		}
	}
}

// trailerWithRows is trailerMessage's record batch for one int32 column, but of the given
// number of rows, with a body of bodyLen bytes: one field node (rows, 0), the validity
// buffer empty (no nulls), the values at the body's start.
func trailerWithRows(rows, bodyLen int64, digest string) []byte {
	b := flatbuffers.NewBuilder(256)
	key, val := b.CreateString(MetaChecksum), b.CreateString(digest)
	b.StartObject(2) // KeyValue
	b.PrependUOffsetTSlot(0, key, 0)
	b.PrependUOffsetTSlot(1, val, 0)
	kv := b.EndObject()
	b.StartVector(4, 1, 4)
	b.PrependUOffsetT(kv)
	md := b.EndVector(1)
	b.StartVector(16, 1, 8) // FieldNode: length, null count
	b.Prep(8, 16)
	b.PrependInt64(0)
	b.PrependInt64(rows)
	nodes := b.EndVector(1)
	b.StartVector(16, 2, 8) // Buffers (offset, length), written last to first
	b.Prep(8, 16)
	b.PrependInt64(4 * rows)
	b.PrependInt64(0)
	b.Prep(8, 16)
	b.PrependInt64(0)
	b.PrependInt64(0)
	buffers := b.EndVector(2)
	b.StartObject(5) // RecordBatch: length, nodes, buffers
	b.PrependInt64Slot(0, rows, 0)
	b.PrependUOffsetTSlot(1, nodes, 0)
	b.PrependUOffsetTSlot(2, buffers, 0)
	rb := b.EndObject()
	b.StartObject(5) // Message
	b.PrependInt16Slot(0, metadataV5, 0)
	b.PrependByteSlot(messageHeaderType, headerRecordBatch, 0)
	b.PrependUOffsetTSlot(messageHeader, rb, 0)
	b.PrependInt64Slot(messageBodyLength, bodyLen, 0)
	b.PrependUOffsetTSlot(messageCustomMetadata, md, 0)
	b.Finish(b.EndObject())
	return b.FinishedBytes()
}

// readAll reads every record batch of the artifact at path, of any schema, and returns
// the error that ended the read, if any.
func readAll(path string) error {
	r, err := Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	for r.Next() {
	}
	return r.Err()
}
