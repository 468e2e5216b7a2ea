package export

import (
	"bytes"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/file"
)

// TestWriteRecordRowGroups: writeRecord cuts a record into row groups of groupRows rows,
// the last one shorter, with no empty group after a record that fills its groups exactly;
// an empty record is one empty row group. Read back with Arrow's Parquet reader.
func TestWriteRecordRowGroups(t *testing.T) {
	for _, c := range []struct {
		rows, groupRows int
		want            []int64 // rows of each row group
	}{
		{4, 2, []int64{2, 2}},
		{5, 2, []int64{2, 2, 1}},
		{4, 4, []int64{4}},
		{4, 5, []int64{4}},
		{3, 1, []int64{1, 1, 1}},
		{0, 1, []int64{0}},
		{0, 3, []int64{0}},
	} {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for i := range c.rows {
			b.Append(int64(i))
		}
		col := b.NewArray()
		b.Release()
		rec := array.NewRecord(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, int64(c.rows))
		col.Release()
		var buf bytes.Buffer
		err := writeRecord(&buf, rec, c.groupRows)
		rec.Release()
		if err != nil {
			t.Fatalf("%d rows, %d a group: %v", c.rows, c.groupRows, err)
		}
		r, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%d rows, %d a group: reading back: %v", c.rows, c.groupRows, err)
		}
		var got []int64
		for i := range r.NumRowGroups() {
			got = append(got, r.MetaData().RowGroup(i).NumRows())
		}
		r.Close()
		if !slices.Equal(got, c.want) {
			t.Errorf("%d rows, %d a group: row groups of %v rows, want %v", c.rows, c.groupRows, got, c.want)
		}
	}
}
