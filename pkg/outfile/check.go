package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Path is a path given on a stage's command line, with the flag that gave it, for
// messages.
type Path struct {
	Flag string // "--checkpoint", "-o", or for an argument what it is ("ranks file")
	Path string // "" is skipped; "-" is stdin for an input, stdout for an output
	// File, for an output, refuses stdout, devices and pipes: the output is rewritten
	// during the run and read back later (a checkpoint, a train log), so it must be a
	// regular file or a new path.
	File bool
	// Why, with File, replaces that reason in the messages ("it is read and its block
	// replaced in place").
	Why string
}

// why is the reason an output must be a regular file.
func (p Path) why() string {
	if p.Why != "" {
		return p.Why
	}
	return "it is rewritten during the run and read back later"
}

// Check checks a stage's outputs before the stage does any work, so that a mistake is
// reported at once rather than after hours, and before any input is read, so that it
// cannot be destroyed. In order, it refuses
//
//   - an output that cannot be written: its directory is missing or is not one, a file
//     cannot be created in it (read-only, permissions), or a device or pipe cannot be
//     opened for writing;
//   - an output with File set that is not a regular file or new path;
//   - an output that is the same file as an input, compared by device and inode, so that
//     ./x, hard links and symbolic links are caught (an output that does not exist yet
//     cannot be one; stdin counts when it is a regular file);
//   - two outputs that are the same file, or the same new path.
//
// It also removes stale temporary files next to each output that is written by rename:
// those named like its own (.NAME.tmp-NNNN), regular files, older than this process and
// not locked by a live writer (see createTemp), which a killed run left behind.
//
// A stage whose output is by design also an input (train --resume continues its
// checkpoint) leaves it out of inputs.
func Check(inputs, outputs []Path) error {
	var outs []checked
	for _, o := range outputs {
		if o.Path == "" {
			continue
		}
		if o.Path == "-" {
			if o.File {
				return fmt.Errorf("%s -: must be a file, not stdout: %s", o.Flag, o.why())
			}
			t, err := stdoutTarget()
			if err != nil {
				return fmt.Errorf("%s - (stdout): %w", o.Flag, err)
			}
			outs = append(outs, checked{Path: o, t: t})
			continue
		}
		t, err := locate(o.Path)
		if err != nil {
			return fmt.Errorf("%s %w", o.Flag, err)
		}
		if o.File && !t.kind.atomic() {
			return fmt.Errorf("%s %s: a %s, not a file: %s, so it must be a regular file", o.Flag, o.Path, t.kind, o.why())
		}
		c := checked{Path: o, t: t}
		if c.dir, err = probe(t); err != nil {
			return fmt.Errorf("%s %s: %w", o.Flag, o.Path, err)
		}
		outs = append(outs, c)
	}
	for _, o := range outs {
		if !o.t.regular {
			continue // new, or written in place: nothing there to destroy
		}
		for _, in := range inputs {
			if id, ok := inputID(in.Path); ok && id == o.t.id {
				return fmt.Errorf("%s %s is the same file as %s %s", o.Flag, displayOut(o.Path.Path), in.Flag, displayIn(in.Path))
			}
		}
	}
	for j := range outs {
		for i := range j {
			if coincide(outs[i], outs[j]) {
				return fmt.Errorf("%s %s is the same file as %s %s", outs[j].Flag, displayOut(outs[j].Path.Path), outs[i].Flag, displayOut(outs[i].Path.Path))
			}
		}
	}
	return nil
}

// DirFiles lists the entries of an input folder as inputs of one flag (--data DIR), so
// that Check protects each file in it. A folder that cannot be read gives none: the
// stage reports it when it reads it.
func DirFiles(flag, dir string) []Path {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	paths := make([]Path, 0, len(entries))
	for _, e := range entries {
		paths = append(paths, Path{Flag: flag, Path: filepath.Join(dir, e.Name())})
	}
	return paths
}

type checked struct {
	Path
	t   *target
	dir fileID // the directory an atomic output is renamed into
}

// coincide reports whether two outputs would write the same file: the same existing
// file, or the same name in the same directory. Stdout and the descriptors (/dev/stdout,
// /dev/fd/N) count by what they are open on, so `-o /dev/stdout` meets the table a stage
// prints on stdout, whether that is a file, a pipe or a terminal; /dev/null takes any
// number of outputs.
func coincide(a, b checked) bool {
	if a.t.regular && b.t.regular && a.t.id == b.t.id {
		return true
	}
	if a.t.kind == kindDescriptor || b.t.kind == kindDescriptor {
		return a.t.id != (fileID{}) && a.t.id == b.t.id && a.t.id != devNull()
	}
	return a.t.kind.atomic() && b.t.kind.atomic() && a.dir == b.dir && filepath.Base(a.t.path) == filepath.Base(b.t.path)
}

