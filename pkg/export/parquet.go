package export

import (
	"fmt"
	"io"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// Vectors are one list column a row (list<float32>, d values in every row): pandas
// (through pyarrow) gives one array per row, np.stack(df.axis) the [rows, d] matrix;
// DuckDB gives FLOAT[]; polars a List(Float32) column. Wide columns (axis_0 ... axis_1599) would make a schema of
// thousands of columns, which every reader handles worse; a list column keeps a row one
// entity and its vector one value. The file's key-value metadata holds, per column, its
// unit, and the model and dim (the checkpoint's, or the cones' when only cones are
// exported), and with a checkpoint its angle map and embedding range.

// parquetRowGroupBytes bounds a row group's float data, so that a reader holds one row
// group at a time in bounded memory (a variable for the tests, which cut small groups).
var parquetRowGroupBytes = 64 << 20

func writeParquet(d dirWriter, man *Manifest, tables []Table, params []Tensor) ([]FileInfo, error) {
	var files []FileInfo
	meta := map[string]string{}
	switch {
	case man.Checkpoint != nil:
		meta["model"], meta["dim"] = man.Checkpoint.Model, strconv.Itoa(man.Checkpoint.Dim)
		meta["embedding_range"] = strconv.FormatFloat(man.Checkpoint.EmbeddingRange, 'g', -1, 64)
		meta["angle_map"] = man.Checkpoint.AngleMap
	case man.Cones != nil:
		// Cones alone: their angles are the model's output, so there is no angle map to
		// state, but the model and dim they were embedded under are the cones' own.
		meta["model"], meta["dim"] = man.Cones.Model, strconv.Itoa(man.Cones.Dim)
	}
	for _, t := range tables {
		name := t.Name + ".parquet"
		fields, cols := make([]arrow.Field, len(t.Columns)), make([]arrow.Array, len(t.Columns))
		fi := FileInfo{File: name, Table: t.Name, About: t.About}
		rows := t.Rows
		fi.Rows = &rows
		md := map[string]string{}
		for k, v := range meta {
			md[k] = v
		}
		var rowBytes int
		for i := range t.Columns {
			c := &t.Columns[i]
			fields[i], cols[i] = arrowColumn(c, t.Rows)
			rowBytes += 4 * c.Width
			if c.Unit != "" {
				md["unit."+c.Name] = c.Unit
			}
			fi.Columns = append(fi.Columns, ColumnInfo{Name: c.Name, Type: fields[i].Type.String(), Unit: c.Unit, About: c.About})
		}
		schema := arrow.NewSchema(fields, func() *arrow.Metadata { m := arrow.MetadataFrom(md); return &m }())
		rec := array.NewRecord(schema, cols, int64(t.Rows))
		for _, c := range cols {
			c.Release()
		}
		groupRows := max(1, parquetRowGroupBytes/max(1, rowBytes))
		err := d.WriteFile(name, func(w io.Writer) error { return writeRecord(w, rec, groupRows) })
		rec.Release()
		if err != nil {
			return nil, err
		}
		files = append(files, fi)
	}
	if len(params) > 0 {
		file, err := writeParams(d, meta, params)
		if err != nil {
			return nil, err
		}
		files = append(files, file)
	}
	return files, nil
}

// dirWriter is what the writers need of an output folder (outfile.Dir).
type dirWriter interface {
	WriteFile(rel string, write func(w io.Writer) error) error
}

// vectorType is a vector column's type: list<float32> of d items a row. Not
// fixed_size_list: pqarrow (arrow/go v17) writes a fixed_size_list column's values as
// nulls, and ignores the offset of a slice of one (a row group after the first). The
// items are declared nullable (none is null), as pyarrow writes lists.
func vectorType() *arrow.ListType {
	return arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Float32, Nullable: true})
}

