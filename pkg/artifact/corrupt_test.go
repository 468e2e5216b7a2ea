package artifact

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorruptBody flips, one at a time, every byte of the body of a stream's record batch
// (its validity bitmaps, offsets and values) and checks that reading never panics and
// that any error names the path. Reading the corrupt data back without error is allowed:
// a changed id or answer is still a valid query.
//
// The metadata is left alone: Arrow Go trusts the lengths it finds there and may try to
// allocate whatever a corrupt one says, which no reader built on it can prevent.
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