// stdoutTarget is standard output as an output target: descriptor 1, with the file it is
// open on (a regular file that a shell's >> or 1<> opened counts as that file, so it is
// compared with the inputs).
func stdoutTarget() (*target, error) {
	if err := stdoutClosed(); err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(1, &st); err != nil {
		return nil, fmt.Errorf("standard output: %w", err)
	}
	return &target{given: "-", path: "/dev/stdout", kind: kindDescriptor, fd: 1,
		id: fileID{uint64(st.Dev), uint64(st.Ino)}, regular: st.Mode&unix.S_IFMT == unix.S_IFREG}, nil
}

func devNull() fileID {
	fi, err := os.Stat(os.DevNull)
	if err != nil {
		return fileID{}
	}
	return idOf(fi)
}

func displayIn(p string) string {
	if p == "-" {
		return "- (stdin)"
	}
	return p
}

func displayOut(p string) string {
	if p == "-" {
		return "- (stdout)"
	}
	return p
}

// inputID identifies an input; ok is false for an input that does not exist (the stage
// reports it when it reads it) and for stdin when it is not a regular file.
func inputID(path string) (fileID, bool) {
	if path == "" {
		return fileID{}, false
	}
	var fi os.FileInfo
	var err error
	if path == "-" {
		if fi, err = os.Stdin.Stat(); err != nil || !fi.Mode().IsRegular() {
			return fileID{}, false
		}
	} else if fi, err = os.Stat(path); err != nil {
		return fileID{}, false
	}
	return idOf(fi), true
}

// probe checks that t can be written, and for an output written by rename removes the
// stale temporary files next to it and returns its directory's identity.
func probe(t *target) (fileID, error) {
	switch t.kind {
	case kindNew, kindRegular:
		dir, base := filepath.Dir(t.path), filepath.Base(t.path)
		fi, err := os.Stat(dir)
		if err != nil {
			return fileID{}, fmt.Errorf("directory %s: %w", dir, unwrapPath(err))
		}
		if !fi.IsDir() {
			return fileID{}, fmt.Errorf("%s is not a directory", dir)
		}
		// Only creating a file tells: permissions say nothing of a read-only file system,
		// and root ignores them.
		f, err := createTemp(dir, base)
		if err != nil {
			return fileID{}, fmt.Errorf("cannot create files in %s: %w", dir, unwrapPath(err))
		}
		f.Close()
		dropTemp(f.Name())
		removeStale(dir, base)
		return idOf(fi), nil
	case kindDevice:
		// Opened and closed at once; O_NONBLOCK so that a device that waits (a modem
		// line) does not hold the check up.
		f, err := os.OpenFile(t.path, os.O_WRONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			return fileID{}, unwrapPath(err)
		}
		f.Close()
	case kindFIFO:
		// Opening a pipe would wait for a reader, and closing it would end the reader's
		// input: ask for permission only.
		if err := unix.Access(t.path, unix.W_OK); err != nil {
			return fileID{}, err
		}
	case kindDescriptor:
		if err := writable(t.fd); err != nil {
			return fileID{}, fmt.Errorf("descriptor %d: %w", t.fd, err)
		}
	}
	return fileID{}, nil
}

// processStart is when this process started, near enough: temporary files older than
// this were not made by it.
var processStart = time.Now()

// removeStale removes the temporary files that earlier runs writing base in dir left
// behind when they were killed (SIGKILL, a crash, a power cut): regular files named
// .base.tmp-NNNN, last modified before this process started, and not locked by their
// writer, which holds a lock on its temporary files while it lives (a concurrent run
// writing the same output keeps its file). Errors are ignored: a file that cannot be
// removed is left as it was.
func removeStale(dir, base string) { sweepStale(dir, base, false) }

// sweepStale removes dir's temporary entries of base (.base.tmp-NNNN): regular files, or
// with dirs folders, last modified before this process started and not flock'ed by a
// live writer. Errors are ignored: an entry that cannot be removed is left as it was.
func sweepStale(dir, base string, dirs bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !isTemp(e.Name(), base) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil || fi.IsDir() != dirs || !dirs && !fi.Mode().IsRegular() || !fi.ModTime().Before(processStart) {
			continue
		}
		f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			if dirs {
				os.RemoveAll(p)
			} else {
				os.Remove(p)
			}
		}
		f.Close()
	}
}

// unwrapPath drops the operation and path of an *fs.PathError, which messages here
// already name.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Distinct refuses an input given twice, under one name or two (./x, a link, - twice for
// stdin): its rows would count twice, or the second read would find stdin drained. A name
// that cannot be read is left to its reader.
func Distinct(paths []string) error {
	stats := make([]os.FileInfo, len(paths))
	stdin := -1
	for i, p := range paths {
		if p == "-" {
			if stdin >= 0 {
				return fmt.Errorf("- (stdin) is given twice: it can be read once")
			}
			stdin = i
			continue
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		for j := range i {
			if stats[j] != nil && os.SameFile(stats[j], fi) {
				return fmt.Errorf("%s and %s are the same file, given twice", paths[j], p)
			}
		}
		stats[i] = fi
	}
	return nil
}
