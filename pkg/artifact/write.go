package artifact

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"

	"github.com/rocone/rocone/pkg/outfile"
)

// recordWriter writes record batches of one schema to an output opened by package
// outfile: in the IPC file format to a file, which is written atomically, and in the
// IPC stream format to stdout ("-") and to outputs written in place (a device, a pipe,
// an open descriptor), which a reader can only read in order. Every artifact writer in
// this package is built on it.
type recordWriter struct {
	name string // the path, for errors
	out  *outfile.File
	buf  *bufio.Writer
	ipc  interface {
		Write(arrow.Record) error
		Close() error
	}
	err    error // first write error; later writes fail with it
	closed bool
}

// createRecords starts an artifact at path ("-" for stdout) with the given schema.
func createRecords(path string, schema *arrow.Schema) (*recordWriter, error) {
	out, err := outfile.Create(path)
	if err != nil {
		return nil, err
	}
	w := &recordWriter{name: out.Name(), out: out, buf: bufio.NewWriterSize(out, 1<<20)}
	if !out.Atomic() {
		w.ipc = ipc.NewWriter(w.buf, ipc.WithSchema(schema))
		return w, nil
	}
	// The file writer asks its output for its position; a posWriter answers without
	// defeating the buffer.
	fw, err := ipc.NewFileWriter(&posWriter{w: w.buf}, ipc.WithSchema(schema))
	if err != nil {
		out.Abort()
		return nil, fmt.Errorf("%s: %w", w.name, err)
	}
	w.ipc = fw
	return w, nil
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
	err := w.ipc.Close()
	if err == nil {
		err = w.buf.Flush()
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
