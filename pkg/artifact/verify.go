package artifact

import (
	"encoding/binary"
	"fmt"
)

// The Arrow IPC readers trust the lengths and counts they find in an input: a message
// length, a body length, a buffer length, the number of fields of a schema or of
// key-value pairs in its metadata. Each becomes a make() or an allocation before anything
// checks it against the bytes that are there, so one changed byte can ask for terabytes
// and the Go runtime dies of a fatal out-of-memory that no recover catches. This file
// checks the flatbuffer metadata that the IPC readers size allocations from, before they
// see it:
//
//   - every vector the readers allocate a slice for (the fields of a schema or field, the
//     key-value pairs of custom metadata, the blocks of a file footer) must fit in the
//     flatbuffer that holds it, so a count is bounded by the metadata's size;
//   - a field table may be reached only once and nesting is bounded, so a cycle or a
//     shared child cannot make the schema decoder recurse without end or exponentially;
//   - dictionary encoding and unions, which no artifact uses, are refused, since their
//     decoders allocate from further counts.
//
// The lengths of messages and bodies are checked against the input by the caller (see
// frameReader and fileBlocks); buffer lengths inside a body by boundedAllocator.

// maxFieldDepth bounds the nesting of a schema's fields: artifacts nest at most a list of
// a primitive type (depth 2).
const maxFieldDepth = 8

// fbuf reads a flatbuffer with every position checked against its length.
type fbuf []byte

var errFlatbuffer = fmt.Errorf("corrupt flatbuffer metadata")

func (b fbuf) u16(p int64) (uint16, error) {
	if p < 0 || p+2 > int64(len(b)) {
		return 0, errFlatbuffer
	}
	return binary.LittleEndian.Uint16(b[p:]), nil
}

func (b fbuf) u32(p int64) (uint32, error) {
	if p < 0 || p+4 > int64(len(b)) {
		return 0, errFlatbuffer
	}
	return binary.LittleEndian.Uint32(b[p:]), nil
}

func (b fbuf) i64(p int64) (int64, error) {
	if p < 0 || p+8 > int64(len(b)) {
		return 0, errFlatbuffer
	}
	return int64(binary.LittleEndian.Uint64(b[p:])), nil
}

// root returns the position of the root table.
func (b fbuf) root() (int64, error) {
	off, err := b.u32(0)
	if err != nil {
		return 0, err
	}
	return b.table(int64(off))
}

// table checks that a table starts at p with a vtable inside the buffer and returns p.
func (b fbuf) table(p int64) (int64, error) {
	soff, err := b.u32(p)
	if err != nil {
		return 0, err
	}
	vt := p - int64(int32(soff))
	size, err := b.u16(vt)
	if err != nil || size < 4 || size%2 != 0 || vt+int64(size) > int64(len(b)) {
		return 0, errFlatbuffer
	}
	return p, nil
}

// field returns the position of field slot of the table at p, or 0 if it is absent.
func (b fbuf) field(p int64, slot int) (int64, error) {
	soff, err := b.u32(p)
	if err != nil {
		return 0, err
	}
	vt := p - int64(int32(soff))
	size, err := b.u16(vt)
	if err != nil {
		return 0, err
	}
	at := int64(4 + 2*slot)
	if at+2 > int64(size) {
		return 0, nil
	}
	off, err := b.u16(vt + at)
	if err != nil || off == 0 {
		return 0, err
	}
	return p + int64(off), nil
}

// ref follows the offset stored at p (to a table, vector or string).
func (b fbuf) ref(p int64) (int64, error) {
	off, err := b.u32(p)
	if err != nil {
		return 0, err
	}
	return p + int64(off), nil
}

// subtable returns the table referenced by field slot of the table at p, or 0 if absent.
func (b fbuf) subtable(p int64, slot int) (int64, error) {
	f, err := b.field(p, slot)
	if err != nil || f == 0 {
		return 0, err
	}
	t, err := b.ref(f)
	if err != nil {
		return 0, err
	}
	return b.table(t)
}

