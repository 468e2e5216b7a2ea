package artifact

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// tableWriter is the part every row-oriented artifact writer shares: a record builder
// over the artifact's schema, flushed as a record batch every maxBatchRows rows, on top
// of the atomic (or stdout) record writer.
type tableWriter struct {
	name string
	w    *recordWriter
	rb   *array.RecordBuilder
}

func createTable(path string, s *spec, meta map[string]string) (*tableWriter, error) {
	schema := s.schema(meta)
	rw, err := createRecords(path, schema)
	if err != nil {
		return nil, err
	}
	return &tableWriter{name: displayName(path, "stdout"), w: rw, rb: array.NewRecordBuilder(memory.DefaultAllocator, schema)}, nil
}

// field returns the builder of column i.
func (t *tableWriter) field(i int) array.Builder { return t.rb.Field(i) }

// rowDone is called once a row is appended to every column; it flushes a full batch.
func (t *tableWriter) rowDone() error {
	if t.rb.Field(0).Len() >= maxBatchRows {
		return t.flush()
	}
	return nil
}

func (t *tableWriter) flush() error {
	if t.rb.Field(0).Len() == 0 {
		return nil
	}
	rec := t.rb.NewRecord()
	defer rec.Release()
	return t.w.write(rec)
}

func (t *tableWriter) close() error {
	if t.rb == nil {
		return t.w.close()
	}
	err := t.flush()
	t.rb.Release()
	t.rb = nil
	if err != nil {
		t.w.abort()
		return err
	}
	return t.w.close()
}

func (t *tableWriter) abort() {
	if t.rb != nil {
		t.rb.Release()
		t.rb = nil
	}
	t.w.abort()
}

func (t *tableWriter) usable() error {
	if t.rb == nil {
		return fmt.Errorf("%s: write after close", t.name)
	}
	return nil
}

// readTable opens path ("-" for stdin), checks its schema against the spec that specFor
// derives from the metadata (after its own checks, which may name the input), and calls
// each with every record batch and the row number of its first row.
func readTable(path string, specFor func(name string, md arrow.Metadata) (*spec, error), each func(rec arrow.Record, first int64) error) error {
	r, err := Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	s, err := specFor(r.name, r.Schema().Metadata())
	if err != nil {
		return err
	}
	if err := s.check(r.name, r.Schema()); err != nil {
		return err
	}
	var rows int64
	for r.Next() {
		rec := r.Record()
		for i, c := range rec.Columns() {
			if err := checkNoNulls(r.name, s.fields[i].Name, c, rows); err != nil {
				return err
			}
		}
		if err := each(rec, rows); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		rows += rec.NumRows()
	}
	if err := r.Err(); err != nil {
		return err
	}
	if rows == 0 {
		return fmt.Errorf("%s: empty artifact (no rows)", r.name)
	}
	return nil
}

// kindIs checks the artifact kind before anything else is read from the metadata, so that
// a wrong file gets the error that says so.
func kindIs(name string, md arrow.Metadata, kind string) error {
	got, ok := md.GetValue(metaArtifact)
	switch {
	case !ok:
		return fmt.Errorf("%s: no %q in the schema metadata; not a pipeline artifact (want %q)", name, metaArtifact, kind)
	case got != kind:
		return fmt.Errorf("%s: artifact is %q, want %q", name, got, kind)
	}
	return nil
}

// QueriesDigest is a content hash of a queries artifact's rows: the same queries give the
// same digest whether they were read from a file or a stream. Later artifacts record it to
// tell which queries they were computed from.
func QueriesDigest(qs []Query) string {
	h := sha256.New()
	var buf []byte
	put := func(v int64) { buf = binary.LittleEndian.AppendUint64(buf[:0], uint64(v)); h.Write(buf) }
	putList := func(l []int32) {
		put(int64(len(l)))
		buf = buf[:0]
		for _, x := range l {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(x))
		}
		h.Write(buf)
	}
	for i := range qs {
		q := &qs[i]
		put(q.ID)
		put(int64(len(q.Type)))
		io.WriteString(h, q.Type)
		put(int64(len(q.Structure)))
		io.WriteString(h, q.Structure)
		putList(q.Anchors)
		putList(q.Relations)
		putList(q.Easy)
		putList(q.Hard)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// FileDigest is the SHA-256 of a file's bytes.
func FileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
