package artifact

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Inputs are told apart by their first bytes. An Arrow IPC file begins with fileMagic
// (and ends with it, after the footer); a stream, since Arrow 0.15, begins with the
// continuation marker 0xFFFFFFFF. Older streams began with a bare message length: they
// are refused, since anything else would read as one too and make the reader allocate
// whatever length its first bytes spell.
const (
	fileMagic    = "ARROW1"
	streamMarker = "\xff\xff\xff\xff"
)

// sniff reports whether an input that begins with head is in the IPC file format rather
// than the stream format, or why it is in neither. head holds len(fileMagic) bytes, or
// the whole input if it is shorter.
func sniff(name string, head []byte) (file bool, err error) {
	switch {
	case len(head) == 0:
		return false, fmt.Errorf("%s: empty input", name)
	case bytes.HasPrefix(head, []byte(fileMagic)):
		return true, nil
	case bytes.HasPrefix(head, []byte(streamMarker)):
		return false, nil
	case strings.HasPrefix(fileMagic, string(head)):
		return false, fmt.Errorf("%s: truncated Arrow file: %d bytes", name, len(head))
	case strings.HasPrefix(streamMarker, string(head)):
		return false, fmt.Errorf("%s: truncated Arrow stream: %d bytes", name, len(head))
	}
	return false, fmt.Errorf("%s: not an Arrow IPC file or stream", name)
}

// allocator allocates the buffers of the records read. It must stay a GoAllocator: its
// buffers are ordinary Go memory, never reused, which readers of this package rely on to
// hand out slices of them that outlive the record (see QueriesReader.decode).
var allocator = memory.NewGoAllocator()

// Reader reads the record batches of an Arrow IPC file or stream, whichever the input
// holds, without checking what artifact it is. The per-artifact readers in this package
// are built on it; it is exported for tools that handle any artifact, such as one that
// prints an artifact's schema.
//
// A Reader is used like a bufio.Scanner:
//
//	r, err := artifact.Open(path)
//	if err != nil { ... }
//	defer r.Close()
//	for r.Next() {
//		rec := r.Record()
//		...
//	}
//	if err := r.Err(); err != nil { ... }
type Reader struct {
	name   string    // the path, for errors
	closer io.Closer // the opened file; nil for stdin
	schema *arrow.Schema

	// File format: records are read through the footer's index.
	file *ipc.FileReader
	// Stream format: records are read in order; in tells a clean end from a truncated one.
	stream *ipc.Reader
	in     *eofReader

	rec     arrow.Record
	batches int // record batches returned so far
	err     error
	closed  bool
}