// vector returns the position of the first element and the length of the vector in field
// slot of the table at p, checked to fit in the buffer with elements of elem bytes.
func (b fbuf) vector(p int64, slot int, elem int64) (start, n int64, err error) {
	f, err := b.field(p, slot)
	if err != nil || f == 0 {
		return 0, 0, err
	}
	v, err := b.ref(f)
	if err != nil {
		return 0, 0, err
	}
	l, err := b.u32(v)
	if err != nil {
		return 0, 0, err
	}
	n = int64(l)
	if n*elem > int64(len(b))-(v+4) {
		return 0, 0, fmt.Errorf("%w: a vector of %d elements in %d bytes", errFlatbuffer, n, len(b))
	}
	return v + 4, n, nil
}

// tables calls each with every table of the vector of tables in field slot of p.
func (b fbuf) tables(p int64, slot int, each func(t int64) error) error {
	start, n, err := b.vector(p, slot, 4)
	if err != nil {
		return err
	}
	for i := int64(0); i < n; i++ {
		t, err := b.ref(start + 4*i)
		if err != nil {
			return err
		}
		if t, err = b.table(t); err != nil {
			return err
		}
		if err := each(t); err != nil {
			return err
		}
	}
	return nil
}

// keyValues checks a custom_metadata vector: each pair's key and value must fit.
func (b fbuf) keyValues(p int64, slot int) error {
	return b.tables(p, slot, func(kv int64) error {
		for s := 0; s < 2; s++ {
			if _, _, err := b.vector(kv, s, 1); err != nil {
				return err
			}
		}
		return nil
	})
}

// Slots of the Arrow flatbuffer tables (format/Schema.fbs, Message.fbs, File.fbs).
const (
	schemaFields, schemaCustomMetadata, schemaFeatures     = 1, 2, 3
	fieldName, fieldType, fieldDictionary, fieldChildren   = 0, 3, 4, 5
	fieldCustomMetadata                                    = 6
	fieldTypeType                                          = 2
	footerSchema, footerDictionaries, footerRecordBatches  = 1, 2, 3
	footerCustomMetadata                                   = 4
	messageHeaderType, messageHeader, messageBodyLength    = 1, 2, 3
	messageCustomMetadata                                  = 4
	typeUnion                                              = 14
	headerSchema, headerDictionaryBatch, headerRecordBatch = 1, 2, 3
	blockSize                                              = 24 // struct Block: offset int64, metaDataLength int32 (+4 padding), bodyLength int64
)

// verifySchema checks the schema table at p.
func (b fbuf) verifySchema(p int64) error {
	seen := map[int64]bool{}
	if err := b.tables(p, schemaFields, func(f int64) error { return b.verifyField(f, 1, seen) }); err != nil {
		return err
	}
	if err := b.keyValues(p, schemaCustomMetadata); err != nil {
		return err
	}
	_, _, err := b.vector(p, schemaFeatures, 8)
	return err
}

func (b fbuf) verifyField(p int64, depth int, seen map[int64]bool) error {
	switch {
	case depth > maxFieldDepth:
		return fmt.Errorf("%w: fields nested more than %d deep", errFlatbuffer, maxFieldDepth)
	case seen[p]:
		return fmt.Errorf("%w: a field reached twice", errFlatbuffer)
	}
	seen[p] = true
	if _, _, err := b.vector(p, fieldName, 1); err != nil {
		return err
	}
	tf, err := b.field(p, fieldTypeType)
	if err != nil {
		return err
	}
	if tf != 0 {
		if tf >= int64(len(b)) {
			return errFlatbuffer
		}
		if b[tf] == typeUnion {
			return fmt.Errorf("union columns are not used by any artifact")
		}
	}
	if _, err := b.subtable(p, fieldType); err != nil {
		return err
	}
	if d, err := b.field(p, fieldDictionary); err != nil || d != 0 {
		if err == nil {
			err = fmt.Errorf("dictionary-encoded columns are not used by any artifact")
		}
		return err
	}
	if err := b.tables(p, fieldChildren, func(c int64) error { return b.verifyField(c, depth+1, seen) }); err != nil {
		return err
	}
	return b.keyValues(p, fieldCustomMetadata)
}

