package artifact

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"
)

// streamMessage is where one message of a stream lies: its 8-byte prefix at start, its
// metadata after it, then its body.
type streamMessage struct {
	start, meta, body, bodyLen int
}

// streamMessages splits a well-formed stream into its messages, up to the end-of-stream
// marker.
func streamMessages(t *testing.T, data []byte) []streamMessage {
	t.Helper()
	var msgs []streamMessage
	for at := 0; ; {
		metaLen := int(binary.LittleEndian.Uint32(data[at+4:]))
		if metaLen == 0 {
			return msgs
		}
		info, err := verifyMessage(data[at+8 : at+8+metaLen])
		if err != nil {
			t.Fatalf("message at %d: %v", at, err)
		}
		m := streamMessage{start: at, meta: at + 8, body: at + 8 + metaLen, bodyLen: int(info.bodyLen)}
		msgs = append(msgs, m)
		at = m.body + m.bodyLen
	}
}

// testStream returns the bytes of a queries stream of n queries: a schema, one record
// batch, the checksum trailer and the end-of-stream marker.
func testStream(t *testing.T, n int) []byte {
	t.Helper()
	data, err := os.ReadFile(streamFile(t, testQueries(n)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readChunks reads r to its end or first error, size bytes at a time.
func readChunks(r io.Reader, size int) ([]byte, error) {
	var out []byte
	p := make([]byte, size)
	for {
		n, err := r.Read(p)
		out = append(out, p[:n]...)
		if err != nil {
			return out, err
		}
	}
}

// TestFrameReaderPassesThrough reads a stream through a frameReader however its input
// delivers bytes (one at a time, in halves, the last ones with io.EOF) and however much
// its consumer asks for at once: every byte comes through unchanged, every message is
// checked as it passes (three, one of them the checksum trailer), and the stream ends
// with io.EOF after its end-of-stream marker.
func TestFrameReaderPassesThrough(t *testing.T) {
	data := testStream(t, 5)
	for _, in := range []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"one byte", iotest.OneByteReader},
		{"halves", iotest.HalfReader},
		{"data with EOF", iotest.DataErrReader},
	} {
		for _, size := range []int64{int64(len(data)), -1} {
			for _, chunk := range []int{1, 7, 1 << 16} {
				t.Run(fmt.Sprintf("%s/size %d/chunk %d", in.name, size, chunk), func(t *testing.T) {
					f := &frameReader{in: &eofReader{r: in.wrap(bytes.NewReader(data))}, size: size, alloc: &boundedAllocator{}}
					got, err := readChunks(f, chunk)
					if err != io.EOF {
						t.Errorf("err = %v, want io.EOF", err)
					}
					if !bytes.Equal(got, data) {
						t.Errorf("read %d bytes, not the %d of the stream", len(got), len(data))
					}
					if f.messages != 3 || f.trailers != 1 || !f.ended {
						t.Errorf("passed %d messages, %d trailers, ended %v; want 3, 1, true", f.messages, f.trailers, f.ended)
					}
				})
			}
		}
	}
}

// TestFrameReaderEnds checks how a frameReader ends an input that stops early. Without
// its end-of-stream marker the stream ends cleanly after its last message (io.EOF, for
// Reader to call truncated), even when the input returns its last bytes with io.EOF; an
// input that stops inside a message's body, whose length was checked against a size the
// input then fails to deliver, ends with io.ErrUnexpectedEOF.
func TestFrameReaderEnds(t *testing.T) {
	data := testStream(t, 5)
	msgs := streamMessages(t, data)
	batch := msgs[1]
	if batch.bodyLen == 0 {
		t.Fatal("the record batch has no body")
	}
	noMarker := data[:len(data)-8]
	for _, tc := range []struct {
		name  string
		in    []byte
		size  int64
		read  int // bytes read before the error
		want  error
		wrap  func(io.Reader) io.Reader
		chunk int
	}{
		{"cut after the batch's body", data[:msgs[2].start], int64(msgs[2].start), msgs[2].start, io.EOF, iotest.DataErrReader, 1 << 16},
		{"no marker", noMarker, int64(len(noMarker)), len(noMarker), io.EOF, iotest.DataErrReader, 1 << 16},
		{"no marker, one byte at a time", noMarker, int64(len(noMarker)), len(noMarker), io.EOF, iotest.DataErrReader, 1},
		{"no marker, from a pipe", noMarker, -1, len(noMarker), io.EOF, iotest.DataErrReader, 1 << 16},
		{"body cut short", data[:batch.body+3], int64(len(data)), batch.body + 3, io.ErrUnexpectedEOF, iotest.DataErrReader, 1 << 16},
		{"body cut short, plain reads", data[:batch.body+3], int64(len(data)), batch.body + 3, io.ErrUnexpectedEOF, func(r io.Reader) io.Reader { return r }, 1 << 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &frameReader{in: &eofReader{r: tc.wrap(bytes.NewReader(tc.in))}, size: tc.size, alloc: &boundedAllocator{}}
			got, err := readChunks(f, tc.chunk)
			if err != tc.want {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if len(got) != tc.read {
				t.Errorf("read %d bytes, want %d", len(got), tc.read)
			}
			// The error stays: a later read neither returns more bytes nor another error.
			if n, err := f.Read(make([]byte, 16)); n != 0 || err != tc.want {
				t.Errorf("read after the end: %d bytes, err = %v; want 0, %v", n, err, tc.want)
			}
		})
	}
}

// flakyReader fails once, with errFlaky, when its reads reach offset at; it reads on
// after that as if nothing happened.
type flakyReader struct {
	r      io.Reader
	at     int
	read   int
	failed bool
}

var errFlaky = errors.New("flaky read")

func (f *flakyReader) Read(p []byte) (int, error) {
	if !f.failed && f.read+len(p) > f.at {
		if f.read == f.at {
			f.failed = true
			return 0, errFlaky
		}
		p = p[:f.at-f.read]
	}
	n, err := f.r.Read(p)
	f.read += n
	return n, err
}

// TestFrameReaderStickyError: once a read of the input fails, inside a message's framing
// or inside its body, the frameReader returns that error from then on, even if the input
// would read on: bytes after a failed read are not known to follow the ones before it.
func TestFrameReaderStickyError(t *testing.T) {
	data := testStream(t, 5)
	msgs := streamMessages(t, data)
	for _, tc := range []struct {
		name string
		at   int
	}{
		{"prefix", msgs[1].start + 2},
		{"metadata", msgs[1].meta + 5},
		{"body", msgs[1].body + 5},
	} {
		for _, size := range []int64{int64(len(data)), -1} {
			t.Run(fmt.Sprintf("%s/size %d", tc.name, size), func(t *testing.T) {
				in := &flakyReader{r: bytes.NewReader(data), at: tc.at}
				f := &frameReader{in: &eofReader{r: in}, size: size, alloc: &boundedAllocator{}}
				if _, err := readChunks(f, 1); err != errFlaky {
					t.Fatalf("err = %v, want %v", err, errFlaky)
				}
				for range 3 {
					if n, err := f.Read(make([]byte, 16)); n != 0 || err != errFlaky {
						t.Fatalf("read after the failure: %d bytes, err = %v; want 0, %v", n, err, errFlaky)
					}
				}
			})
		}
	}
}

// TestStreamLengthsChecked cuts a stream file inside its record batch and checks that
// the frameReader refuses the batch's declared lengths against the bytes actually left,
// counted as the messages before it were read, rather than letting the IPC reader read
// past the end.
func TestStreamLengthsChecked(t *testing.T) {
	data := testStream(t, 5)
	batch := streamMessages(t, data)[1]
	path := writeTemp(t, nil)
	for _, tc := range []struct {
		name string
		cut  int
		want string
	}{
		{"after the prefix", batch.meta, fmt.Sprintf("record batch 0: message 1 declares %d bytes of metadata, but only 0 bytes follow", batch.body-batch.meta)},
		{"inside the metadata", batch.meta + 3, fmt.Sprintf("record batch 0: message 1 declares %d bytes of metadata, but only 3 bytes follow", batch.body-batch.meta)},
		{"inside the body", batch.body + 5, fmt.Sprintf("record batch 0: message 1 declares a body of %d bytes, but only 5 bytes follow", batch.bodyLen)},
		{"before the body", batch.body, fmt.Sprintf("record batch 0: message 1 declares a body of %d bytes, but only 0 bytes follow", batch.bodyLen)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, data[:tc.cut], 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := ReadQueries(path)
			if want := path + ": corrupt Arrow stream: " + tc.want; err == nil || err.Error() != want {
				t.Errorf("err = %v\nwant %s", err, want)
			}
		})
	}
}

