package artifact

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/ipc"
)

// recompress copies an artifact, file or stream, as Arrow's own writer compresses it
// (as pyarrow's compression="zstd" or "lz4" would), record batch by record batch, the
// schema and its metadata unchanged.
func recompress(t *testing.T, src string, stream bool, codec ipc.Option) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	dst := filepath.Join(t.TempDir(), "compressed.arrow")
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if stream {
		r, err := ipc.NewReader(in)
		if err != nil {
			t.Fatal(err)
		}
		w := ipc.NewWriter(out, ipc.WithSchema(r.Schema()), codec)
		for r.Next() {
			if err := w.Write(r.Record()); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	r, err := ipc.NewFileReader(in)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ipc.NewFileWriter(out, ipc.WithSchema(r.Schema()), codec)
	if err != nil {
		t.Fatal(err)
	}
	for i := range r.NumRecords() {
		rec, err := r.RecordAt(i)
		if err != nil {
			t.Fatal(err)
		}
		err = w.Write(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestCompressedRefused: an artifact compressed by another writer is refused at its first
// record batch, in either form and codec, with an error that says so and how to write it
// again, not that it is corrupt. Before, a file was read when each decompressed buffer
// fitted in the file's size (LZ4 here) and called corrupt when one did not (ZSTD here).
func TestCompressedRefused(t *testing.T) {
	qs := testQueries(maxBatchRows + 7) // two batches
	file := filepath.Join(t.TempDir(), "q.arrow")
	if err := WriteQueries(file, testMeta, qs); err != nil {
		t.Fatal(err)
	}
	for _, form := range []struct {
		name   string
		path   string
		stream bool
	}{{"file", file, false}, {"stream", streamFile(t, qs), true}} {
		for _, c := range []struct {
			name  string
			codec ipc.Option
		}{{"ZSTD", ipc.WithZstd()}, {"LZ4_FRAME", ipc.WithLZ4()}} {
			t.Run(form.name+"/"+c.name, func(t *testing.T) {
				path := recompress(t, form.path, form.stream, c.codec)
				_, _, err := ReadQueries(path)
				want := path + ": record batch 0: its buffers are compressed (" + c.name + "), and artifacts are read uncompressed"
				if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "corrupt") {
					t.Fatalf("got %v, want %q...", err, want)
				}
			})
		}
	}
}
