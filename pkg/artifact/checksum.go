package artifact

// # Checksums: what was written is what is read
//
// Every artifact carries a SHA-256 of its content, which its writer computes as it writes
// and every reader here recomputes as it reads: a changed value, a dropped or added row,
// an edited metadata value is refused with an error naming the input, where before it
// was read as another valid artifact and moved the results without a word.
//
// What is hashed (contentHash) is the content as a reader sees it, not the bytes of the
// IPC encoding: the schema metadata (every key but content_sha256, sorted), the column
// names, the number of rows, and each column's values, the lengths of its lists and
// strings hashed as one stream and their values as another, so that neither the batch
// boundaries nor the encoding (file or stream, offsets, padding, another Arrow writer)
// change the digest. A file and the stream of the same artifact have the same digest.
// Validity bitmaps are not hashed: no artifact holds a null, and every reader refuses
// one.
//
// Where the digest goes:
//
//   - In a file (IPC file format, written to a path), in the schema metadata key
//     content_sha256, as 64 hex digits, where any Arrow reader sees it. The writer does
//     not know the digest until the last row, and the schema comes first: it writes a
//     placeholder of the same length, and patches the digest over it, in the leading
//     schema message and in the footer, just before the temporary file is renamed into
//     place (recordWriter.close). Nothing is at the path until then.
//   - In a stream (IPC stream format, stdout and pipes), whose schema is on its way
//     downstream before the first row is known, the schema says content_sha256=trailer,
//     and the digest follows the last record batch in a trailer: one more record batch of
//     zero rows whose message carries content_sha256 in its custom metadata (Arrow's
//     per-message key-value metadata), then the end-of-stream marker. Arrow readers
//     elsewhere (pyarrow, apache-arrow in JavaScript) read the trailer as an empty batch,
//     which changes no table; readers here check that it is the last message and do not
//     hand it out. A per-batch checksum in each batch's metadata was the alternative; one
//     trailer also covers the batches' order and count (a batch dropped or repeated
//     whole), which per-batch digests would not, and costs one message.
//
// A stream whose schema holds a hex digest (a file's schema copied by a converter) is
// checked against it, with or without a trailer. An artifact with no content_sha256 was
// written before checksums (or not by this pipeline) and is refused, naming the stage
// that writes it again (missingChecksum).

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	flatbuffers "github.com/google/flatbuffers/go"
)

// MetaChecksum is the schema metadata key of an artifact's content digest, and the key
// of a stream trailer's message metadata.
const MetaChecksum = "content_sha256"

// checksumTrailer is the schema's content_sha256 in a stream: the digest is in the
// trailer.
const checksumTrailer = "trailer"

// checksumPlaceholder is what a file's schema holds until the digest is patched over it:
// as long as a digest, and no hex, so that a file left unpatched fails as one.
var checksumPlaceholder = strings.Repeat("-", sha256.Size*2)

// contentHash computes an artifact's content digest record batch by record batch.
type contentHash struct {
	meta []byte // the hashed schema metadata and column names
	cols []*nodeHash
	rows int64
}

// newContentHash starts the digest of an artifact of this schema.
func newContentHash(schema *arrow.Schema) (*contentHash, error) {
	h := &contentHash{}
	md := schema.Metadata()
	type kv struct{ k, v string }
	var pairs []kv
	for i, k := range md.Keys() {
		if k != MetaChecksum {
			pairs = append(pairs, kv{k, md.Values()[i]})
		}
	}
	slices.SortFunc(pairs, func(a, b kv) int {
		if c := strings.Compare(a.k, b.k); c != 0 {
			return c
		}
		return strings.Compare(a.v, b.v)
	})
	var b []byte
	put := func(s string) {
		b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	put("rocone artifact content v1")
	b = binary.LittleEndian.AppendUint64(b, uint64(len(pairs)))
	for _, p := range pairs {
		put(p.k)
		put(p.v)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(schema.Fields())))
	for _, f := range schema.Fields() {
		put(f.Name)
		n, err := newNodeHash(f.Type, 0)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		h.cols = append(h.cols, n)
	}
	h.meta = b
	return h, nil
}

// add hashes one record batch, which must have the schema's columns and be valid
// (validateRecord).
func (h *contentHash) add(rec arrow.Record) error {
	if int(rec.NumCols()) != len(h.cols) {
		return fmt.Errorf("a record batch of %d columns, the schema has %d", rec.NumCols(), len(h.cols))
	}
	for i, c := range rec.Columns() {
		d := c.Data()
		if err := h.cols[i].add(d, int64(d.Offset()), int64(d.Offset())+int64(d.Len())); err != nil {
			return fmt.Errorf("column %q: %w", rec.ColumnName(i), err)
		}
	}
	h.rows += rec.NumRows()
	return nil
}

