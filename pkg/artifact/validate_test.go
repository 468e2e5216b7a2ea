package artifact

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// bytesBuf is a buffer of n zero bytes.
func bytesBuf(n int) *memory.Buffer { return memory.NewBufferBytes(make([]byte, n)) }

// int32Buf is a buffer of int32 values or offsets.
func int32Buf(vs ...int32) *memory.Buffer {
	b := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return memory.NewBufferBytes(b)
}

// bitmapBuf is a validity bitmap of nbytes bytes with every bit set but those in clear.
func bitmapBuf(nbytes int, clear ...int) *memory.Buffer {
	b := make([]byte, nbytes)
	for i := range b {
		b[i] = 0xff
	}
	for _, i := range clear {
		b[i/8] &^= 1 << (i % 8)
	}
	return memory.NewBufferBytes(b)
}

// nestedLists is an empty column of depth lists around int32 values: its int32 leaves
// are at depth depth.
func nestedLists(depth int, fixed bool) arrow.ArrayData {
	dt := arrow.PrimitiveTypes.Int32
	d := arrow.ArrayData(array.NewData(dt, 0, []*memory.Buffer{nil, nil}, nil, 0, 0))
	for range depth {
		if fixed {
			dt = arrow.FixedSizeListOf(2, dt)
			d = array.NewData(dt, 0, []*memory.Buffer{nil}, []arrow.ArrayData{d}, 0, 0)
		} else {
			dt = arrow.ListOf(dt)
			d = array.NewData(dt, 0, []*memory.Buffer{nil, nil}, []arrow.ArrayData{d}, 0, 0)
		}
	}
	return d
}

