package artifact

import (
	"encoding/binary"
	"fmt"
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
// artifact written (a change to bytes that do not matter: padding, the schema message a
// file's reader does not use) or an error naming its input, and allocates no more than a small multiple of the
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
