package outfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// File is an output being written: a temporary file renamed over its destination on
// Commit, or a stream written in place (stdout, a device, a pipe, an open descriptor).
// Write errors are returned by Write and again by Commit, so that a caller that ignores
// one still learns of it.
type File struct {
	name   string   // the path as given ("stdout" for "-"), for errors
	f      *os.File // what is written
	own    bool     // f is closed when done (not for stdout)
	dest   string   // atomic: the destination, with symbolic links followed
	tmp    string   // atomic: the temporary file; "" otherwise
	perm   os.FileMode
	err    error // the first write error
	done   bool
	atomic bool
}

// newFileMode is the mode of an artifact written at a new path. os.CreateTemp makes
// files 0600; an artifact is an ordinary output file.
const newFileMode = 0o644

// Create starts writing the output at path: "-" for stdout; see the package comment
// for what other paths mean. Nothing is at path until Commit.
func Create(path string) (*File, error) {
	if path == "-" {
		if err := stdoutClosed(); err != nil {
			return nil, fmt.Errorf("-: %w", err)
		}
		return &File{name: "stdout", f: os.Stdout}, nil
	}
	t, err := locate(path)
	if err != nil {
		return nil, err
	}
	if t.kind == kindDescriptor && t.fd == 1 {
		if err := stdoutClosed(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	switch t.kind {
	case kindNew, kindRegular:
		dir, base := filepath.Dir(t.path), filepath.Base(t.path)
		f, err := createTemp(dir, base)
		if err != nil {
			return nil, fmt.Errorf("%s: cannot create files in %s: %w", path, dir, unwrapPath(err))
		}
		if testHoldOutputs {
			fmt.Fprintf(os.Stderr, "outfile test: holding %s\n", f.Name())
			holdForever()
		}
		perm := os.FileMode(newFileMode)
		if t.kind == kindRegular {
			perm = t.perm
		}
		return &File{name: path, f: f, own: true, dest: t.path, tmp: f.Name(), perm: perm, atomic: true}, nil
	case kindDescriptor:
		// A duplicate, so that closing it leaves the descriptor the process was given.
		fd, err := unix.FcntlInt(uintptr(t.fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := writable(fd); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return &File{name: path, f: os.NewFile(uintptr(fd), path), own: true}, nil
	default: // a device or a named pipe; opening a pipe waits for its reader, as the shell's > does
		f, err := os.OpenFile(t.path, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
		}
		return &File{name: path, f: f, own: true}, nil
	}
}

// writable checks that an open descriptor was opened for writing.
func writable(fd int) error {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	if fl&unix.O_ACCMODE == unix.O_RDONLY {
		return errors.New("descriptor open for reading only")
	}
	return nil
}

// Name is the path as given, or "stdout".
func (f *File) Name() string { return f.name }

// Atomic reports whether the output is a file written by temp-and-rename. Outputs that
// are not (stdout, devices, pipes) can be read only once, in order: writers that have a
// seekable format and a streaming one should use the streaming one for them.
func (f *File) Atomic() bool { return f.atomic }

// Write writes to the output. After an error, every later Write and Commit fails with it.
func (f *File) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if f.done {
		return 0, fmt.Errorf("%s: %w", f.name, os.ErrClosed)
	}
	n, err := f.f.Write(p)
	if err != nil {
		err = unwrapPath(err) // callers name the output
		// Returned as it is: callers wrap it with the name; Commit reports it named.
		f.err = fmt.Errorf("%s: %w", f.name, err)
	}
	return n, err
}

// ReadAt reads back what was written to an atomic output (its temporary file), before
// Commit. With WriteAt it lets a writer patch a value it could only know at the end into
// a header it wrote first (the artifacts' content checksum).
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if err := f.patchable(); err != nil {
		return 0, err
	}
	return f.f.ReadAt(p, off)
}

// WriteAt overwrites bytes already written to an atomic output, before Commit.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	if err := f.patchable(); err != nil {
		return 0, err
	}
	n, err := f.f.WriteAt(p, off)
	if err != nil {
		f.err = fmt.Errorf("%s: %w", f.name, unwrapPath(err))
		return n, f.err
	}
	return n, nil
}

