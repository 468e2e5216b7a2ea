package artifact

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"

	"github.com/rocone/rocone/pkg/outfile"
)

// recordWriter writes record batches of one schema to an output opened by package
// outfile: in the IPC file format to a file, which is written atomically, and in the
// IPC stream format to stdout ("-") and to outputs written in place (a device, a pipe,
// an open descriptor), which a reader can only read in order. Every artifact writer in
// this package is built on it, and through it every artifact carries its content
// checksum (checksum.go): patched into a file's schema at close, or in a stream's
// trailer.
type recordWriter struct {
	name   string // the path, for errors
	out    *outfile.File
	buf    *bufio.Writer
	schema *arrow.Schema // as written, with content_sha256
	ipc    interface {
		Write(arrow.Record) error
		Close() error
	}
	sum    *contentHash
	stream *streamPayloads // the stream form's payload writer; nil for a file
	pos    *posWriter      // the file form's position
	err    error           // first write error; later writes fail with it
	closed bool
}

// createRecords starts an artifact at path ("-" for stdout) with the given schema.
func createRecords(path string, schema *arrow.Schema) (*recordWriter, error) {
	out, err := outfile.Create(path)
	if err != nil {
		return nil, err
	}
	w := &recordWriter{name: out.Name(), out: out, buf: bufio.NewWriterSize(out, 1<<20)}
	mark := checksumPlaceholder
	if !out.Atomic() {
		mark = checksumTrailer
	}
	w.schema = withMeta(schema, MetaChecksum, mark)
	if w.sum, err = newContentHash(w.schema); err != nil {
		out.Abort()
		return nil, fmt.Errorf("%s: %w", w.name, err)
	}
	if !out.Atomic() {
		w.stream = &streamPayloads{w: w.buf}
		w.ipc = ipc.NewWriterWithPayloadWriter(w.stream, ipc.WithSchema(w.schema))
		return w, nil
	}
	// The file writer asks its output for its position; a posWriter answers without
	// defeating the buffer.
	w.pos = &posWriter{w: w.buf}
	fw, err := ipc.NewFileWriter(w.pos, ipc.WithSchema(w.schema))
	if err != nil {
		out.Abort()
		return nil, fmt.Errorf("%s: %w", w.name, err)
	}
	w.ipc = fw
	return w, nil
}

// withMeta returns schema with the metadata key set to value (replaced if present).
func withMeta(schema *arrow.Schema, key, value string) *arrow.Schema {
	md := schema.Metadata()
	keys, values := slices.Clone(md.Keys()), slices.Clone(md.Values())
	if i := md.FindKey(key); i >= 0 {
		values[i] = value
	} else {
		keys, values = append(keys, key), append(values, value)
	}
	m := arrow.NewMetadata(keys, values)
	return arrow.NewSchema(schema.Fields(), &m)
}

// write writes one record batch. After an error the artifact cannot be completed; the
// caller should abort.
func (w *recordWriter) write(rec arrow.Record) error {
	if w.closed {
		return fmt.Errorf("%s: write after close", w.name)
	}
	if w.err != nil {
		return w.err
	}
	if err := w.sum.add(rec); err != nil {
		w.err = fmt.Errorf("%s: %w", w.name, err)
		return w.err
	}
	if err := w.ipc.Write(rec); err != nil {
		w.err = fmt.Errorf("%s: %w", w.name, err)
		return w.err
	}
	return nil
}

// close writes the footer or end-of-stream marker, flushes and commits the output (see
// outfile.File.Commit). On error a file is removed.
func (w *recordWriter) close() error {
	if w.closed {
		return fmt.Errorf("%s: %w", w.name, os.ErrClosed)
	}
	if w.err != nil {
		w.abort()
		return w.err
	}
	w.closed = true
	digest := w.sum.sum()
	var err error
	if w.stream != nil {
		// The trailer goes after the last batch, before the end-of-stream marker
		// (streamPayloads.Close).
		w.stream.trailer, err = trailerMessage(w.schema, digest)
	}
	if err == nil {
		err = w.ipc.Close()
	}
	if err == nil {
		err = w.buf.Flush()
	}
	if err == nil && w.stream == nil {
		err = patchChecksum(w.out, w.pos.pos, digest)
	}
	if err != nil {
		w.out.Abort()
		return wrapOnce(w.name, err)
	}
	return w.out.Commit()
}

// abort gives up the artifact: a file's temporary file is removed, and a stream is ended
// without its end-of-stream marker so that readers reject it. What was buffered for a
// stream is flushed, so that a reader downstream reports a truncated stream rather than
// an empty input. It does nothing after close or abort.
func (w *recordWriter) abort() {
	if w.closed {
		return
	}
	w.closed = true
	if !w.out.Atomic() {
		w.buf.Flush() // the error, if any, is the one being handled already
	}
	w.out.Abort()
}

