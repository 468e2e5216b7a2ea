package artifact

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
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

// goAllocator allocates the buffers of the records read, through a boundedAllocator. It
// must stay a GoAllocator: its buffers are ordinary Go memory, never reused, which readers
// of this package rely on to hand out slices of them that outlive the record (see
// QueriesReader.decode).
var goAllocator = memory.NewGoAllocator()

// boundedAllocator refuses any one allocation larger than limit (plus the rounding of
// Arrow's buffers). The IPC readers allocate a message's body, and each buffer of it, at
// the length its metadata declares before reading a byte of it; limit is what the input
// can actually hold (the file's size, or the length of the message already checked to be
// there), so a corrupt length fails here with an error instead of asking the runtime for
// terabytes, which is a fatal error and no panic.
type boundedAllocator struct {
	limit int64
}

// allocationSlack covers memory.Buffer rounding sizes up to a multiple of 64 bytes.
const allocationSlack = 64

func (a *boundedAllocator) check(n int) {
	if int64(n) > a.limit+allocationSlack {
		panic(&allocationError{size: int64(n), limit: a.limit})
	}
}

func (a *boundedAllocator) Allocate(n int) []byte {
	a.check(n)
	return goAllocator.Allocate(n)
}

func (a *boundedAllocator) Reallocate(n int, b []byte) []byte {
	a.check(n)
	return goAllocator.Reallocate(n, b)
}

func (a *boundedAllocator) Free(b []byte) { goAllocator.Free(b) }

// allocationError is the panic of a boundedAllocator, turned into an error by catch.
type allocationError struct {
	size, limit int64
}

func (e *allocationError) Error() string {
	return fmt.Sprintf("metadata declares a buffer of %d bytes, more than the %d bytes of input that could hold it", e.size, e.limit)
}

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

	// File format: records are read through the footer's index, which blocks holds as
	// checked against the file's size.
	file   *ipc.FileReader
	fileIn io.ReaderAt // the file, for the metadata of each block (verifyBlock)
	blocks []fileBlock
	// Stream format: records are read in order; in tells a clean end from a truncated one,
	// frame checks each message before the IPC reader sees it.
	stream *ipc.Reader
	in     *eofReader
	frame  *frameReader

	rec     arrow.Record
	batches int // record batches returned so far
	err     error
	closed  bool

	// The content checksum (checksum.go): the digest of what was read, what the schema
	// says (a digest, or that a stream's trailer holds it) and the trailer's.
	sum        *contentHash
	want       string // the schema's digest; "" when it is in the trailer
	inTrailer  bool   // the schema promises a trailer
	trailer    string // the trailer's digest, once read
	hasTrailer bool
	verified   bool
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
		return openFileFormat(in, in.Size(), name)
	}
	return openStream(bufio.NewReaderSize(in, 1<<16), in.Size(), name)
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
		return openFileFormat(bytes.NewReader(data), int64(len(data)), name)
	}
	return openStream(br, -1, name)
}