// fileBlock is one entry of a file footer's index: a message at offset, metaLen bytes of
// metadata (with its prefix) and bodyLen bytes of body.
type fileBlock struct {
	offset, metaLen, bodyLen int64
}

// verifyFooter checks a file footer and returns its record batch blocks, each checked to
// lie within the first end bytes of the file (before the footer).
func verifyFooter(footer []byte, end int64) ([]fileBlock, error) {
	b := fbuf(footer)
	root, err := b.root()
	if err != nil {
		return nil, err
	}
	schema, err := b.subtable(root, footerSchema)
	if err != nil {
		return nil, err
	}
	if schema == 0 {
		return nil, fmt.Errorf("%w: no schema in the footer", errFlatbuffer)
	}
	if err := b.verifySchema(schema); err != nil {
		return nil, err
	}
	if err := b.keyValues(root, footerCustomMetadata); err != nil {
		return nil, err
	}
	if _, n, err := b.vector(root, footerDictionaries, blockSize); err != nil || n > 0 {
		if err == nil {
			err = fmt.Errorf("dictionary batches are not used by any artifact")
		}
		return nil, err
	}
	start, n, err := b.vector(root, footerRecordBatches, blockSize)
	if err != nil {
		return nil, err
	}
	blocks := make([]fileBlock, n)
	for i := range blocks {
		p := start + int64(i)*blockSize
		off, _ := b.i64(p)
		meta, _ := b.u32(p + 8)
		body, _ := b.i64(p + 16)
		blk := fileBlock{offset: off, metaLen: int64(int32(meta)), bodyLen: body}
		// A message begins after the leading magic (8 bytes with padding) and holds at
		// least its 8-byte prefix.
		if blk.offset < 8 || blk.metaLen < 8 || blk.bodyLen < 0 ||
			blk.offset > end || blk.metaLen > end-blk.offset || blk.bodyLen > end-blk.offset-blk.metaLen {
			return nil, fmt.Errorf("record batch %d: block at offset %d with %d bytes of metadata and %d of body does not fit in the %d bytes before the footer",
				i, blk.offset, blk.metaLen, blk.bodyLen, end)
		}
		blocks[i] = blk
	}
	return blocks, nil
}

// messageInfo is what a stream's reader must know of a message before reading it.
type messageInfo struct {
	header  byte  // headerSchema, headerRecordBatch, ...
	bodyLen int64 // bytes of body after the metadata
	// checksum is the content_sha256 of a record batch's custom metadata: set in a
	// stream's checksum trailer only (checksum.go).
	checksum string
	trailer  bool
}

// verifyMessage checks the flatbuffer metadata of one IPC message. A schema message has
// its schema checked as a footer's is.
func verifyMessage(meta []byte) (messageInfo, error) {
	b := fbuf(meta)
	root, err := b.root()
	if err != nil {
		return messageInfo{}, err
	}
	var info messageInfo
	if f, err := b.field(root, messageHeaderType); err != nil {
		return info, err
	} else if f != 0 {
		if f >= int64(len(b)) {
			return info, errFlatbuffer
		}
		info.header = b[f]
	}
	if f, err := b.field(root, messageBodyLength); err != nil {
		return info, err
	} else if f != 0 {
		if info.bodyLen, err = b.i64(f); err != nil {
			return info, err
		}
	}
	if info.bodyLen < 0 {
		return info, fmt.Errorf("%w: negative body length %d", errFlatbuffer, info.bodyLen)
	}
	if err := b.keyValues(root, messageCustomMetadata); err != nil {
		return info, err
	}
	header, err := b.subtable(root, messageHeader)
	if err != nil {
		return info, err
	}
	switch info.header {
	case headerSchema:
		if header == 0 {
			return info, fmt.Errorf("%w: schema message without a schema", errFlatbuffer)
		}
		return info, b.verifySchema(header)
	case headerRecordBatch:
		if header != 0 {
			if err := b.verifyUncompressed(header); err != nil {
				return info, err
			}
		}
		s, n, found, err := b.metaValue(root, messageCustomMetadata, MetaChecksum)
		if found {
			info.checksum, info.trailer = string(b[s:s+n]), true
		}
		return info, err
	case headerDictionaryBatch:
		return info, fmt.Errorf("dictionary batches are not used by any artifact")
	}
	return info, fmt.Errorf("message of type %d is not a schema or record batch", info.header)
}

