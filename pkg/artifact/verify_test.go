package artifact

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
)

// TestFbufBounds: the flatbuffer reads take every position whose value lies in the
// buffer, the last bytes included, and refuse any that reach past either end, so that a
// corrupt offset is an error where the Arrow decoder would index out of range; values are
// little-endian.
func TestFbufBounds(t *testing.T) {
	b := fbuf{1, 2, 3, 4, 5, 6, 7, 8, 9}
	type read func(p int64) (uint64, error)
	for _, c := range []struct {
		name  string
		width int64
		read  read
		first uint64 // the value at 0
	}{
		{"u16", 2, func(p int64) (uint64, error) { v, err := b.u16(p); return uint64(v), err }, 0x0201},
		{"u32", 4, func(p int64) (uint64, error) { v, err := b.u32(p); return uint64(v), err }, 0x04030201},
		{"i64", 8, func(p int64) (uint64, error) { v, err := b.i64(p); return uint64(v), err }, 0x0807060504030201},
	} {
		t.Run(c.name, func(t *testing.T) {
			last := int64(len(b)) - c.width
			for p := int64(-c.width - 1); p <= int64(len(b))+1; p++ {
				v, err := c.read(p)
				if ok := p >= 0 && p <= last; ok != (err == nil) {
					t.Errorf("at %d of %d bytes: %v, want an error %v", p, len(b), err, !ok)
				}
				if p == 0 && v != c.first {
					t.Errorf("at 0: %#x, want %#x", v, c.first)
				}
			}
		})
	}
}

// flatTable is a flatbuffer of a vtable at 0 of vtSize bytes that gives one field at
// offset 4 of a table at 8, the table, whose field is an offset to a vector of n
// elements, and then the elements, elemBytes bytes of them: the buffer ends where they
// do.
func flatTable(vtSize uint16, n uint32, elemBytes int) fbuf {
	b := make([]byte, 0, 20+elemBytes)
	b = binary.LittleEndian.AppendUint16(b, vtSize) // vtable: its size,
	b = binary.LittleEndian.AppendUint16(b, 8)      // the table's size,
	b = binary.LittleEndian.AppendUint16(b, 4)      // slot 0 at the table's byte 4
	b = binary.LittleEndian.AppendUint16(b, 0)      // slot 1 absent
	b = binary.LittleEndian.AppendUint32(b, 8)      // the table at 8: its vtable 8 bytes before
	b = binary.LittleEndian.AppendUint32(b, 4)      // slot 0: the vector 4 bytes on, at 16
	b = binary.LittleEndian.AppendUint32(b, n)      // the vector's length
	return append(b, make([]byte, elemBytes)...)
}

// TestFbufTable: a table is taken when its vtable is at least the 4 bytes of its two
// sizes, even, and inside the buffer to its last byte, and refused otherwise; a vector
// is taken when its elements fit in the buffer to its last byte, and refused when it
// declares one element more, whatever the element's size.
func TestFbufTable(t *testing.T) {
	for _, c := range []struct {
		name    string
		b       fbuf
		tableOK bool
	}{
		{"vtable of 8 bytes", flatTable(8, 0, 0), true},
		{"vtable of its sizes only", flatTable(4, 0, 0), true},
		{"vtable of 2 bytes", flatTable(2, 0, 0), false},
		{"vtable of odd size", flatTable(7, 0, 0), false},
		{"table past the end of the buffer", fbuf(flatTable(8, 0, 0)[:8]), false},
		{"vtable past the end of the buffer", flatTable(22, 0, 0), false},
		{"vtable exactly to the end of the buffer", flatTable(20, 0, 0), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.b.table(8)
			if (err == nil) != c.tableOK {
				t.Errorf("table: %v, want an error %v", err, !c.tableOK)
			}
		})
	}
	// A vtable of 4 bytes holds no slot: the field is absent, not an error.
	if f, err := flatTable(4, 0, 0).field(8, 0); f != 0 || err != nil {
		t.Errorf("a vtable without slots: field at %d, %v; want absent", f, err)
	}
	// The vtable gives slot 0 and not slot 2 (beyond its 8 bytes).
	if f, err := flatTable(8, 0, 0).field(8, 0); f != 12 || err != nil {
		t.Errorf("slot 0: field at %d, %v; want 12", f, err)
	}
	if f, err := flatTable(8, 0, 0).field(8, 2); f != 0 || err != nil {
		t.Errorf("slot 2: field at %d, %v; want absent", f, err)
	}
	for _, elem := range []int64{1, 4, 24} {
		for _, n := range []uint32{0, 1, 3} {
			b := flatTable(8, n, int(n)*int(elem))
			start, got, err := b.vector(8, 0, elem)
			if err != nil || start != 20 || got != int64(n) {
				t.Errorf("%d elements of %d bytes to the buffer's end: start %d, %d elements, %v; want 20, %d", n, elem, start, got, err, n)
			}
			b = flatTable(8, n+1, int(n)*int(elem))
			if _, _, err := b.vector(8, 0, elem); !errors.Is(err, errFlatbuffer) {
				t.Errorf("%d elements of %d bytes declared, %d there: %v, want it refused", n+1, elem, n, err)
			}
		}
	}
}