// openFileFormat opens an IPC file of size bytes. Its footer is read and checked here
// first (see verifyFooter), and every allocation is bounded by the file's size.
func openFileFormat(in ipc.ReadAtSeeker, size int64, name string) (*Reader, error) {
	blocks, err := readFooter(in, size)
	if err != nil {
		// The input began with the file magic, so a missing or garbled footer most likely
		// means the file was cut short.
		return nil, fmt.Errorf("%s: truncated or corrupt Arrow file: %w", name, err)
	}
	var fr *ipc.FileReader
	err = catch(func() (err error) {
		fr, err = ipc.NewFileReader(in, ipc.WithAllocator(&boundedAllocator{limit: size}))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: truncated or corrupt Arrow file: %w", name, err)
	}
	var schema *arrow.Schema
	if err := catch(func() error { schema = fr.Schema(); return nil }); err != nil {
		return nil, fmt.Errorf("%s: corrupt Arrow file: %w", name, err)
	}
	if err := checkLeadingSchema(in, blocks, size, schema); err != nil {
		catch(fr.Close)
		return nil, fmt.Errorf("%s: corrupt Arrow file: %w", name, err)
	}
	r := &Reader{name: name, schema: schema, file: fr, fileIn: in, blocks: blocks}
	if err := r.startChecksum(); err != nil {
		catch(fr.Close)
		return nil, err
	}
	return r, nil
}

// checkLeadingSchema checks that the schema message an IPC file begins with (after its
// magic and padding) is the footer's schema, metadata included. The readers here use the
// footer's alone, but a file read as a stream from its first message (a converter, a
// reader that skips the magic) gets the leading one, and the writer patches the content
// checksum into both (outfile.File.WriteAt): two schemas that differ mean a corrupt file,
// whichever one is right. The message is read through a frameReader bounded by where the
// first record batch, or else the footer, begins, so its lengths are checked as a
// stream's are.
func checkLeadingSchema(in io.ReaderAt, blocks []fileBlock, size int64, footer *arrow.Schema) error {
	const start = 8 // the magic and its padding to 8 bytes
	end := size
	for _, b := range blocks {
		end = min(end, b.offset)
	}
	if end <= start {
		return fmt.Errorf("no room for the leading schema message before offset %d", end)
	}
	alloc := &boundedAllocator{}
	frame := &frameReader{in: &eofReader{r: io.NewSectionReader(in, start, end-start)}, size: end - start, alloc: alloc}
	var leading *arrow.Schema
	err := catch(func() error {
		sr, err := ipc.NewReader(frame, ipc.WithAllocator(alloc))
		if err != nil {
			return err
		}
		leading = sr.Schema()
		sr.Release()
		return nil
	})
	if err != nil {
		return fmt.Errorf("leading schema message: %w", frame.cause(err))
	}
	if !sameSchema(leading, footer) {
		return errors.New("the leading schema message differs from the footer's schema")
	}
	return nil
}

// sameSchema reports whether two schemas have the same fields and the same metadata, key
// for key in the same order.
func sameSchema(a, b *arrow.Schema) bool {
	ma, mb := a.Metadata(), b.Metadata()
	return a.Equal(b) && slices.Equal(ma.Keys(), mb.Keys()) && slices.Equal(ma.Values(), mb.Values())
}

// verifyBlock checks the metadata of a file's record batch as a stream's is checked
// (verifyMessage) before the IPC reader decodes it: the block's bounds are the footer's,
// checked against the file by verifyFooter.
func (r *Reader) verifyBlock(blk fileBlock) error {
	msg := make([]byte, blk.metaLen)
	if _, err := r.fileIn.ReadAt(msg, blk.offset); err != nil {
		return err
	}
	// The message's 8-byte prefix: the continuation marker and the flatbuffer's length
	// (a 4-byte length alone before Arrow 0.15).
	meta := msg[4:]
	if binary.LittleEndian.Uint32(msg) == 0xffffffff {
		meta = msg[8:]
	}
	info, err := verifyMessage(meta)
	if err != nil {
		return err
	}
	if info.header != headerRecordBatch {
		return fmt.Errorf("the footer's block at offset %d is not a record batch", blk.offset)
	}
	return nil
}

// readFooter reads the footer of an IPC file of size bytes (magic, padding, messages,
// footer, its 4-byte length, magic) and returns its record batch blocks, checked.
func readFooter(in io.ReaderAt, size int64) ([]fileBlock, error) {
	const magic = int64(len(fileMagic))
	tail := make([]byte, 4+magic)
	if size < 2*8+int64(len(tail)) { // leading magic and padding, a footer, its length and magic
		return nil, fmt.Errorf("file too small (%d bytes)", size)
	}
	if _, err := in.ReadAt(tail, size-int64(len(tail))); err != nil {
		return nil, err
	}
	if string(tail[4:]) != fileMagic {
		return nil, fmt.Errorf("no %s magic at the end", fileMagic)
	}
	footerLen := int64(binary.LittleEndian.Uint32(tail))
	end := size - int64(len(tail)) - footerLen // where the footer starts
	if footerLen == 0 || end < 8 {
		return nil, fmt.Errorf("footer of %d bytes does not fit in a file of %d bytes", footerLen, size)
	}
	footer := make([]byte, footerLen)
	if _, err := in.ReadAt(footer, end); err != nil {
		return nil, err
	}
	var blocks []fileBlock
	err := catch(func() (err error) {
		blocks, err = verifyFooter(footer, end)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("footer: %w", err)
	}
	return blocks, nil
}

// openStream opens an IPC stream with size bytes left in it, or -1 if that is not known.
func openStream(in io.Reader, size int64, name string) (*Reader, error) {
	r := &Reader{name: name, in: &eofReader{r: in}}
	alloc := &boundedAllocator{}
	r.frame = &frameReader{in: r.in, size: size, alloc: alloc}
	err := catch(func() (err error) {
		r.stream, err = ipc.NewReader(r.frame, ipc.WithAllocator(alloc))
		return err
	})
	if err != nil {
		err = r.frame.cause(err)
		if r.in.short {
			return nil, fmt.Errorf("%s: truncated Arrow stream: %w", name, err)
		}
		return nil, fmt.Errorf("%s: corrupt Arrow stream: %w", name, err)
	}
	if err := catch(func() error { r.schema = r.stream.Schema(); return nil }); err != nil {
		return nil, fmt.Errorf("%s: corrupt Arrow stream: %w", name, err)
	}
	if err := r.startChecksum(); err != nil {
		catch(func() error { r.stream.Release(); return nil })
		return nil, err
	}
	return r, nil
}

// startChecksum reads what the schema says of the content checksum and starts the
// digest of what is read.
func (r *Reader) startChecksum() error {
	md := r.schema.Metadata()
	v, ok := md.GetValue(MetaChecksum)
	switch {
	case !ok:
		return missingChecksum(r.name, md)
	case v == checksumTrailer && r.file != nil:
		return fmt.Errorf("%s: schema metadata %s=%s in an Arrow file: only a stream has a checksum trailer", r.name, MetaChecksum, v)
	case v == checksumTrailer:
		r.inTrailer = true
	case isDigest(v):
		r.want = v
	default:
		return fmt.Errorf("%s: schema metadata %s=%.80q is neither a SHA-256 nor %q", r.name, MetaChecksum, v, checksumTrailer)
	}
	var err error
	if r.sum, err = newContentHash(r.schema); err != nil {
		return fmt.Errorf("%s: %w", r.name, err)
	}
	return nil
}

// verify compares the digest of everything read with the one recorded, once the input
// has ended cleanly.
func (r *Reader) verify() error {
	if r.verified {
		return nil
	}
	r.verified = true
	got := r.sum.sum()
	switch {
	case r.inTrailer && !r.hasTrailer:
		return fmt.Errorf("%s: the stream ended without its checksum trailer (a last record batch of zero rows with %s in its metadata), which its schema promises",
			r.name, MetaChecksum)
	case r.hasTrailer && !isDigest(r.trailer):
		return fmt.Errorf("%s: the checksum trailer's %s=%.80q is not a SHA-256", r.name, MetaChecksum, r.trailer)
	case r.want != "" && got != r.want:
		return r.mismatch(r.want, got)
	case r.hasTrailer && got != r.trailer:
		return r.mismatch(r.trailer, got)
	}
	return nil
}

func (r *Reader) mismatch(want, got string) error {
	return fmt.Errorf("%s: content checksum mismatch: what was read (sha256 %s) is not what was written (%s %s): changed or damaged since; write it again",
		r.name, got, MetaChecksum, want)
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
		if r.batches >= len(r.blocks) {
			r.err = r.verify()
			return false
		}
		err := catch(func() (err error) {
			if err := r.verifyBlock(r.blocks[r.batches]); err != nil {
				return err
			}
			if r.rec, err = r.file.RecordAt(r.batches); err != nil {
				return err
			}
			if err := validateRecord(r.rec); err != nil {
				return err
			}
			return r.sum.add(r.rec)
		})
		if err != nil {
			if r.rec != nil {
				r.rec.Release()
				r.rec = nil
			}
			r.err = r.batchError("truncated or corrupt Arrow file", err)
			return false
		}
		r.batches++
		return true
	}

	for {
		if !r.nextStream() {
			return false
		}
		if !r.frame.last.trailer {
			return true
		}
		// The checksum trailer: no rows, and not handed out.
		if n := r.rec.NumRows(); n != 0 {
			r.rec.Release()
			r.rec = nil
			r.err = fmt.Errorf("%s: corrupt Arrow stream: record batch %d: the checksum trailer holds %d rows, want none", r.name, r.batches-1, n)
			return false
		}
		r.trailer, r.hasTrailer = r.frame.last.checksum, true
		r.batches--
		r.rec.Release()
		r.rec = nil
	}
}

// batchError is the error of reading record batch r.batches: damage says what state the
// input is in, but for a compressed batch, which is whole and of a format not read.
func (r *Reader) batchError(damage string, err error) error {
	if errors.As(err, new(*compressedError)) {
		return fmt.Errorf("%s: record batch %d: %w", r.name, r.batches, err)
	}
	return fmt.Errorf("%s: %s: record batch %d: %w", r.name, damage, r.batches, err)
}

// nextStream reads the next record batch of a stream, the checksum trailer included.
func (r *Reader) nextStream() bool {
	var ok bool
	err := catch(func() error {
		ok = r.stream.Next()
		return r.stream.Err()
	})
	if err != nil {
		err = r.frame.cause(err)
	} else if !ok && r.frame.err != nil && r.frame.err != io.EOF {
		err = r.frame.err
	}
	switch {
	case err != nil && r.in.short:
		r.err = r.batchError("truncated Arrow stream", err)
	case err != nil:
		r.err = r.batchError("corrupt Arrow stream", err)
	case !ok && r.in.short:
		// ipc.Reader takes the end of its input for the end of the stream; only the
		// end-of-stream marker, which every writer writes on a successful close, says
		// that nothing was lost.
		r.err = fmt.Errorf("%s: truncated Arrow stream: input ended after %d record batches without the end-of-stream marker", r.name, r.batches)
	case !ok:
		r.err = r.verify()
	case ok:
		if err := catch(func() error {
			r.rec = r.stream.Record()
			r.rec.Retain()
			if err := validateRecord(r.rec); err != nil {
				return err
			}
			return r.sum.add(r.rec)
		}); err != nil {
			if r.rec != nil {
				r.rec.Release()
				r.rec = nil
			}
			r.err = fmt.Errorf("%s: corrupt Arrow stream: record batch %d: %w", r.name, r.batches, err)
			return false
		}
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
		catch(r.file.Close)
		r.file = nil
	}
	if r.stream != nil {
		catch(func() error { r.stream.Release(); return nil })
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
			if e, ok := p.(error); ok {
				err = fmt.Errorf("corrupt data: %w", e)
			} else {
				err = fmt.Errorf("corrupt data: %v", p)
			}
		}
	}()
	return f()
}
