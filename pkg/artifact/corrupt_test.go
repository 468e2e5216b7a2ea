package artifact

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCorruptBody flips, one at a time, every byte of the body of a stream's record batch
// (its validity bitmaps, offsets and values) and checks that reading never panics, that
// any error names the path, and that a read without error gives the queries written: a
// flip in padding changes nothing, and any other is refused (a changed id or answer
// reads as a valid query, so only the content checksum tells). TestCorruptArtifacts
// changes the metadata too.
func TestCorruptBody(t *testing.T) {
	qs := testQueries(7)
	data, err := os.ReadFile(streamFile(t, qs))
	if err != nil {
		t.Fatal(err)
	}
	empty, err := os.ReadFile(streamFile(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	// The record batch message follows the schema message (continuation marker, metadata
	// length, metadata), and is followed by the checksum trailer and the end-of-stream
	// marker, which is all an empty stream holds after its schema.
	msg := 8 + int(binary.LittleEndian.Uint32(data[4:]))
	body := msg + 8 + int(binary.LittleEndian.Uint32(data[msg+4:]))
	end := len(data) - (len(empty) - msg)
	if body >= end {
		t.Fatalf("no record batch body found (message at %d, body at %d, end %d)", msg, body, end)
	}
	_, want, err := ReadQueries(writeTemp(t, data))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "q.arrow")
	corrupt := make([]byte, len(data))
	errs, same := 0, 0
	for i := body; i < end; i++ {
		for _, flip := range []byte{0x01, 0x80, 0xff} {
			copy(corrupt, data)
			corrupt[i] ^= flip
			if err := os.WriteFile(path, corrupt, 0o644); err != nil {
				t.Fatal(err)
			}
			_, got, err := ReadQueries(path)
			if err != nil {
				errs++
				if !strings.HasPrefix(err.Error(), path+": ") {
					t.Fatalf("byte %d ^ %#x: error %q does not name the path", i, flip, err)
				}
				continue
			}
			same++
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("byte %d ^ %#x: read without error as other queries", i, flip)
			}
		}
	}
	if errs == 0 {
		t.Fatal("no flip refused")
	}
	t.Logf("%d bytes of body flipped 3 ways: %d errors, %d read back unchanged (padding)", end-body, errs, same)
}

// TestCorruptArtifacts changes, one at a time, every byte of a small real artifact of
// every kind, in the file and the stream format, read from a file and (for a sample of
// positions) through a pipe, and checks that the reader never panics, returns the
// artifact written (a change to bytes that do not matter: padding) or an error naming
// its input, and allocates no more than a small multiple of the
// input's size. The schema, footer and message headers, where the lengths and counts
// live, have every byte flipped in all its bits, every fourth byte in its lowest and
// highest bits too, and every other 4-byte word set to large values; the record bodies
// every eighth byte flipped. The fuzz targets (fuzz_test.go) explore further.
//
// A panic fails the test by crashing it; a fatal out-of-memory, by killing it.
func TestCorruptArtifacts(t *testing.T) {
	for _, k := range artifactKinds {
		for _, stream := range []bool{false, true} {
			form := "file"
			if stream {
				form = "stream"
			}
			t.Run(k.kind+"/"+form, func(t *testing.T) {
				data := sample(t, k.kind, stream)
				corrupt := make([]byte, len(data))
				var reads, errs int
				want, err := k.show(writeTemp(t, data))
				if err != nil {
					t.Fatal(err)
				}
				try := func(i int, desc string, pipe bool) {
					var err error
					var got string
					read := func(p string) (err error) { got, err = k.show(p); return err }
					n := allocated(func() { err = readAs(t, read, corrupt, pipe) })
					if n > allocationBound(len(corrupt)) {
						t.Fatalf("byte %d %s (pipe %v): allocated %d bytes for %d bytes of input", i, desc, pipe, n, len(corrupt))
					}
					reads++
					if err != nil {
						errs++
					} else if got != want {
						// What is read without error is what was written: the content
						// checksum refuses any other content.
						t.Fatalf("byte %d %s (pipe %v): read without error as another artifact:\n%s\nwant\n%s", i, desc, pipe, got, want)
					}
				}
				for i := range data {
					header := isHeader(data, i, stream)
					var flips []byte
					switch {
					case header && i%4 == 0:
						flips = []byte{0xff, 0x01, 0x80}
					case header || i%8 == 0:
						flips = []byte{0xff}
					}
					for _, flip := range flips {
						copy(corrupt, data)
						corrupt[i] ^= flip
						try(i, fmt.Sprintf("^ %#x", flip), false)
						if i%16 == 0 {
							try(i, fmt.Sprintf("^ %#x", flip), true)
						}
					}
					// A length or count set to a large value: 4 bytes from here.
					if header && i+4 <= len(data) && i%8 == 0 {
						for _, v := range []uint32{0x7fffffff, 0xfffffff0} {
							copy(corrupt, data)
							binary.LittleEndian.PutUint32(corrupt[i:], v)
							try(i, fmt.Sprintf("= %#x", v), false)
						}
					}
				}
				t.Logf("%d bytes, %d reads: %d errors", len(data), reads, errs)
			})
		}
	}
}

