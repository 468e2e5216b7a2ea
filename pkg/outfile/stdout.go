package outfile

import (
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Stdout is standard output for what a stage prints itself (tables, reports, stats). With
// fmt.Fprint(os.Stdout, …) a failed write is lost and the stage exits 0 with its output
// gone; a write to Stdout that fails is kept, and Main then fails the stage with it
// (`> /dev/full`, a closed pipe, a closed standard output).
var Stdout = &stdoutWriter{}

type stdoutWriter struct {
	mu  sync.Mutex
	err error
}

func (w *stdoutWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if err := stdoutClosed(); err != nil {
		w.err = err
		return 0, err
	}
	n, err := os.Stdout.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

// Err returns the first error of a write to Stdout.
func (w *stdoutWriter) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// errStdoutClosed is what writing a closed standard output gives.
var errStdoutClosed = errors.New("standard output is closed (>&-): nowhere to write")

// stdoutClosed reports whether the stage was started with standard output closed. The Go
// runtime opens /dev/null read-write in place of a closed 0, 1 or 2 before main runs (so
// that no file the program opens becomes its "stdout"), which hides the closing: a
// descriptor 1 open read-write on /dev/null is taken to be that. A shell's `>/dev/null`
// opens it write-only and is not; `1<>/dev/null` is indistinguishable and counts as closed.
func stdoutClosed() error {
	closedOnce.Do(func() {
		fl, err := unix.FcntlInt(1, unix.F_GETFL, 0)
		if err != nil {
			closedErr = errStdoutClosed
			return
		}
		var st, null unix.Stat_t
		if fl&unix.O_ACCMODE == unix.O_RDWR && unix.Fstat(1, &st) == nil && unix.Stat(os.DevNull, &null) == nil &&
			st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == null.Rdev {
			closedErr = errStdoutClosed
		}
	})
	return closedErr
}

var (
	closedOnce sync.Once
	closedErr  error
)