// sum returns the digest, in hex, of what was added.
func (h *contentHash) sum() string {
	s := sha256.New()
	s.Write(h.meta)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(h.rows))
	s.Write(n[:])
	for _, c := range h.cols {
		s.Write(c.sum())
	}
	return hex.EncodeToString(s.Sum(nil))
}

// nodeHash hashes one column, or the values of a list column, as streams that batch
// boundaries do not cut differently: values (fixed-width values, string bytes) and
// lengths (of strings and lists), and a child for the values of a list.
type nodeHash struct {
	kind    nodeKind
	width   int64 // fixed: bytes per value
	size    int64 // fixed-size list: values per list
	values  hash.Hash
	lengths hash.Hash
	child   *nodeHash
	scratch []byte
}

type nodeKind int

const (
	nodeFixed nodeKind = iota
	nodeBool
	nodeBinary
	nodeList
	nodeFixedList
)

func newNodeHash(dt arrow.DataType, depth int) (*nodeHash, error) {
	if depth > maxFieldDepth {
		return nil, fmt.Errorf("nested more than %d deep", maxFieldDepth)
	}
	n := &nodeHash{values: sha256.New(), lengths: sha256.New()}
	switch dt := dt.(type) {
	case *arrow.BooleanType:
		n.kind = nodeBool
	case *arrow.StringType, *arrow.BinaryType:
		n.kind = nodeBinary
	case *arrow.ListType:
		n.kind = nodeList
		c, err := newNodeHash(dt.Elem(), depth+1)
		if err != nil {
			return nil, err
		}
		n.child = c
	case *arrow.FixedSizeListType:
		n.kind, n.size = nodeFixedList, int64(dt.Len())
		c, err := newNodeHash(dt.Elem(), depth+1)
		if err != nil {
			return nil, err
		}
		n.child = c
	case arrow.FixedWidthDataType:
		switch dt.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
			arrow.FLOAT32, arrow.FLOAT64:
			n.kind, n.width = nodeFixed, int64(dt.BitWidth()/8)
		default:
			return nil, fmt.Errorf("type %s is not used by any artifact", dt)
		}
	default:
		return nil, fmt.Errorf("type %s is not used by any artifact", dt)
	}
	return n, nil
}

// add hashes the values [from, to) of d (positions counted from the start of its
// buffers, the array's offset included), which validateData has checked.
func (n *nodeHash) add(d arrow.ArrayData, from, to int64) error {
	if to <= from {
		return nil
	}
	bufs := d.Buffers()
	buf := func(i int) []byte {
		if i >= len(bufs) || bufs[i] == nil {
			return nil
		}
		return bufs[i].Bytes()
	}
	switch n.kind {
	case nodeFixed:
		b := buf(1)
		if int64(len(b)) < to*n.width {
			return fmt.Errorf("values buffer too short")
		}
		n.values.Write(b[from*n.width : to*n.width])
	case nodeBool:
		b := buf(1)
		if int64(len(b)) < (to+7)/8 {
			return fmt.Errorf("values buffer too short")
		}
		n.scratch = n.scratch[:0]
		for i := from; i < to; i++ {
			v := byte(0)
			if bitutil.BitIsSet(b, int(i)) {
				v = 1
			}
			n.scratch = append(n.scratch, v)
		}
		n.values.Write(n.scratch)
	case nodeBinary, nodeList:
		ob := buf(1)
		if int64(len(ob)) < (to+1)*4 {
			return fmt.Errorf("offsets buffer too short")
		}
		offsets := arrow.Int32Traits.CastFromBytes(ob)[from : to+1]
		n.scratch = n.scratch[:0]
		for i := 1; i < len(offsets); i++ {
			l := int64(offsets[i]) - int64(offsets[i-1])
			if l < 0 {
				return fmt.Errorf("corrupt offsets")
			}
			n.scratch = binary.LittleEndian.AppendUint64(n.scratch, uint64(l))
		}
		n.lengths.Write(n.scratch)
		lo, hi := int64(offsets[0]), int64(offsets[len(offsets)-1])
		if n.kind == nodeBinary {
			data := buf(2)
			if lo < 0 || int64(len(data)) < hi {
				return fmt.Errorf("corrupt offsets")
			}
			n.values.Write(data[lo:hi])
			return nil
		}
		if len(d.Children()) != 1 {
			return fmt.Errorf("list without its values")
		}
		return n.child.add(d.Children()[0], lo+int64(d.Children()[0].Offset()), hi+int64(d.Children()[0].Offset()))
	case nodeFixedList:
		if len(d.Children()) != 1 {
			return fmt.Errorf("list without its values")
		}
		c := d.Children()[0]
		off := int64(c.Offset())
		return n.child.add(c, off+from*n.size, off+to*n.size)
	}
	return nil
}