// TestVerifyMessageKeyValues: a message's custom metadata is checked pair by pair, key
// and value: a trailer (a record batch message whose custom metadata holds the digest)
// reads, and one whose key or value declares a string longer than the metadata is
// refused, where the IPC reader would have allocated that much.
func TestVerifyMessageKeyValues(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	digest := strings.Repeat("5a", 32)
	meta, err := trailerMessage(schema, digest)
	if err != nil {
		t.Fatal(err)
	}
	info, err := verifyMessage(meta)
	if err != nil || !info.trailer || info.checksum != digest || info.header != headerRecordBatch {
		t.Fatalf("the trailer: %+v, %v", info, err)
	}
	for _, s := range []string{MetaChecksum, digest} {
		for _, n := range []uint32{uint32(len(s)) + 1 + uint32(len(meta)), 0x7fffffff} {
			t.Run(s[:8], func(t *testing.T) {
				at := bytes.Index(meta, []byte(s))
				if at < 4 || binary.LittleEndian.Uint32(meta[at-4:]) != uint32(len(s)) {
					t.Fatalf("%q not found after its length", s)
				}
				bad := bytes.Clone(meta)
				binary.LittleEndian.PutUint32(bad[at-4:], n)
				if _, err := verifyMessage(bad); !errors.Is(err, errFlatbuffer) {
					t.Errorf("a string of %d bytes declared: %v, want it refused", n, err)
				}
			})
		}
	}
}

// TestFileManyBatches: a file of several record batches, of different sizes and one
// empty, reads back every batch, in order, each from its own block of the footer, from a
// file and as a stream.
func TestFileManyBatches(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	sizes := []int{3, 1, 0, 4}
	path := filepath.Join(t.TempDir(), "many.arrow")
	w, err := Create(path, schema)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]int64
	next := int64(0)
	for _, n := range sizes {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		var vs []int64
		for range n {
			vs = append(vs, next*next)
			next++
		}
		b.AppendValues(vs, nil)
		col := b.NewArray()
		rec := array.NewRecord(schema, []arrow.Array{col}, int64(n))
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		col.Release()
		b.Release()
		want = append(want, vs)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var got [][]int64
	read := func(p string) error {
		got = nil
		r, err := Open(p)
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			got = append(got, slices.Clone(r.Record().Column(0).(*array.Int64).Int64Values()))
		}
		return r.Err()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		in := data
		if stream {
			in = toStream(t, data)
		}
		if err := readAs(t, read, in, false); err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		// An empty batch may or may not be handed out; the others must be, in order.
		got = slices.DeleteFunc(got, func(b []int64) bool { return len(b) == 0 })
		wantNonEmpty := slices.DeleteFunc(slices.Clone(want), func(b []int64) bool { return len(b) == 0 })
		if !reflect.DeepEqual(got, wantNonEmpty) {
			t.Errorf("stream %v: batches %v, want %v", stream, got, wantNonEmpty)
		}
	}
}

// fbField is a field of a schema flatbuffer built by fbSchema.
type fbField struct {
	name       string
	typeType   byte // 2: Int, 12: List, typeUnion
	children   []*fbField
	dictionary bool
	// shared makes the field's first child the same table as its second.
	shared bool
}

// Arrow's Type union tags used here.
const typeInt, typeList = 2, 12