// TestValidateData: validateData accepts an array whose buffers hold what its type,
// length and offset need, exactly, and refuses, saying what is wrong, one whose
// buffers are a byte short, whose offsets go backwards or past their values, whose null
// count disagrees with its bitmap, that nests too deep or has a type no artifact uses.
// The IPC reader builds arrays from these buffers unchecked, so each refusal here is an
// accessor that would otherwise panic or read past its data.
func TestValidateData(t *testing.T) {
	i64, f32, str, boolean := arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float32, arrow.BinaryTypes.String, arrow.FixedWidthTypes.Boolean
	i32 := arrow.PrimitiveTypes.Int32
	data := func(dt arrow.DataType, n, off, nulls int, bufs ...*memory.Buffer) arrow.ArrayData {
		return array.NewData(dt, n, bufs, nil, nulls, off)
	}
	list := func(dt arrow.DataType, n, off int, offsets *memory.Buffer, children ...arrow.ArrayData) arrow.ArrayData {
		return array.NewData(dt, n, []*memory.Buffer{nil, offsets}, children, 0, off)
	}
	fixedList := func(size int32, n, off int, children ...arrow.ArrayData) arrow.ArrayData {
		return array.NewData(arrow.FixedSizeListOf(size, f32), n, []*memory.Buffer{nil}, children, 0, off)
	}
	floats := func(n int) arrow.ArrayData { return data(f32, n, 0, 0, nil, bytesBuf(4*n)) }
	ints := func(n int) arrow.ArrayData { return data(i32, n, 0, 0, nil, bytesBuf(4*n)) }

	for _, c := range []struct {
		name string
		d    arrow.ArrayData
		want string // "": accepted; else a piece of the error
	}{
		{"int64", data(i64, 3, 0, 0, nil, bytesBuf(24)), ""},
		{"int64 a byte short", data(i64, 3, 0, 0, nil, bytesBuf(23)), "values buffer of 23 bytes, 24 needed for 3 values"},
		{"int64 at an offset", data(i64, 2, 1, 0, nil, bytesBuf(24)), ""},
		{"int64 at an offset, a byte short", data(i64, 2, 1, 0, nil, bytesBuf(23)), "values buffer of 23 bytes, 24 needed for 2 values"},
		{"float32", data(f32, 3, 0, 0, nil, bytesBuf(12)), ""},
		{"float32 a byte short", data(f32, 3, 0, 0, nil, bytesBuf(11)), "values buffer of 11 bytes, 12 needed"},
		{"empty int64 without values", data(i64, 0, 0, 0, nil, nil), ""},
		{"no values buffer", data(i64, 1, 0, 0, nil), "values buffer of 0 bytes, 8 needed"},
		{"no buffers", data(i64, 0, 0, 0), "no buffers"},
		{"negative length", data(i64, -1, 0, 0, nil, bytesBuf(8)), "negative length -1"},
		{"negative offset", data(i64, 1, -1, 0, nil, bytesBuf(8)), "offset -1"},

		{"bool 8 values in a byte", data(boolean, 8, 0, 0, nil, bytesBuf(1)), ""},
		{"bool 9 values in a byte", data(boolean, 9, 0, 0, nil, bytesBuf(1)), "values buffer of 1 bytes, 2 needed for 9 values"},
		{"bool 8 values from bit 1 in a byte", data(boolean, 8, 1, 0, nil, bytesBuf(1)), "values buffer of 1 bytes, 2 needed for 8 values"},

		{"validity, no nulls", data(i64, 9, 0, 0, bitmapBuf(2), bytesBuf(72)), ""},
		{"validity a byte short", data(i64, 9, 0, 0, bitmapBuf(1), bytesBuf(72)), "validity buffer of 1 bytes, 2 needed for 9 values"},
		{"validity at an offset a byte short", data(i64, 8, 1, 0, bitmapBuf(1), bytesBuf(72)), "validity buffer of 1 bytes, 2 needed for 8 values"},
		{"a null undeclared", data(i64, 9, 0, 0, bitmapBuf(2, 8), bytesBuf(72)), "0 nulls declared, 1 in the validity bitmap"},
		{"a null declared", data(i64, 9, 0, 1, bitmapBuf(2, 8), bytesBuf(72)), ""},
		{"a null declared, none in the bitmap", data(i64, 9, 0, 1, bitmapBuf(2), bytesBuf(72)), "1 nulls declared, 0 in the validity bitmap"},
		{"a null before the offset", data(i64, 8, 1, 0, bitmapBuf(2, 0), bytesBuf(72)), ""},
		{"a null at the offset", data(i64, 8, 1, 0, bitmapBuf(2, 1), bytesBuf(72)), "0 nulls declared, 1 in the validity bitmap"},
		{"a null past the end", data(i64, 8, 0, 0, bitmapBuf(2, 8), bytesBuf(72)), ""},
		{"nulls without a bitmap", data(i64, 2, 0, 1, nil, bytesBuf(16)), "1 nulls declared without a validity bitmap"},
		{"nulls with an empty bitmap", data(i64, 2, 0, 1, bytesBuf(0), bytesBuf(16)), "1 nulls declared without a validity bitmap"},

		{"string", data(str, 2, 0, 0, nil, int32Buf(0, 2, 5), bytesBuf(5)), ""},
		{"string past its bytes", data(str, 2, 0, 0, nil, int32Buf(0, 2, 5), bytesBuf(4)), "corrupt offsets"},
		{"string offsets backwards", data(str, 2, 0, 0, nil, int32Buf(0, 3, 2), bytesBuf(5)), "corrupt offsets"},
		{"string negative offset", data(str, 2, 0, 0, nil, int32Buf(-1, 2, 5), bytesBuf(5)), "corrupt offsets"},
		{"string offsets a value short", data(str, 2, 0, 0, nil, int32Buf(0, 2), bytesBuf(5)), "offsets buffer of 8 bytes, 12 needed for 2 values"},
		{"string at an offset", data(str, 2, 1, 0, nil, int32Buf(0, 1, 2, 5), bytesBuf(5)), ""},
		{"string at an offset, offsets a value short", data(str, 2, 1, 0, nil, int32Buf(0, 1, 2), bytesBuf(5)), "offsets buffer of 12 bytes, 16 needed for 2 values"},
		{"string at an offset past its bytes", data(str, 1, 1, 0, nil, int32Buf(0, 1, 6), bytesBuf(5)), "corrupt offsets"},
		{"empty string without offsets", data(str, 0, 0, 0, nil, nil, nil), ""},

		{"list", list(arrow.ListOf(i32), 2, 0, int32Buf(0, 2, 5), ints(5)), ""},
		{"list past its values", list(arrow.ListOf(i32), 2, 0, int32Buf(0, 2, 6), ints(5)), "corrupt offsets"},
		{"list offsets backwards", list(arrow.ListOf(i32), 2, 0, int32Buf(0, 3, 2), ints(5)), "corrupt offsets"},
		{"list without values", list(arrow.ListOf(i32), 2, 0, int32Buf(0, 2, 5)), "list without its values"},
		{"list of corrupt values", list(arrow.ListOf(i32), 1, 0, int32Buf(0, 1), data(i32, 1, 0, 0, nil, bytesBuf(3))), "list values: values buffer of 3 bytes, 4 needed"},

		{"fixed-size list", fixedList(2, 3, 0, floats(6)), ""},
		{"fixed-size list a value short", fixedList(2, 3, 0, floats(5)), "5 values for 3 lists of 2"},
		{"fixed-size list at an offset", fixedList(2, 2, 1, floats(6)), ""},
		{"fixed-size list at an offset, a value short", fixedList(2, 2, 1, floats(5)), "5 values for 3 lists of 2"},
		{"fixed-size list without values", fixedList(2, 3, 0), "list without its values"},
		{"fixed-size list of corrupt values", fixedList(2, 1, 0, data(f32, 2, 0, 0, nil, bytesBuf(7))), "list values: values buffer of 7 bytes, 8 needed"},

		{"lists nested to the bound", nestedLists(maxFieldDepth, false), ""},
		{"lists nested past the bound", nestedLists(maxFieldDepth+1, false), "nested more than 8 deep"},
		{"fixed-size lists nested to the bound", nestedLists(maxFieldDepth, true), ""},
		{"fixed-size lists nested past the bound", nestedLists(maxFieldDepth+1, true), "nested more than 8 deep"},

		{"date32", data(arrow.FixedWidthTypes.Date32, 1, 0, 0, nil, bytesBuf(4)), "type date32 is not used by any artifact"},
		{"struct", data(arrow.StructOf(), 1, 0, 0, nil), "is not used by any artifact"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := validateData(c.d, 0)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestValidateRecordNamesColumn: a record batch with a corrupt column is refused with the
// column's name, which the reader puts after the input's name and the batch.
func TestValidateRecordNamesColumn(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "good", Type: arrow.PrimitiveTypes.Int64},
		{Name: "nulls", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	good := array.MakeFromData(array.NewData(arrow.PrimitiveTypes.Int64, 2, []*memory.Buffer{nil, bytesBuf(16)}, nil, 0, 0))
	// A null that the column does not declare (the Int64 array slices its values buffer
	// as it is made, so a short buffer would panic here rather than in a reader).
	bad := array.MakeFromData(array.NewData(arrow.PrimitiveTypes.Int64, 2, []*memory.Buffer{bitmapBuf(1, 1), bytesBuf(16)}, nil, 0, 0))
	for _, c := range []struct {
		name string
		cols []arrow.Array
		want string
	}{
		{"valid", []arrow.Array{good, good}, ""},
		{"second column corrupt", []arrow.Array{good, bad}, `column "nulls": 0 nulls declared, 1 in the validity bitmap`},
		{"first column corrupt", []arrow.Array{bad, good}, `column "good": 0 nulls declared, 1 in the validity bitmap`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := validateRecord(array.NewRecord(schema, c.cols, 2))
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestListSlicesCorrupt checks listSlices's own checks, which guard callers against a list
// array that validateRecord has not seen: the offsets in bounds and in order, and the error
// naming the input when there is a name.
func TestListSlicesCorrupt(t *testing.T) {
	i32 := arrow.PrimitiveTypes.Int32
	list := func(n int, offsets *memory.Buffer) *array.List {
		values := array.NewData(i32, 4, []*memory.Buffer{nil, int32Buf(1, 2, 3, 4)}, nil, 0, 0)
		return array.MakeFromData(array.NewData(arrow.ListOf(i32), n, []*memory.Buffer{nil, offsets}, []arrow.ArrayData{values}, 0, 0)).(*array.List)
	}
	for _, tc := range []struct {
		name, file string
		a          *array.List
		want       string // "" for no error
	}{
		{"in bounds", "q.arrow", list(2, int32Buf(0, 1, 4)), ""},
		{"an offset short", "q.arrow", list(2, int32Buf(0, 1)), "q.arrow: column top: corrupt list offsets"},
		{"unnamed, an offset short", "", list(2, int32Buf(0, 1)), "column top: corrupt list offsets"},
		{"backwards", "q.arrow", list(2, int32Buf(0, 3, 2)), "q.arrow: column top: corrupt offsets"},
		{"unnamed, past the values", "", list(2, int32Buf(0, 1, 5)), "column top: corrupt offsets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			offsets, values, err := listSlices(tc.file, "top", tc.a)
			if tc.want != "" {
				if err == nil || err.Error() != tc.want {
					t.Errorf("err = %v, want %s", err, tc.want)
				}
				return
			}
			if err != nil || len(offsets) != tc.a.Len()+1 || len(values) != 4 {
				t.Errorf("offsets %v, values %v, err %v", offsets, values, err)
			}
		})
	}
}