func (f *File) patchable() error {
	switch {
	case f.err != nil:
		return f.err
	case f.done:
		return fmt.Errorf("%s: %w", f.name, os.ErrClosed)
	case !f.atomic:
		return fmt.Errorf("%s: written in place, in order: what was written cannot be read back or patched", f.name)
	}
	return nil
}

// Commit completes the output. A temporary file is synced to stable storage (without
// the sync, a crash soon after the rename can leave the destination empty) and renamed
// over the destination; on error it is removed and the destination left as it was. An
// output written in place is closed, which reports any error the device or pipe held
// back.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("%s: %w", f.name, os.ErrClosed)
	}
	f.done = true
	if f.err != nil {
		f.release()
		return f.err
	}
	if !f.atomic {
		if !f.own {
			return nil
		}
		if err := f.f.Close(); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		return nil
	}
	err := f.f.Chmod(f.perm)
	if err == nil {
		err = f.f.Sync()
	}
	if err == nil {
		err = commitTemp(f.tmp, f.dest)
	}
	if cerr := f.f.Close(); err == nil && cerr != nil {
		// After the rename, the sync has already caught what close could report.
		err = cerr
	}
	if err != nil {
		dropTemp(f.tmp)
		return fmt.Errorf("%s: %w", f.name, err)
	}
	return nil
}

// Abort gives the output up: a temporary file is removed and the destination left as it
// was; an output written in place is closed (what was written stays written: a reader
// of a stream sees it end early). It does nothing after Commit or Abort.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.release()
}

func (f *File) release() {
	if f.own {
		f.f.Close() // the error being handled is the one that matters
	}
	if f.atomic {
		dropTemp(f.tmp)
	}
}

// WriteTo writes wt's output to path, as one Create, write and Commit; on error nothing
// is left at path but what was there.
func WriteTo(path string, wt io.WriterTo) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	if _, err := wt.WriteTo(f); err != nil {
		f.Abort()
		if f.err != nil {
			return f.err
		}
		return fmt.Errorf("%s: %w", f.name, err)
	}
	return f.Commit()
}

// The live temporary files of this process, so that a signal can remove them. The lock
// also orders a commit's rename against the signal handler: a temporary file is either
// renamed (and the output complete) or removed, never renamed after the handler has
// reported it removed.
var live struct {
	sync.Mutex
	temps map[string]string // temporary file -> destination
}

// createTemp creates a temporary file for an output named base in dir, registers it and
// locks it (flock), so that another run's stale-file sweep (removeStale) leaves it alone
// while this process lives.
func createTemp(dir, base string) (*os.File, error) {
	live.Lock()
	defer live.Unlock()
	f, err := os.CreateTemp(dir, tempPrefix(base)+"*")
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil && !errors.Is(err, unix.ENOLCK) && !errors.Is(err, unix.EOPNOTSUPP) {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	if live.temps == nil {
		live.temps = map[string]string{}
	}
	live.temps[f.Name()] = filepath.Join(dir, base)
	return f, nil
}

func commitTemp(tmp, dest string) error {
	live.Lock()
	defer live.Unlock()
	delete(live.temps, tmp)
	return os.Rename(tmp, dest)
}

func dropTemp(tmp string) {
	live.Lock()
	defer live.Unlock()
	delete(live.temps, tmp)
	os.Remove(tmp)
}

// removeLive removes every live temporary file or folder (Dir) and returns their
// destinations. It is called with live locked, by a process about to exit.
func removeLive() []string {
	var dests []string
	for tmp, dest := range live.temps {
		if _, err := os.Lstat(tmp); err == nil && os.RemoveAll(tmp) == nil {
			dests = append(dests, dest)
		}
	}
	return dests
}

// WriteAll creates the outputs at paths, hands them to write in that order, and commits
// every one when write succeeds; when it fails (or a commit does) the outputs not yet
// committed are aborted. For outputs made together, such as a table and its CSV.
func WriteAll(paths []string, write func(ws []io.Writer) error) error {
	files := make([]*File, 0, len(paths))
	defer func() {
		for _, f := range files {
			f.Abort()
		}
	}()
	ws := make([]io.Writer, 0, len(paths))
	for _, p := range paths {
		f, err := Create(p)
		if err != nil {
			return err
		}
		files, ws = append(files, f), append(ws, f)
	}
	if err := write(ws); err != nil {
		return err
	}
	for _, f := range files {
		if err := f.Commit(); err != nil {
			return err
		}
	}
	return nil
}