// fbSchema builds a flatbuffer whose root is a Schema table of the fields and the custom
// metadata pairs, as the Arrow format lays them out (format/Schema.fbs).
func fbSchema(fields []*fbField, meta ...string) fbuf {
	b := flatbuffers.NewBuilder(256)
	keyValues := func(kvs []string) flatbuffers.UOffsetT {
		var offs []flatbuffers.UOffsetT
		for i := 0; i+1 < len(kvs); i += 2 {
			k, v := b.CreateString(kvs[i]), b.CreateString(kvs[i+1])
			b.StartObject(2)
			b.PrependUOffsetTSlot(0, k, 0)
			b.PrependUOffsetTSlot(1, v, 0)
			offs = append(offs, b.EndObject())
		}
		return tableVector(b, offs)
	}
	var field func(f *fbField) flatbuffers.UOffsetT
	field = func(f *fbField) flatbuffers.UOffsetT {
		var kids []flatbuffers.UOffsetT
		for _, c := range f.children {
			kids = append(kids, field(c))
		}
		if f.shared {
			kids[0] = kids[1]
		}
		children := tableVector(b, kids)
		name := b.CreateString(f.name)
		b.StartObject(2) // the type: Int {bitWidth, is_signed}, or an empty List
		if f.typeType == typeInt {
			b.PrependInt32Slot(0, 64, 0)
			b.PrependBoolSlot(1, true, false)
		}
		typ := b.EndObject()
		var dict flatbuffers.UOffsetT
		if f.dictionary {
			b.StartObject(4) // DictionaryEncoding
			b.PrependInt64Slot(0, 1, 0)
			dict = b.EndObject()
		}
		b.StartObject(7)
		b.PrependUOffsetTSlot(fieldName, name, 0)
		b.PrependBoolSlot(1, true, false)
		b.PrependByteSlot(fieldTypeType, f.typeType, 0)
		b.PrependUOffsetTSlot(fieldType, typ, 0)
		if f.dictionary {
			b.PrependUOffsetTSlot(fieldDictionary, dict, 0)
		}
		b.PrependUOffsetTSlot(fieldChildren, children, 0)
		return b.EndObject()
	}
	var offs []flatbuffers.UOffsetT
	for _, f := range fields {
		offs = append(offs, field(f))
	}
	fieldVec := tableVector(b, offs)
	md := keyValues(meta)
	b.StartObject(4)
	b.PrependUOffsetTSlot(schemaFields, fieldVec, 0)
	b.PrependUOffsetTSlot(schemaCustomMetadata, md, 0)
	b.Finish(b.EndObject())
	return fbuf(b.FinishedBytes())
}

// tableVector builds a vector of the tables at offs.
func tableVector(b *flatbuffers.Builder, offs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b.StartVector(4, len(offs), 4)
	for i := len(offs) - 1; i >= 0; i-- {
		b.PrependUOffsetT(offs[i])
	}
	return b.EndVector(len(offs))
}

// chain is a field nested depth deep: depth-1 lists around an Int.
func chain(depth int) *fbField {
	f := &fbField{name: "leaf", typeType: typeInt}
	for range depth - 1 {
		f = &fbField{name: "list", typeType: typeList, children: []*fbField{f}}
	}
	return f
}

// patchString sets the length before the first copy of s in b to n.
func patchString(t *testing.T, b fbuf, s string, n uint32) fbuf {
	t.Helper()
	at := bytes.Index(b, []byte(s))
	if at < 4 || binary.LittleEndian.Uint32(b[at-4:]) != uint32(len(s)) {
		t.Fatalf("%q not found after its length", s)
	}
	out := bytes.Clone(b)
	binary.LittleEndian.PutUint32(out[at-4:], n)
	return out
}