// arrowColumn builds a column's field and array.
func arrowColumn(c *Column, rows int) (arrow.Field, arrow.Array) {
	mem := memory.DefaultAllocator
	switch {
	case c.Width > 0:
		typ := vectorType()
		b := array.NewListBuilderWithField(mem, typ.ElemField())
		defer b.Release()
		vb := b.ValueBuilder().(*array.Float32Builder)
		vb.Reserve(len(c.F32))
		for i := range rows {
			b.Append(true)
			vb.AppendValues(c.F32[i*c.Width:(i+1)*c.Width], nil)
		}
		return arrow.Field{Name: c.Name, Type: typ}, b.NewArray()
	case c.IsStr:
		b := array.NewStringBuilder(mem)
		defer b.Release()
		for i := range rows {
			if c.Str == nil {
				b.AppendNull()
			} else {
				b.Append(c.Str[i])
			}
		}
		return arrow.Field{Name: c.Name, Type: arrow.BinaryTypes.String, Nullable: c.Str == nil}, b.NewArray()
	case c.I64 != nil:
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.AppendValues(c.I64, nil)
		return arrow.Field{Name: c.Name, Type: arrow.PrimitiveTypes.Int64}, b.NewArray()
	case c.I32 != nil:
		b := array.NewInt32Builder(mem)
		defer b.Release()
		b.AppendValues(c.I32, nil)
		return arrow.Field{Name: c.Name, Type: arrow.PrimitiveTypes.Int32}, b.NewArray()
	default:
		b := array.NewInt8Builder(mem)
		defer b.Release()
		b.AppendValues(c.I8, nil)
		return arrow.Field{Name: c.Name, Type: arrow.PrimitiveTypes.Int8}, b.NewArray()
	}
}

// writeParams writes the other parameter tensors as params.parquet: one row per tensor,
// its name, shape and row-major values.
func writeParams(d dirWriter, meta map[string]string, params []Tensor) (FileInfo, error) {
	mem := memory.DefaultAllocator
	names := array.NewStringBuilder(mem)
	rowsB, colsB := array.NewInt64Builder(mem), array.NewInt64Builder(mem)
	vals := array.NewListBuilderWithField(mem, vectorType().ElemField())
	defer func() { names.Release(); rowsB.Release(); colsB.Release(); vals.Release() }()
	vb := vals.ValueBuilder().(*array.Float32Builder)
	for _, p := range params {
		names.Append(p.Name)
		rowsB.Append(int64(p.Rows))
		colsB.Append(int64(p.Cols))
		vals.Append(true)
		vb.AppendValues(p.Data, nil)
	}
	fields := []arrow.Field{
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "rows", Type: arrow.PrimitiveTypes.Int64},
		{Name: "cols", Type: arrow.PrimitiveTypes.Int64},
		{Name: "values", Type: vals.Type()},
	}
	md := arrow.MetadataFrom(meta)
	cols := []arrow.Array{names.NewArray(), rowsB.NewArray(), colsB.NewArray(), vals.NewArray()}
	rec := array.NewRecord(arrow.NewSchema(fields, &md), cols, int64(len(params)))
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()
	n := len(params)
	fi := FileInfo{File: "params.parquet", Rows: &n, Unit: Raw,
		About: "the model's other parameter tensors, as stored (raw): one row per tensor; values row-major, reshape to [rows, cols]"}
	about := map[string]string{"name": "the checkpoint's tensor name (modulus, intersection.*, projection.*)", "rows": "the tensor's rows",
		"cols": "the tensor's columns", "values": "rows·cols values, row-major"}
	for _, f := range fields {
		fi.Columns = append(fi.Columns, ColumnInfo{Name: f.Name, Type: f.Type.String(), About: about[f.Name]})
	}
	return fi, d.WriteFile(fi.File, func(w io.Writer) error { return writeRecord(w, rec, 1) })
}

// writeRecord writes rec as one Parquet file, groupRows rows a row group, Snappy
// compressed (every Parquet reader has Snappy), with the Arrow schema stored. The root
// of the schema is REQUIRED, as the format asks and as pyarrow writes it: pqarrow's
// default, REPEATED, makes a reader that follows the format (hyparquet) take every
// column for a repeated one.
func writeRecord(w io.Writer, rec arrow.Record, groupRows int) error {
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithRootRepetition(parquet.Repetitions.Required), parquet.WithCreatedBy("rocone embed export"))
	fw, err := pqarrow.NewFileWriter(rec.Schema(), w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	n := int(rec.NumRows())
	for lo := 0; lo < n || (n == 0 && lo == 0); lo += groupRows {
		hi := min(lo+groupRows, n)
		part := rec.NewSlice(int64(lo), int64(hi))
		err = fw.Write(part)
		part.Release()
		if err != nil {
			fw.Close()
			return fmt.Errorf("parquet: %w", err)
		}
		if n == 0 {
			break
		}
	}
	if err := fw.Close(); err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	return nil
}