// Open opens the artifact at path, or stdin if path is "-", and reads its schema. The
// IPC file format is recognized by its leading magic bytes; any other input is read as a
// stream. The file format needs random access, so from a pipe it is read into memory
// whole; a stream is read as it arrives.
func Open(path string) (*Reader, error) {
	if path == "-" {
		return openFile(os.Stdin, "stdin")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := openFile(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

func openFile(f *os.File, name string) (*Reader, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if fi.Mode().IsRegular() {
		// Read from the current offset, which for stdin need not be 0.
		if start, err := f.Seek(0, io.SeekCurrent); err == nil && start <= fi.Size() {
			return openSeekable(io.NewSectionReader(f, start, fi.Size()-start), name)
		}
	}
	return openSequential(f, name)
}

// openSeekable opens an input with random access, such as a regular file.
func openSeekable(in *io.SectionReader, name string) (*Reader, error) {
	head := make([]byte, len(fileMagic))
	n, err := in.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	file, err := sniff(name, head[:n])
	switch {
	case err != nil:
		return nil, err
	case file:
		return openFileFormat(in, name)
	}
	return openStream(bufio.NewReaderSize(in, 1<<16), name)
}

// openSequential opens an input that can only be read in order, such as a pipe.
func openSequential(in io.Reader, name string) (*Reader, error) {
	br := bufio.NewReaderSize(in, 1<<16)
	head, err := br.Peek(len(fileMagic))
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	file, err := sniff(name, head)
	switch {
	case err != nil:
		return nil, err
	case file:
		data, err := io.ReadAll(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return openFileFormat(bytes.NewReader(data), name)
	}
	return openStream(br, name)
}

func openFileFormat(in ipc.ReadAtSeeker, name string) (*Reader, error) {
	var fr *ipc.FileReader
	err := catch(func() (err error) {
		fr, err = ipc.NewFileReader(in, ipc.WithAllocator(allocator))
		return err
	})
	if err != nil {
		// The input began with the file magic, so a missing or garbled footer most likely
		// means the file was cut short.
		return nil, fmt.Errorf("%s: truncated or corrupt Arrow file: %w", name, err)
	}
	return &Reader{name: name, schema: fr.Schema(), file: fr}, nil
}

func openStream(in io.Reader, name string) (*Reader, error) {
	r := &Reader{name: name, in: &eofReader{r: in}}
	err := catch(func() (err error) {
		r.stream, err = ipc.NewReader(r.in, ipc.WithAllocator(allocator))
		return err
	})
	if err != nil {
		if r.in.short {
			return nil, fmt.Errorf("%s: truncated Arrow stream: %w", name, err)
		}
		return nil, fmt.Errorf("%s: corrupt Arrow stream: %w", name, err)
	}
	r.schema = r.stream.Schema()
	return r, nil
}

// Schema returns the schema, including its metadata.
func (r *Reader) Schema() *arrow.Schema { return r.schema }

// Next advances to the next record batch, reporting whether there is one. It returns false
// at the end of the input or on an error, which Err then reports.
func (r *Reader) Next() bool {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	if r.err != nil || r.closed {
		return false
	}
	if r.file != nil {
		if r.batches >= r.file.NumRecords() {
			return false
		}
		err := catch(func() (err error) {
			r.rec, err = r.file.RecordAt(r.batches)
			return err
		})
		if err != nil {
			r.rec = nil
			r.err = fmt.Errorf("%s: truncated or corrupt Arrow file: record batch %d: %w", r.name, r.batches, err)
			return false
		}
		r.batches++
		return true
	}

	var ok bool
	err := catch(func() error {
		ok = r.stream.Next()
		return r.stream.Err()
	})
	switch {
	case err != nil && r.in.short:
		r.err = fmt.Errorf("%s: truncated Arrow stream: record batch %d: %w", r.name, r.batches, err)
	case err != nil:
		r.err = fmt.Errorf("%s: corrupt Arrow stream: record batch %d: %w", r.name, r.batches, err)
	case !ok && r.in.short:
		// ipc.Reader takes the end of its input for the end of the stream; only the
		// end-of-stream marker, which every writer writes on a successful close, says
		// that nothing was lost.
		r.err = fmt.Errorf("%s: truncated Arrow stream: input ended after %d record batches without the end-of-stream marker", r.name, r.batches)
	case ok:
		r.rec = r.stream.Record()
		r.rec.Retain()
		r.batches++
	}
	return r.rec != nil
}

// Record returns the current record batch. It is valid until the next call to Next or
// Close; call Retain on it to keep it longer.
func (r *Reader) Record() arrow.Record { return r.rec }

// Err returns the error, if any, that ended the iteration.
func (r *Reader) Err() error { return r.err }

// Close releases the reader's resources and closes the file it opened; stdin is left
// open.
func (r *Reader) Close() error {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	if r.file != nil {
		r.file.Close()
		r.file = nil
	}
	if r.stream != nil {
		r.stream.Release()
		r.stream = nil
	}
	r.closed = true
	if r.closer != nil {
		err := r.closer.Close()
		r.closer = nil
		return err
	}
	return nil
}

// eofReader records whether a read came up short at the end of its input. ipc.Reader
// treats the end of its input between messages as the end of the stream; whether it hit
// the end at all is what tells a stream cut short from one closed by its end-of-stream
// marker, after which the reader asks for no more bytes.
type eofReader struct {
	r     io.Reader
	short bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if n < len(p) && errors.Is(err, io.EOF) {
		e.short = true
	}
	return n, err
}

// catch runs f, turning a panic into an error. The Arrow readers panic on some corrupt
// inputs; a corrupt artifact is an input error, not a bug in the program reading it.
func catch(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("corrupt data: %v", p)
		}
	}()
	return f()
}
