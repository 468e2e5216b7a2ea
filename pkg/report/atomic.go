package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// writeAtomic writes wt's output to a hidden temporary file in path's directory
// (.NAME.tmp-XXXX) and renames it over path, so that path holds either its old contents or
// the complete new ones. On error the temporary file is removed and path left as it was.
func writeAtomic(path string, wt io.WriterTo) (err error) {
	dir, base := filepath.Split(path)
	if base == "" {
		return fmt.Errorf("report: %s: not a file name", path)
	}
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("report: %s: %w", path, err)
		}
	}()
	if _, err = wt.WriteTo(f); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; a plot is an ordinary output file.
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