// recordBatchCompression is the slot of a RecordBatch table's BodyCompression, and
// bodyCompressionCodec that of its codec (LZ4_FRAME = 0, the default, or ZSTD = 1).
const recordBatchCompression, bodyCompressionCodec = 3, 0

// compressedError is a record batch whose buffers are compressed. Every artifact is
// written uncompressed, and a compressed buffer declares the size it decompresses to,
// which no bound on the input's size can check (a few kilobytes of zeros compress from
// gigabytes): such a batch is refused, as a batch of the wrong format, not a corrupt one.
type compressedError struct{ codec string }

func (e *compressedError) Error() string {
	return fmt.Sprintf("its buffers are compressed (%s), and artifacts are read uncompressed: write it again without compression (pyarrow: ipc.IpcWriteOptions(compression=None))", e.codec)
}

// verifyUncompressed refuses the RecordBatch table at p if it declares a body compression.
func (b fbuf) verifyUncompressed(p int64) error {
	c, err := b.subtable(p, recordBatchCompression)
	if err != nil || c == 0 {
		return err
	}
	codec := "LZ4_FRAME"
	f, err := b.field(c, bodyCompressionCodec)
	switch {
	case err != nil:
		return err
	case f >= int64(len(b)):
		return errFlatbuffer
	case f != 0 && b[f] == 1:
		codec = "ZSTD"
	case f != 0 && b[f] != 0:
		codec = fmt.Sprintf("codec %d", b[f])
	}
	return &compressedError{codec}
}

// metaValue finds key in the custom_metadata vector in field slot of the table at p and
// returns the position and length of its value's bytes; found is false without it.
func (b fbuf) metaValue(p int64, slot int, key string) (start, n int64, found bool, err error) {
	err = b.tables(p, slot, func(kv int64) error {
		ks, kn, err := b.vector(kv, 0, 1)
		if err != nil {
			return err
		}
		vs, vn, err := b.vector(kv, 1, 1)
		if err != nil {
			return err
		}
		if !found && string(b[ks:ks+kn]) == key {
			start, n, found = vs, vn, true
		}
		return nil
	})
	return start, n, found, err
}

// messageChecksum returns the content_sha256 in an IPC message's custom metadata: a
// stream's checksum trailer.
func messageChecksum(meta []byte) (string, bool, error) {
	b := fbuf(meta)
	root, err := b.root()
	if err != nil {
		return "", false, err
	}
	s, n, found, err := b.metaValue(root, messageCustomMetadata, MetaChecksum)
	if err != nil || !found {
		return "", false, err
	}
	return string(b[s : s+n]), true, nil
}

// schemaChecksumAt returns where the value of the schema's content_sha256 lies in the
// flatbuffer meta: a schema message's metadata (message) or a file footer.
func schemaChecksumAt(meta []byte, message bool) (start, n int64, err error) {
	b := fbuf(meta)
	root, err := b.root()
	if err != nil {
		return 0, 0, err
	}
	slot := footerSchema
	if message {
		slot = messageHeader
	}
	schema, err := b.subtable(root, slot)
	if err != nil {
		return 0, 0, err
	}
	if schema == 0 {
		return 0, 0, fmt.Errorf("%w: no schema", errFlatbuffer)
	}
	start, n, found, err := b.metaValue(schema, schemaCustomMetadata, MetaChecksum)
	if err == nil && !found {
		err = fmt.Errorf("no %s in the schema", MetaChecksum)
	}
	return start, n, err
}
