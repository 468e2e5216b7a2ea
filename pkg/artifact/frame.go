package artifact

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// maxMessageMetadata bounds the flatbuffer metadata of one stream message read from an
// input of unknown size (a pipe). A schema's metadata holds the artifact's metadata, a few
// kilobytes; a record batch's, a few hundred bytes.
const maxMessageMetadata = 64 << 20

// frameReader sits between an IPC stream and ipc.Reader and checks each message before
// the reader sees it: its framing, its metadata (verifyMessage), and that its declared
// body is there. From an input of known size the lengths are checked against the bytes
// left; from a pipe the message is read ahead, into memory that grows only as bytes
// arrive, so a lying length meets the end of the input instead of a giant allocation.
// Each message sets the allocator's limit to its own length, bounding every buffer the
// reader allocates while decoding it.
type frameReader struct {
	in    io.Reader // the input, through an eofReader
	size  int64     // bytes left in the input; -1 when unknown
	alloc *boundedAllocator

	pending  [][]byte    // bytes of the current message read ahead, still to pass on, in parts
	body     int64       // bytes of the current message's body still to pass straight through
	messages int         // messages passed on
	last     messageInfo // the message passed on last (or being passed on)
	trailers int         // checksum trailers passed on
	ended    bool        // the end-of-stream marker was passed on
	err      error       // what ended the stream: io.EOF or why it is corrupt
}

func (f *frameReader) Read(p []byte) (int, error) {
	if f.err != nil {
		// Whatever the failed read left behind (the framing of a message whose body from a
		// pipe was cut short, the rest of a body) is not known to be whole.
		return 0, f.err
	}
	for len(f.pending) > 0 && len(f.pending[0]) == 0 {
		f.pending = f.pending[1:]
	}
	if len(f.pending) == 0 && f.body == 0 {
		if f.ended {
			return 0, io.EOF
		}
		if err := f.next(); err != nil {
			f.err = err
			return 0, err
		}
	}
	if len(f.pending) > 0 {
		n := copy(p, f.pending[0])
		f.pending[0] = f.pending[0][n:]
		return n, nil
	}
	if int64(len(p)) > f.body {
		p = p[:f.body]
	}
	n, err := f.read(p)
	f.body -= int64(n)
	if f.body > 0 && err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if f.body == 0 && err == io.EOF {
		err = nil
	}
	if err != nil {
		f.err = err
	}
	return n, err
}

// read reads from the input, counting the bytes left.
func (f *frameReader) read(p []byte) (int, error) {
	n, err := f.in.Read(p)
	if f.size >= 0 {
		f.size -= int64(n)
	}
	return n, err
}

// readFull reads n bytes, which the caller has checked against the input's size or
// bounded. From a pipe it grows its buffer as bytes arrive rather than allocating n first.
func (f *frameReader) readFull(n int64) ([]byte, error) {
	if f.size >= 0 {
		buf := make([]byte, n)
		_, err := io.ReadFull(readerFunc(f.read), buf)
		return buf, err
	}
	var buf bytes.Buffer
	got, err := io.CopyN(&buf, readerFunc(f.read), n)
	if got < n && (err == nil || err == io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return buf.Bytes(), err
}

type readerFunc func([]byte) (int, error)

func (r readerFunc) Read(p []byte) (int, error) { return r(p) }

// next reads the framing and metadata of the next message and checks them.
func (f *frameReader) next() error {
	var head [8]byte
	n, err := io.ReadFull(readerFunc(f.read), head[:4])
	switch {
	case n == 0 && err == io.EOF:
		return io.EOF // between messages: ipc.Reader ends here, Reader says the marker is missing
	case err != nil:
		return err
	}
	switch binary.LittleEndian.Uint32(head[:]) {
	case 0: // end of stream, pre-0.15 form
		f.pending, f.ended = [][]byte{head[:4]}, true
		return nil
	case 0xffffffff:
	default:
		return f.corrupt("no continuation marker where message %d should begin", f.messages)
	}
	if _, err := io.ReadFull(readerFunc(f.read), head[4:]); err != nil {
		return noEOF(err)
	}
	metaLen := int64(int32(binary.LittleEndian.Uint32(head[4:])))
	switch {
	case metaLen == 0: // end of stream
		f.pending, f.ended = [][]byte{head[:]}, true
		return nil
	case metaLen < 0 || metaLen > maxMessageMetadata:
		return f.corrupt("message %d declares %d bytes of metadata", f.messages, metaLen)
	case f.size >= 0 && metaLen > f.size:
		return f.corrupt("message %d declares %d bytes of metadata, but only %d bytes follow", f.messages, metaLen, f.size)
	}
	meta, err := f.readFull(metaLen)
	if err != nil {
		return noEOF(err)
	}
	var info messageInfo
	if err := catch(func() (err error) { info, err = verifyMessage(meta); return err }); err != nil {
		if ce := (*compressedError)(nil); errors.As(err, &ce) {
			return ce
		}
		return f.corrupt("message %d: %v", f.messages, err)
	}
	switch {
	case f.messages == 0 && info.header != headerSchema:
		return f.corrupt("the stream does not begin with a schema")
	case f.messages > 0 && info.header == headerSchema:
		return f.corrupt("message %d: a second schema", f.messages)
	case f.trailers > 0:
		return f.corrupt("message %d follows the checksum trailer, which ends the stream", f.messages)
	case f.size >= 0 && info.bodyLen > f.size:
		return f.corrupt("message %d declares a body of %d bytes, but only %d bytes follow", f.messages, info.bodyLen, f.size)
	}
	if info.trailer {
		f.trailers++
	}
	f.last = info
	f.alloc.limit = max(metaLen, info.bodyLen)
	f.pending = [][]byte{head[:], meta}
	if f.size >= 0 {
		f.body = info.bodyLen
	} else {
		body, err := f.readFull(info.bodyLen)
		if err != nil {
			return noEOF(err)
		}
		f.pending = append(f.pending, body)
	}
	f.messages++
	return nil
}

// frameError is a message found corrupt by the frameReader.
type frameError struct{ msg string }

func (e *frameError) Error() string { return e.msg }

func (f *frameReader) corrupt(format string, args ...any) error {
	return &frameError{fmt.Sprintf(format, args...)}
}

// cause returns the frameReader's own account of an error the IPC reader returned after
// reading from it, which says more than the reader's wrapping of it.
func (f *frameReader) cause(err error) error {
	var fe *frameError
	if errors.As(f.err, &fe) {
		return fe
	}
	var ce *compressedError
	if errors.As(f.err, &ce) {
		return ce
	}
	return err
}

// noEOF turns an end of input inside a message into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