// wrapOnce prefixes err with name unless it already begins with it (errors from the
// output itself do).
func wrapOnce(name string, err error) error {
	if strings.HasPrefix(err.Error(), name+": ") {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// posWriter is an io.WriteSeeker that can only report its position, which is all that
// ipc.FileWriter seeks for.
type posWriter struct {
	w   io.Writer
	pos int64
}

func (p *posWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.pos += int64(n)
	return n, err
}

func (p *posWriter) Seek(offset int64, whence int) (int64, error) {
	if offset != 0 || whence != io.SeekCurrent {
		return p.pos, errors.New("seek not supported")
	}
	return p.pos, nil
}

// displayName is how errors name a path: "-" becomes the standard stream it stands for.
func displayName(path, std string) string {
	if path == "-" {
		return std
	}
	return path
}

// streamPayloads is the stream form's ipc.PayloadWriter: it writes each message as the
// library's stream writer does, and at Close the checksum trailer (set by the
// recordWriter once the last batch is written) before the end-of-stream marker. An
// aborted stream is never closed, so it ends with neither.
type streamPayloads struct {
	w       io.Writer
	trailer []byte // the trailer message's metadata
}

func (s *streamPayloads) Start() error { return nil }

func (s *streamPayloads) WritePayload(p ipc.Payload) error {
	meta := p.Meta()
	if meta == nil {
		return errors.New("a message without metadata")
	}
	err := writeMessage(s.w, meta.Bytes())
	meta.Release()
	if err != nil {
		return err
	}
	return p.SerializeBody(s.w)
}

func (s *streamPayloads) Close() error {
	if s.trailer == nil {
		return errors.New("stream closed without its checksum trailer")
	}
	if err := writeMessage(s.w, s.trailer); err != nil {
		return err
	}
	_, err := s.w.Write([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}) // end of stream
	return err
}

// patchChecksum writes the digest over the placeholder of a file's content_sha256, in
// the schema message that opens the file and in the footer's schema, which readers use.
// size is the file's length. The file is the writer's own, just written: a placeholder
// not where the format puts it is a bug, reported as an error rather than written past.
func patchChecksum(out *outfile.File, size int64, digest string) error {
	read := func(off, n int64) ([]byte, error) {
		if off < 0 || n < 0 || off+n > size {
			return nil, fmt.Errorf("checksum: %d bytes at %d do not fit in the %d written", n, off, size)
		}
		b := make([]byte, n)
		_, err := out.ReadAt(b, off)
		return b, err
	}
	head, err := read(8, 8) // after the magic and its padding: continuation marker, metadata length
	if err != nil {
		return err
	}
	msgLen := int64(binary.LittleEndian.Uint32(head[4:]))
	msg, err := read(16, msgLen)
	if err != nil {
		return err
	}
	tail, err := read(size-10, 4) // the footer's length, before the closing magic
	if err != nil {
		return err
	}
	footerLen := int64(binary.LittleEndian.Uint32(tail))
	footerAt := size - 10 - footerLen
	footer, err := read(footerAt, footerLen)
	if err != nil {
		return err
	}
	for _, part := range []struct {
		at      int64
		meta    []byte
		message bool
	}{{16, msg, true}, {footerAt, footer, false}} {
		var start, n int64
		err := catch(func() (err error) { start, n, err = schemaChecksumAt(part.meta, part.message); return err })
		if err != nil {
			return fmt.Errorf("checksum: %w", err)
		}
		if got := string(part.meta[start : start+n]); got != checksumPlaceholder {
			return fmt.Errorf("checksum: the placeholder is %q", got)
		}
		if _, err := out.WriteAt([]byte(digest), part.at+start); err != nil {
			return err
		}
	}
	return nil
}

// Writer writes record batches of any schema as an artifact, with its content checksum,
// without checking what they hold: the counterpart of Reader for tools that handle any
// artifact, such as one that edits an artifact's rows (and for tests that need an
// artifact breaking its kind's contract, to see its reader refuse it). The artifact
// writers of each kind check their rows and should be preferred.
type Writer struct{ w *recordWriter }

// Create starts an artifact of the given schema at path ("-" for stdout), in the file
// format at a path, the stream format on stdout; nothing is at path until Close.
func Create(path string, schema *arrow.Schema) (*Writer, error) {
	w, err := createRecords(path, schema)
	if err != nil {
		return nil, err
	}
	return &Writer{w: w}, nil
}

// Write writes one record batch of the schema.
func (w *Writer) Write(rec arrow.Record) error {
	if err := validateRecord(rec); err != nil {
		return fmt.Errorf("%s: %w", w.w.name, err)
	}
	return w.w.write(rec)
}

// Close completes the artifact, its checksum included.
func (w *Writer) Close() error { return w.w.close() }

// Abort gives it up (see recordWriter.abort); a no-op after Close.
func (w *Writer) Abort() { w.w.abort() }
