package artifact

import (
	"fmt"
	"os"
	"path/filepath"
)

// atomicFile is a file written under a temporary name in its destination's directory and
// renamed over the destination on commit, so that the destination holds either its old
// contents or the complete new ones, never a prefix. Rename is atomic only within one file
// system, hence the same directory.
type atomicFile struct {
	*os.File
	path string // the destination
	done bool   // committed or aborted
}

// createAtomic starts writing path. The temporary file is named .NAME.tmp-XXXX so that it
// is hidden and, should the process die before commit or abort, recognizable.
func createAtomic(path string) (*atomicFile, error) {
	dir, base := filepath.Split(path)
	if base == "" {
		return nil, fmt.Errorf("%s: not a file name", path)
	}
	if dir == "" {
		dir = "."
	}
	// Caught here, not by the rename after the whole artifact has been written.
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s: is a directory", path)
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &atomicFile{File: f, path: path}, nil
}

// commit flushes the file to stable storage and renames it over the destination. On error
// the temporary file is removed and the destination left as it was.
func (a *atomicFile) commit() error {
	if a.done {
		return fmt.Errorf("%s: %w", a.path, os.ErrClosed)
	}
	a.done = true
	tmp := a.Name()
	// CreateTemp makes the file 0600; an artifact is an ordinary output file.
	err := a.Chmod(0o644)
	if err == nil {
		// Without the sync, a crash soon after the rename can leave the destination empty.
		err = a.Sync()
	}
	if cerr := a.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, a.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", a.path, err)
	}
	return nil
}

// abort closes and removes the temporary file. It does nothing after commit or abort.
func (a *atomicFile) abort() {
	if a.done {
		return
	}
	a.done = true
	// Errors are dropped: the caller is already handling the failure that led here.
	a.Close()
	os.Remove(a.Name())
}
