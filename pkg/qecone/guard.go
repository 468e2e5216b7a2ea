package qecone

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"

	"github.com/rocone/rocone/pkg/picklescan"
)

// maxPickle bounds the pickle of a checkpoint (its data.pkl): QE-ConE's holds a few
// dozen tensor headers and the optimiser's state, kilobytes.
const maxPickle = 64 << 20

// checkTorchFile checks a torch.save zip archive before gopickle's pytorch.Load reads it:
// gopickle allocates every length the pickle declares (strings, frames) and every
// storage's declared element count before reading them, so one changed byte would ask
// for terabytes and end the process. Here the pickle's opcodes are scanned
// (picklescan.Scan) and the pickle is decoded once without its tensors, checking that
// each storage's declared size fits in the bytes of its zip record, and each record in
// the bytes of the file. The legacy (pre-1.6, non-zip) format is refused: QE-ConE's
// torch.save writes zip archives.
func checkTorchFile(file string) error {
	st, err := os.Stat(file)
	if err != nil {
		return err
	}
	zr, err := zip.OpenReader(file)
	if err != nil {
		return fmt.Errorf("not a torch.save zip archive (PyTorch 1.6 or later; the legacy format is not read): %w", err)
	}
	defer zr.Close()
	records := map[string]*zip.File{}
	for _, f := range zr.File {
		// A deflated record can expand at most 1032 times; torch.save stores them.
		limit := uint64(st.Size())
		if f.Method != zip.Store {
			limit = 1032 * f.CompressedSize64
		}
		if f.UncompressedSize64 > limit {
			return fmt.Errorf("zip record %q declares %d bytes, more than the file can hold", f.Name, f.UncompressedSize64)
		}
		_, name := path.Split(f.Name)
		records[name] = f
	}
	// Each record's bytes against the archive's CRC-32 and size: gopickle reads a
	// storage's declared count of values, never to the record's end, where archive/zip
	// checks them, so a damaged record would load as changed weights.
	for _, f := range zr.File {
		if err := checkRecord(f); err != nil {
			return err
		}
	}
	rec := records["data.pkl"]
	if rec == nil {
		return fmt.Errorf("no data.pkl in the zip archive: not a torch.save file")
	}
	if rec.UncompressedSize64 > maxPickle {
		return fmt.Errorf("data.pkl declares %d bytes, more than a checkpoint's pickle (%d)", rec.UncompressedSize64, maxPickle)
	}
	rc, err := rec.Open()
	if err != nil {
		return fmt.Errorf("data.pkl: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(rc, maxPickle+1))
	rc.Close()
	if err != nil {
		return fmt.Errorf("data.pkl: %w", err)
	}
	if err := picklescan.Scan(data); err != nil {
		return fmt.Errorf("data.pkl: %w", err)
	}
	u := pickle.NewUnpickler(bytes.NewReader(data))
	u.FindClass = func(module, name string) (any, error) { return anyClass{}, nil }
	u.PersistentLoad = func(id any) (any, error) {
		t, ok := id.(*types.Tuple)
		if !ok || t.Len() < 5 {
			return nil, errors.New("a persistent id that is not a storage tuple")
		}
		key, keyOK := t.Get(2).(string)
		size, sizeOK := t.Get(4).(int)
		if !keyOK || !sizeOK {
			return nil, errors.New("a storage without a key and a size")
		}
		r := records[key]
		if r == nil {
			return nil, fmt.Errorf("storage %q has no zip record", key)
		}
		if size < 0 || uint64(size) > r.UncompressedSize64 {
			return nil, fmt.Errorf("storage %q declares %d elements, but its record holds %d bytes", key, size, r.UncompressedSize64)
		}
		return nil, nil
	}
	if _, err := u.Load(); err != nil {
		return fmt.Errorf("data.pkl: %w", err)
	}
	return nil
}

// checkRecord reads a zip record to its end, where archive/zip compares its bytes with
// the CRC-32 and the size the archive records for it.
func checkRecord(f *zip.File) error {
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("zip record %q: %w", f.Name, err)
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	switch {
	case errors.Is(err, zip.ErrChecksum):
		return fmt.Errorf("zip record %q: its bytes do not match the CRC-32 the archive records for it: the file is damaged", f.Name)
	case errors.Is(err, io.ErrUnexpectedEOF) || (err == nil && uint64(n) != f.UncompressedSize64):
		return fmt.Errorf("zip record %q: %d bytes, but the archive records %d: the file is damaged or cut short", f.Name, n, f.UncompressedSize64)
	case err != nil:
		return fmt.Errorf("zip record %q: %w", f.Name, err)
	}
	return nil
}

// anyClass stands for every class the pickle names while it is checked: calling it
// builds nothing.
type anyClass struct{}

func (anyClass) Call(args ...any) (any, error)  { return nil, nil }
func (anyClass) PyNew(args ...any) (any, error) { return nil, nil }
