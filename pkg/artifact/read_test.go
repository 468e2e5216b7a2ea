package artifact

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestStdinAtOffset reads artifacts from stdin redirected from a regular file whose offset
// is past some other bytes, as after `{ head -c 4 >/dev/null; stage; } < file`: the
// artifact is what follows the offset, read with random access, and lengths in it are
// checked against the bytes that follow the offset, not the whole file.
func TestStdinAtOffset(t *testing.T) {
	qs := testQueries(5)
	stream := testStream(t, 5)
	batch := streamMessages(t, stream)[1]
	file := filepath.Join(t.TempDir(), "q.arrow")
	if err := WriteQueries(file, testMeta, qs); err != nil {
		t.Fatal(err)
	}
	fileData, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	prefix := []byte("some other output\n")
	for _, tc := range []struct {
		name string
		data []byte
		want string // the error; "" when the queries read back
	}{
		{"stream", stream, ""},
		{"file", fileData, ""},
		{"stream cut inside its body", stream[:batch.body+5],
			fmt.Sprintf("stdin: corrupt Arrow stream: record batch 0: message 1 declares a body of %d bytes, but only 5 bytes follow", batch.bodyLen)},
		{"nothing after the offset", nil, "stdin: empty input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, append(prefix[:len(prefix):len(prefix)], tc.data...))
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Seek(int64(len(prefix)), 0); err != nil {
				t.Fatal(err)
			}
			setStd(t, &os.Stdin, f)
			_, got, err := ReadQueries("-")
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				sameQueries(t, got, qs)
				return
			}
			if err == nil || err.Error() != tc.want {
				t.Errorf("err = %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestTinyFiles: an input that begins with the file magic but is too short to hold the
// leading magic, its padding, a footer, the footer's length and the closing magic is
// refused as too small, whatever the length its last bytes spell.
func TestTinyFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		want string
	}{
		{"magic, padding and closing magic", "ARROW1\x00\x00" + "\x00\x00\x00\x00" + "ARROW1", "file too small (18 bytes)"},
		{"a footer of 4 bytes", "ARROW1\x00\x00" + "abcd" + "\x04\x00\x00\x00" + "ARROW1", "file too small (22 bytes)"},
		{"one byte short", "ARROW1\x00\x00" + "abcdefg" + "\x07\x00\x00\x00" + "ARROW1", "file too small (25 bytes)"},
		{"footer right after the padding", "ARROW1\x00\x00" + "abcdefgh" + "\x08\x00\x00\x00" + "ARROW1", "footer: corrupt flatbuffer metadata"},
		{"footer over the padding", "ARROW1\x00\x00" + "abcdefgh" + "\x09\x00\x00\x00" + "ARROW1", "footer of 9 bytes does not fit in a file of 26 bytes"},
		{"smallest", "ARROW1\x00\x00" + "abcdefgh" + "\x00\x00\x00\x00" + "ARROW1", "footer of 0 bytes does not fit in a file of 26 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, []byte(tc.data))
			_, _, err := ReadQueries(path)
			if want := path + ": truncated or corrupt Arrow file: " + tc.want; err == nil || err.Error() != want {
				t.Errorf("err = %v\nwant %s", err, want)
			}
		})
	}
}

// TestLeadingSchemaBounds: the schema message an IPC file begins with is read within the
// bytes before the first record batch; one whose metadata length reaches past them is
// refused, with the count of bytes there are, and a footer whose first record batch
// begins right after the magic and its padding leaves no room for it at all.
func TestLeadingSchemaBounds(t *testing.T) {
	file := filepath.Join(t.TempDir(), "q.arrow")
	if err := WriteQueries(file, testMeta, testQueries(5)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := readFooter(bytes.NewReader(data), int64(len(data)))
	if err != nil || len(blocks) == 0 {
		t.Fatalf("footer: %d blocks, %v", len(blocks), err)
	}
	room := int(blocks[0].offset) - 16 // after the magic, its padding and the message's prefix
	if got := int(binary.LittleEndian.Uint32(data[12:])); got != room {
		t.Fatalf("the leading schema message has %d bytes of metadata, want the %d before the first batch", got, room)
	}
	// The footer's first block, as the footer holds it: offset, then metadata length.
	footerAt := len(data) - 10 - int(binary.LittleEndian.Uint32(data[len(data)-10:]))
	block := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint64(nil, uint64(blocks[0].offset)), uint32(blocks[0].metaLen))
	if n := bytes.Count(data[footerAt:], block); n != 1 {
		t.Fatalf("the first block found %d times in the footer", n)
	}
	at := footerAt + bytes.Index(data[footerAt:], block)
	type edit struct {
		name string
		edit func(b []byte)
		want string // after "PATH: corrupt Arrow file: "
	}
	var cases []edit
	for _, extra := range []int{1, 8, 64} {
		cases = append(cases, edit{fmt.Sprint(extra), func(b []byte) { binary.LittleEndian.PutUint32(b[12:], uint32(room+extra)) },
			fmt.Sprintf("leading schema message: message 0 declares %d bytes of metadata, but only %d bytes follow", room+extra, room)})
	}
	cases = append(cases, edit{"first batch at offset 8", func(b []byte) { binary.LittleEndian.PutUint64(b[at:], 8) },
		"no room for the leading schema message before offset 8"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			corrupt := bytes.Clone(data)
			tc.edit(corrupt)
			path := writeTemp(t, corrupt)
			_, _, err := ReadQueries(path)
			if want := path + ": corrupt Arrow file: " + tc.want; err == nil || err.Error() != want {
				t.Errorf("err = %v\nwant %s", err, want)
			}
		})
	}
}
