package qecone

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzImport feeds Import arbitrary bytes as a QE-ConE checkpoint (a torch.save zip of
// pickles), beside the fixture's config.json: it must return a checkpoint or an error,
// never panic, and allocate no more than a bound of the input's size.
func FuzzImport(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join(checkpointDir, "checkpoint"))
	if err != nil {
		f.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(checkpointDir, "config.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte("PK\x03\x04"))
	f.Add(torchZip(f, storagePickle(1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "checkpoint"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config.json"), config, 0o644); err != nil {
			t.Fatal(err)
		}
		ck, err := Import(ImportOptions{Checkpoint: dir})
		if err == nil && ck == nil {
			t.Fatal("no checkpoint and no error")
		}
	})
}

// TestImportRefusesLyingSizes: a 200-byte checkpoint whose pickle declares a storage of
// 2^31-1 float32 elements (8 GiB) for a 4-byte record, or a string of 2^40 bytes, is
// refused before gopickle allocates it.
func TestImportRefusesLyingSizes(t *testing.T) {
	for _, c := range []struct{ name, pickle, want string }{
		{"storage", storagePickle(1<<31 - 1), "declares 2147483647 elements"},
		{"string", "\x80\x04\x8d\x00\x00\x00\x00\x00\x01\x00\x00.", "declares 1099511627776 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "checkpoint"), torchZip(t, c.pickle), 0o644)
			lambda := 0.1
			_, err := Import(ImportOptions{Checkpoint: dir, Lambda: &lambda})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

// storagePickle is a pickle of one persistent storage id, ("storage", FloatStorage, "0",
// "cpu", size), as torch.save writes for a tensor's storage.
func storagePickle(size uint32) string {
	b := binary.LittleEndian.AppendUint32(nil, size)
	return "\x80\x02(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuJ" + string(b) + "tQ."
}

// torchZip is a torch.save-shaped zip archive: the pickle as archive/data.pkl and a
// 4-byte storage record archive/data/0, both stored.
func torchZip(t testing.TB, pickle string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, r := range [][2]string{{"archive/data.pkl", pickle}, {"archive/data/0", "\x00\x00\x00\x00"}} {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: r[0], Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(r[1]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
