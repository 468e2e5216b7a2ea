package artifact

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorruptBody flips, one at a time, every byte of the body of a stream's record batch
// (its validity bitmaps, offsets and values) and checks that reading never panics and
// that any error names the path. Reading the corrupt data back without error is allowed:
// a changed id or answer is still a valid query. TestCorruptArtifacts changes the
// metadata too.
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
	// The record batch message follows the schema message, which is what an empty
	// stream holds before its 8-byte end-of-stream marker: continuation marker, metadata
	// length, metadata, body.
	msg := len(empty) - 8
	body := msg + 8 + int(binary.LittleEndian.Uint32(data[msg+4:]))
	end := len(data) - 8
	if body >= end {
		t.Fatalf("no record batch body found (message at %d, body at %d, end %d)", msg, body, end)
	}
	path := filepath.Join(t.TempDir(), "q.arrow")
	corrupt := make([]byte, len(data))
	errs := 0
	for i := body; i < end; i++ {
		for _, flip := range []byte{0x01, 0x80, 0xff} {
			copy(corrupt, data)
			corrupt[i] ^= flip
			if err := os.WriteFile(path, corrupt, 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := ReadQueries(path)
			if err != nil {
				errs++
				if !strings.HasPrefix(err.Error(), path+": ") {
					t.Fatalf("byte %d ^ %#x: error %q does not name the path", i, flip, err)
				}
			}
		}
	}
	t.Logf("%d bytes of body flipped 3 ways: %d errors", end-body, errs)
}

// TestCorruptArtifacts changes, one at a time, every byte of a small real artifact of
// every kind, in the file and the stream format, read from a file and (for a sample of
// positions) through a pipe, and checks that the reader never panics, returns a valid
// value or an error naming its input, and allocates no more than a small multiple of the
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
				try := func(i int, desc string, pipe bool) {
					var err error
					n := allocated(func() { err = readAs(t, k.read, corrupt, pipe) })
					if n > allocationBound(len(corrupt)) {
						t.Fatalf("byte %d %s (pipe %v): allocated %d bytes for %d bytes of input", i, desc, pipe, n, len(corrupt))
					}
					reads++
					if err != nil {
						errs++
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