// TestPipeBodyLengthBounded: from a pipe, whose size is not known, a record batch that
// declares a body far larger than memory is read as far as the input goes, into memory
// that grows with it, and refused as truncated; it is never allocated up front.
func TestPipeBodyLengthBounded(t *testing.T) {
	data := testStream(t, 5)
	batch := streamMessages(t, data)[1]
	meta := fbuf(data[batch.meta:batch.body])
	root, err := meta.root()
	if err != nil {
		t.Fatal(err)
	}
	at, err := meta.field(root, messageBodyLength)
	if err != nil || at == 0 {
		t.Fatalf("no body length in the record batch's metadata (%v)", err)
	}
	corrupt := bytes.Clone(data)
	binary.LittleEndian.PutUint64(corrupt[batch.meta+int(at):], 1<<50)
	_, _, err = viaPipe(t, func() error { _, err := os.Stdout.Write(corrupt); return err })
	if prefix := "stdin: truncated Arrow stream: record batch 0: "; err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.HasSuffix(err.Error(), ": unexpected EOF") {
		t.Errorf("err = %v\nwant %s...: unexpected EOF", err, prefix)
	}
	// From the file, whose size is known, the length is refused before any read.
	path := writeTemp(t, corrupt)
	_, _, err = ReadQueries(path)
	if want := fmt.Sprintf("%s: corrupt Arrow stream: record batch 0: message 1 declares a body of %d bytes, but only %d bytes follow", path, int64(1<<50), len(data)-batch.body); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

// TestPipeMetadataLength: from a pipe, a message's metadata is read ahead up to
// maxMessageMetadata bytes, as far as the input goes; a longer or negative length is
// refused before any read.
func TestPipeMetadataLength(t *testing.T) {
	data := testStream(t, 5)
	batch := streamMessages(t, data)[1]
	for _, tc := range []struct {
		name    string
		metaLen uint32
		want    string
	}{
		{"largest", maxMessageMetadata, "stdin: truncated Arrow stream: record batch 0: "},
		{"one more", maxMessageMetadata + 1, "stdin: corrupt Arrow stream: record batch 0: message 1 declares 67108865 bytes of metadata"},
		{"negative", 1 << 31, "stdin: corrupt Arrow stream: record batch 0: message 1 declares -2147483648 bytes of metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			corrupt := bytes.Clone(data)
			binary.LittleEndian.PutUint32(corrupt[batch.start+4:], tc.metaLen)
			_, _, err := viaPipe(t, func() error { _, err := os.Stdout.Write(corrupt); return err })
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant it to begin %s", err, tc.want)
			}
		})
	}
}