// isHeader reports whether byte i of an artifact is in its framing or flatbuffer metadata
// (or near it) rather than in a record batch body: the first 512 bytes (magic and schema)
// and, in a file, the last 1,024 (footer) and in a stream the 256 after each continuation
// marker.
func isHeader(data []byte, i int, stream bool) bool {
	if i < 512 || (!stream && i >= len(data)-1024) {
		return true
	}
	for j := max(0, i-256); j+4 <= i+1 && j+4 <= len(data); j++ {
		if binary.LittleEndian.Uint32(data[j:]) == 0xffffffff {
			return true
		}
	}
	return false
}

// writeTemp writes data to a file of the test's temporary folder and returns its path.
func writeTemp(t testing.TB, data []byte) string {
	path := filepath.Join(t.TempDir(), "orig.arrow")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLeadingSchema changes the copy of the schema that an IPC file begins with and leaves
// the footer's: a metadata value (one hex digit of the content checksum, which the writer
// patches into both copies), and a field's name. The readers here decode the footer's
// schema, so both read as the artifact written before the leading one was checked; a
// reader that reads the file as a stream would have seen the changed one. Both are
// refused now, the file named, from a file and through a pipe.
func TestLeadingSchema(t *testing.T) {
	for _, k := range artifactKinds {
		data := sample(t, k.kind, false)
		// The leading schema message: the magic and padding (8 bytes), the continuation
		// marker and the metadata's length, the metadata.
		msgEnd := 16 + int(binary.LittleEndian.Uint32(data[12:]))
		digest := digestOf(t, data)
		for _, c := range []struct {
			name string
			find string
		}{
			{"checksum digit", digest},
			{"field name", k.firstField(t, data)},
		} {
			t.Run(k.kind+"/"+c.name, func(t *testing.T) {
				at := strings.Index(string(data), c.find)
				if at < 8 || at+len(c.find) > msgEnd {
					t.Fatalf("%q not found in the leading schema message (first at %d, message ends at %d)", c.find, at, msgEnd)
				}
				if strings.LastIndex(string(data), c.find) < msgEnd {
					t.Fatalf("%q has no second copy, in the footer", c.find)
				}
				changed := bytes.Clone(data)
				changed[at] ^= 0x01 // '0'..'9', 'a'..'f' and letters stay printable
				for _, pipe := range []bool{false, true} {
					err := readAs(t, k.read, changed, pipe)
					if err == nil || !strings.Contains(err.Error(), "leading schema message") {
						t.Errorf("pipe %v: got %v, want the leading schema message refused", pipe, err)
					}
				}
			})
		}
	}
}

// digestOf is the content checksum in an artifact file's schema metadata.
func digestOf(t *testing.T, data []byte) string {
	i := bytes.Index(data, []byte(MetaChecksum))
	if i < 0 {
		t.Fatal("no checksum key")
	}
	for j := range data {
		if isHexDigest(data[j:]) {
			return string(data[j : j+64])
		}
	}
	t.Fatal("no checksum digest")
	return ""
}

func isHexDigest(b []byte) bool {
	if len(b) < 64 {
		return false
	}
	for _, c := range b[:64] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// firstField is the name of the kind's first column, read from the sample itself.
func (k artifactKind) firstField(t *testing.T, data []byte) string {
	r, err := openSeekable(io.NewSectionReader(bytes.NewReader(data), 0, int64(len(data))), k.kind)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return r.schema.Field(0).Name
}
