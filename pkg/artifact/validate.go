package artifact

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
)

// The IPC readers build arrays from a record batch's buffers without checking that the
// buffers hold what the array's length and type require, or that offsets stay inside the
// values they index: a corrupt file gives arrays whose accessors panic or read past their
// data. validateRecord checks every column of a record batch read, so that what Reader
// hands out is safe to use: each buffer long enough for the array's offset and length,
// offsets non-decreasing and within their values, null counts consistent with the
// validity bitmap. It knows the types artifacts use and refuses others.

// validateRecord checks each column of rec.
func validateRecord(rec arrow.Record) error {
	for i, c := range rec.Columns() {
		if int64(c.Len()) != rec.NumRows() {
			return fmt.Errorf("column %d has %d rows, the batch %d", i, c.Len(), rec.NumRows())
		}
		if err := validateData(c.Data(), 0); err != nil {
			return fmt.Errorf("column %q: %w", rec.ColumnName(i), err)
		}
	}
	return nil
}

func validateData(d arrow.ArrayData, depth int) error {
	if depth > maxFieldDepth {
		return fmt.Errorf("nested more than %d deep", maxFieldDepth)
	}
	n, off := int64(d.Len()), int64(d.Offset())
	if n < 0 || off < 0 {
		return fmt.Errorf("negative length %d or offset %d", n, off)
	}
	end := off + n
	bufs := d.Buffers()
	bufLen := func(i int) int64 {
		if i >= len(bufs) || bufs[i] == nil {
			return 0
		}
		return int64(bufs[i].Len())
	}
	need := func(i int, bytes int64, what string) error {
		if got := bufLen(i); got < bytes {
			return fmt.Errorf("%s buffer of %d bytes, %d needed for %d values", what, got, bytes, n)
		}
		return nil
	}

	// Validity: a bitmap long enough, or none and no nulls.
	if len(bufs) == 0 {
		return fmt.Errorf("no buffers")
	}
	if bufs[0] != nil && bufs[0].Len() > 0 {
		if err := need(0, (end+7)/8, "validity"); err != nil {
			return err
		}
		nulls := n - int64(bitutil.CountSetBits(bufs[0].Bytes(), int(off), int(n)))
		if declared := int64(d.NullN()); declared != nulls {
			return fmt.Errorf("%d nulls declared, %d in the validity bitmap", declared, nulls)
		}
	} else if d.NullN() != 0 {
		return fmt.Errorf("%d nulls declared without a validity bitmap", d.NullN())
	}

	switch dt := d.DataType().(type) {
	case *arrow.BooleanType:
		return need(1, (end+7)/8, "values")
	case arrow.FixedWidthDataType:
		switch dt.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
			arrow.FLOAT32, arrow.FLOAT64:
			return need(1, end*int64(dt.BitWidth()/8), "values")
		}
	case *arrow.StringType, *arrow.BinaryType:
		return checkOffsetsBuffer(d, n, off, bufLen(2), need)
	case *arrow.ListType:
		if len(d.Children()) != 1 {
			return fmt.Errorf("list without its values")
		}
		child := d.Children()[0]
		if err := validateData(child, depth+1); err != nil {
			return fmt.Errorf("list values: %w", err)
		}
		return checkOffsetsBuffer(d, n, off, int64(child.Len()), need)
	case *arrow.FixedSizeListType:
		if len(d.Children()) != 1 {
			return fmt.Errorf("list without its values")
		}
		child := d.Children()[0]
		if err := validateData(child, depth+1); err != nil {
			return fmt.Errorf("list values: %w", err)
		}
		if size := int64(dt.Len()); size < 0 || (size > 0 && int64(child.Len())/size < end) {
			return fmt.Errorf("%d values for %d lists of %d", child.Len(), end, dt.Len())
		}
		return nil
	}
	return fmt.Errorf("type %s is not used by any artifact", d.DataType())
}

// checkOffsetsBuffer checks the int32 offsets of a string or list array: n+1 of them from
// off, non-decreasing, from 0 or more to at most limit.
func checkOffsetsBuffer(d arrow.ArrayData, n, off, limit int64, need func(int, int64, string) error) error {
	if n == 0 {
		return nil
	}
	if err := need(1, (off+n+1)*4, "offsets"); err != nil {
		return err
	}
	offsets := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[off : off+n+1]
	return checkOffsets(offsets, int(limit)) // refuses a first offset below 0 too
}