// TestVerifySchema: the schema check takes a schema of plain and list columns nested to
// maxFieldDepth, and refuses, before the Arrow decoder sees them, a union or dictionary
// column, nesting one deeper, a field table reached twice, and a name, a metadata value
// or a type table that reach past the metadata.
func TestVerifySchema(t *testing.T) {
	plain := []*fbField{{name: "x", typeType: typeInt}, {name: "l", typeType: typeList, children: []*fbField{{name: "item", typeType: typeInt}}}}
	for _, c := range []struct {
		name string
		b    func(t *testing.T) fbuf
		want string // "": accepted
	}{
		{"plain and list", func(*testing.T) fbuf { return fbSchema(plain, "k", "value") }, ""},
		{"nested to the bound", func(*testing.T) fbuf { return fbSchema([]*fbField{chain(maxFieldDepth)}) }, ""},
		{"nested past the bound", func(*testing.T) fbuf { return fbSchema([]*fbField{chain(maxFieldDepth + 1)}) }, "fields nested more than 8 deep"},
		{"union", func(*testing.T) fbuf { return fbSchema([]*fbField{{name: "u", typeType: typeUnion}}) }, "union columns are not used"},
		{"union child", func(*testing.T) fbuf {
			return fbSchema([]*fbField{{name: "l", typeType: typeList, children: []*fbField{{name: "u", typeType: typeUnion}}}})
		}, "union columns are not used"},
		{"dictionary", func(*testing.T) fbuf { return fbSchema([]*fbField{{name: "d", typeType: typeInt, dictionary: true}}) }, "dictionary-encoded columns are not used"},
		{"a field reached twice", func(*testing.T) fbuf {
			return fbSchema([]*fbField{{name: "l", typeType: typeList, shared: true, children: []*fbField{chain(1), chain(1)}}})
		}, "a field reached twice"},
		{"name past the end", func(t *testing.T) fbuf { return patchString(t, fbSchema(plain, "k", "value"), "item", 1<<20) }, "a vector of"},
		{"metadata value past the end", func(t *testing.T) fbuf { return patchString(t, fbSchema(plain, "k", "value"), "value", 1<<20) }, "a vector of"},
		{"metadata key past the end", func(t *testing.T) fbuf { return patchString(t, fbSchema(plain, "key", "v"), "key", 1<<20) }, "a vector of"},
		{"type table past the end", func(t *testing.T) fbuf {
			b := fbSchema([]*fbField{{name: "x", typeType: typeInt}})
			f := fieldTable(t, b)
			ft, _ := b.field(f, fieldType)
			binary.LittleEndian.PutUint32(b[ft:], uint32(int64(len(b))-ft))
			return b
		}, "corrupt flatbuffer metadata"},
		{"type tag at the end", func(t *testing.T) fbuf {
			b := fbSchema([]*fbField{{name: "x", typeType: typeInt}})
			f := fieldTable(t, b)
			soff, _ := b.u32(f)
			vt := f - int64(int32(soff))
			binary.LittleEndian.PutUint16(b[vt+4+2*fieldTypeType:], uint16(int64(len(b))-f))
			return b
		}, "corrupt flatbuffer metadata"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.b(t)
			root, err := b.root()
			if err != nil {
				t.Fatal(err)
			}
			err = b.verifySchema(root)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// fieldTable is the position of the first field table of the schema at b's root.
func fieldTable(t *testing.T, b fbuf) int64 {
	t.Helper()
	root, err := b.root()
	if err != nil {
		t.Fatal(err)
	}
	start, n, err := b.vector(root, schemaFields, 4)
	if err != nil || n == 0 {
		t.Fatalf("no fields: %v", err)
	}
	f, err := b.ref(start)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// fbFooter builds a file footer of a one-column schema and record batch blocks.
func fbFooter(blocks []fileBlock) []byte {
	b := flatbuffers.NewBuilder(256)
	name := b.CreateString("x")
	b.StartObject(2)
	b.PrependInt32Slot(0, 64, 0)
	typ := b.EndObject()
	b.StartObject(7)
	b.PrependUOffsetTSlot(fieldName, name, 0)
	b.PrependByteSlot(fieldTypeType, typeInt, 0)
	b.PrependUOffsetTSlot(fieldType, typ, 0)
	field := b.EndObject()
	fields := tableVector(b, []flatbuffers.UOffsetT{field})
	b.StartObject(4)
	b.PrependUOffsetTSlot(schemaFields, fields, 0)
	schema := b.EndObject()
	b.StartVector(blockSize, len(blocks), 8)
	for i := len(blocks) - 1; i >= 0; i-- {
		b.Prep(8, blockSize)
		b.PrependInt64(blocks[i].bodyLen)
		b.Pad(4)
		b.PrependInt32(int32(blocks[i].metaLen))
		b.PrependInt64(blocks[i].offset)
	}
	vec := b.EndVector(len(blocks))
	b.StartObject(5)
	b.PrependUOffsetTSlot(footerSchema, schema, 0)
	b.PrependUOffsetTSlot(footerRecordBatches, vec, 0)
	b.Finish(b.EndObject())
	return b.FinishedBytes()
}

// TestVerifyFooter: a footer's record batch blocks are handed back in order, each taken
// when it lies in the bytes before the footer, its end at the footer included, and
// refused, naming the batch, when it starts before the leading magic, has less metadata
// than a message's prefix, a negative body, or reaches past the footer by a byte.
func TestVerifyFooter(t *testing.T) {
	const end = 100
	for _, c := range []struct {
		name   string
		blocks []fileBlock
		want   string // "": accepted
	}{
		{"none", nil, ""},
		{"the smallest message, right after the magic", []fileBlock{{8, 8, 0}}, ""},
		{"two", []fileBlock{{8, 16, 24}, {48, 8, 40}}, ""},
		{"metadata to the footer", []fileBlock{{8, end - 8, 0}}, ""},
		{"body to the footer", []fileBlock{{8, 8, end - 16}}, ""},
		{"in the magic", []fileBlock{{7, 8, 0}}, "record batch 0: block at offset 7 with 8 bytes of metadata and 0 of body does not fit in the 100 bytes before the footer"},
		{"metadata shorter than a prefix", []fileBlock{{8, 7, 0}}, "record batch 0: block at offset 8 with 7 bytes"},
		{"negative body", []fileBlock{{8, 8, -1}}, "and -1 of body"},
		{"metadata a byte past the footer", []fileBlock{{8, end - 7, 0}}, "does not fit"},
		{"body a byte past the footer", []fileBlock{{8, 8, end - 15}}, "does not fit"},
		{"at the footer", []fileBlock{{end, 8, 0}}, "does not fit"},
		{"past the footer", []fileBlock{{end + 1, 8, 0}}, "does not fit"},
		{"second past the footer", []fileBlock{{8, 8, 0}, {16, 8, end}}, "record batch 1: block at offset 16"},
		{"lengths that overflow", []fileBlock{{8, 8, 1<<63 - 1}}, "does not fit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := verifyFooter(fbFooter(c.blocks), end)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want == "" && !reflect.DeepEqual(got, append([]fileBlock{}, c.blocks...)):
				t.Errorf("blocks %v, want %v", got, c.blocks)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestVerifyMessageHeader: a message whose header type lies at the end of its metadata,
// one byte past what is there, is refused, not read past the buffer; and
// messageChecksum, FuzzTrailer's oracle, finds a trailer's digest, finds none in a
// message without one, and refuses metadata that is no flatbuffer.
func TestVerifyMessageHeader(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	digest := strings.Repeat("5a", 32)
	meta, err := trailerMessage(schema, digest)
	if err != nil {
		t.Fatal(err)
	}
	b := fbuf(bytes.Clone(meta))
	root, err := b.root()
	if err != nil {
		t.Fatal(err)
	}
	soff, _ := b.u32(root)
	vt := root - int64(int32(soff))
	binary.LittleEndian.PutUint16(b[vt+4+2*messageHeaderType:], uint16(int64(len(b))-root))
	if _, err := verifyMessage(b); !errors.Is(err, errFlatbuffer) {
		t.Errorf("header type at the end of the metadata: %v, want it refused", err)
	}

	if got, found, err := messageChecksum(meta); got != digest || !found || err != nil {
		t.Errorf("messageChecksum(a trailer) = %q, %v, %v; want %q", got, found, err, digest)
	}
	// The trailer with its key renamed (to a name as long): a record batch message
	// whose custom metadata holds no checksum.
	plain := bytes.Clone(meta)
	at := bytes.Index(plain, []byte(MetaChecksum))
	copy(plain[at:], "not_the_sha256")
	if got, found, err := messageChecksum(plain); got != "" || found || err != nil {
		t.Errorf("messageChecksum(no checksum key) = %q, %v, %v; want none", got, found, err)
	}
	if _, _, err := messageChecksum([]byte{1, 2}); err == nil {
		t.Error("messageChecksum(2 bytes): no error")
	}
}