// sum is the node's digest: its streams' and its child's.
func (n *nodeHash) sum() []byte {
	s := sha256.New()
	s.Write(n.values.Sum(nil))
	s.Write(n.lengths.Sum(nil))
	if n.child != nil {
		s.Write(n.child.sum())
	}
	return s.Sum(nil)
}

// isDigest reports whether s is a hex SHA-256.
func isDigest(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// writers names, per artifact kind, the stage that writes it: what a user runs to make
// an artifact again that lacks a checksum.
var writers = map[string]string{
	"queries":    "sample generate (the same --seed gives the same queries) or sample import-betae",
	"checkpoint": "train",
	"train-log":  "train --log",
	"cones":      "embed",
	"ranks":      "rank",
	"answers":    "rank --ask -o",
	"metrics":    "metrics -o",
}

// missingChecksum is the error for an artifact without a content_sha256.
func missingChecksum(name string, md arrow.Metadata) error {
	kind, _ := md.GetValue(metaArtifact)
	how := writers[kind]
	if how == "" {
		how = "the stage that wrote it"
	}
	return fmt.Errorf("%s: no content checksum (schema metadata %s): written before artifacts carried one, or not by this pipeline; write it again with this version's %s",
		name, MetaChecksum, how)
}

// trailerMessage returns the flatbuffer metadata of a stream's checksum trailer: a record
// batch message of zero rows for the schema's columns (one field node per column and
// nested field, each with the buffers the IPC format gives its type, all empty) whose
// custom metadata holds content_sha256 = digest.
func trailerMessage(schema *arrow.Schema, digest string) ([]byte, error) {
	var nodes, buffers int
	for _, f := range schema.Fields() {
		if err := countLayout(f.Type, &nodes, &buffers, 0); err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
	}
	b := flatbuffers.NewBuilder(256)
	key, val := b.CreateString(MetaChecksum), b.CreateString(digest)
	b.StartObject(2) // KeyValue
	b.PrependUOffsetTSlot(0, key, 0)
	b.PrependUOffsetTSlot(1, val, 0)
	kv := b.EndObject()
	b.StartVector(4, 1, 4)
	b.PrependUOffsetT(kv)
	md := b.EndVector(1)
	zeros := func(n int) flatbuffers.UOffsetT { // a vector of n 16-byte structs of two zero int64s
		b.StartVector(16, n, 8)
		for i := 0; i < n; i++ {
			b.Prep(8, 16)
			b.PrependInt64(0)
			b.PrependInt64(0)
		}
		return b.EndVector(n)
	}
	nodeVec := zeros(nodes)
	bufVec := zeros(buffers)
	b.StartObject(5) // RecordBatch: length (0, the default), nodes, buffers
	b.PrependUOffsetTSlot(1, nodeVec, 0)
	b.PrependUOffsetTSlot(2, bufVec, 0)
	rb := b.EndObject()
	b.StartObject(5) // Message
	b.PrependInt16Slot(0, metadataV5, 0)
	b.PrependByteSlot(messageHeaderType, headerRecordBatch, 0)
	b.PrependUOffsetTSlot(messageHeader, rb, 0)
	b.PrependUOffsetTSlot(messageCustomMetadata, md, 0)
	b.Finish(b.EndObject())
	return b.FinishedBytes(), nil
}

// metadataV5 is the Arrow IPC metadata version written (MetadataVersion.V5).
const metadataV5 = 4

// countLayout adds the field nodes and buffers of a column of type dt, as the IPC format
// lays them out.
func countLayout(dt arrow.DataType, nodes, buffers *int, depth int) error {
	if depth > maxFieldDepth {
		return fmt.Errorf("nested more than %d deep", maxFieldDepth)
	}
	*nodes++
	switch dt := dt.(type) {
	case *arrow.StringType, *arrow.BinaryType:
		*buffers += 3
	case *arrow.ListType:
		*buffers += 2
		return countLayout(dt.Elem(), nodes, buffers, depth+1)
	case *arrow.FixedSizeListType:
		*buffers++
		return countLayout(dt.Elem(), nodes, buffers, depth+1)
	case *arrow.BooleanType, arrow.FixedWidthDataType:
		*buffers += 2
	default:
		return fmt.Errorf("type %s is not used by any artifact", dt)
	}
	return nil
}

// writeMessage writes an IPC message with no body: the continuation marker, the
// metadata's length padded to 8 bytes, the metadata and the padding.
func writeMessage(w io.Writer, meta []byte) error {
	padded := (len(meta) + 8 + 7) / 8 * 8
	buf := make([]byte, 0, padded)
	buf = binary.LittleEndian.AppendUint32(buf, 0xffffffff)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(padded-8))
	buf = append(buf, meta...)
	buf = append(buf, make([]byte, padded-len(buf))...)
	_, err := w.Write(buf)
	return err
}
