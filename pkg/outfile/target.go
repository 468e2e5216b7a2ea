package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// kind is what a path names, which decides how it is written.
type kind int

const (
	kindNew        kind = iota // nothing there yet: created by rename
	kindRegular                // a regular file: replaced by rename
	kindDevice                 // a character device: written in place
	kindFIFO                   // a named pipe: written in place
	kindDescriptor             // one of this process's open descriptors: written in place
)

func (k kind) String() string {
	switch k {
	case kindNew:
		return "new file"
	case kindRegular:
		return "regular file"
	case kindDevice:
		return "character device"
	case kindFIFO:
		return "named pipe"
	}
	return "open descriptor"
}

// atomic reports whether a target of this kind is written by temp-and-rename.
func (k kind) atomic() bool { return k == kindNew || k == kindRegular }

// target is an output path with its symbolic links followed.
type target struct {
	given   string // the path as given, for messages
	path    string // the end of its link chain: the file to write or create
	kind    kind
	fd      int         // kindDescriptor: the descriptor
	id      fileID      // the file path names (for a descriptor, the file it is open on); zero for kindNew
	regular bool        // that file is a regular file
	perm    fs.FileMode // kindRegular: its permissions, which the replacement keeps
}

// fileID identifies a file: two paths name the same file when their device and inode
// numbers agree, whatever their spelling, hard links or symbolic links.
type fileID struct{ dev, ino uint64 }

func idOf(fi os.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}
}

// maxLinks bounds a chain of symbolic links, as the kernel's ELOOP does.
const maxLinks = 40

// locate follows path's chain of symbolic links to the file that writing path would
// write, and says what it is. The chain is followed link by link, not with
// filepath.EvalSymlinks, for two reasons: a dangling link names a new file at its end
// (as the shell's > does), and the links under /proc/self/fd, which /dev/stdout and
// /dev/fd/N lead to, name open descriptors, whose "targets" such as pipe:[1234] are
// not paths.
func locate(given string) (*target, error) {
	if given == "" {
		return nil, errors.New("empty path")
	}
	p := given
	for hops := 0; ; hops++ {
		if hops > maxLinks {
			return nil, fmt.Errorf("%s: too many levels of symbolic links", given)
		}
		if fd, ok := descriptor(p); ok {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return nil, fmt.Errorf("%s: descriptor %d: %w", given, fd, err)
			}
			return &target{given: given, path: p, kind: kindDescriptor, fd: fd,
				id: fileID{uint64(st.Dev), uint64(st.Ino)}, regular: st.Mode&unix.S_IFMT == unix.S_IFREG}, nil
		}
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return &target{given: given, path: p, kind: kindNew}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", given, unwrapPath(err))
		}
		mode := fi.Mode()
		switch {
		case mode&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", given, unwrapPath(err))
			}
			if !filepath.IsAbs(link) {
				link = filepath.Join(filepath.Dir(p), link)
			}
			p = link
			continue
		case mode.IsRegular():
			return &target{given: given, path: p, kind: kindRegular, id: idOf(fi), regular: true, perm: fi.Mode().Perm()}, nil
		case mode.IsDir():
			return nil, fmt.Errorf("%s: is a directory", given)
		case mode&fs.ModeCharDevice != 0:
			return &target{given: given, path: p, kind: kindDevice, id: idOf(fi)}, nil
		case mode&fs.ModeNamedPipe != 0:
			return &target{given: given, path: p, kind: kindFIFO, id: idOf(fi)}, nil
		case mode&fs.ModeSocket != 0:
			return nil, fmt.Errorf("%s: is a socket, which cannot be opened by name (a socket this process holds open can be given as /dev/fd/N)", given)
		case mode&fs.ModeDevice != 0:
			return nil, fmt.Errorf("%s: is a block device; refusing to write to it", given)
		}
		return nil, fmt.Errorf("%s: not a regular file, device or pipe (mode %v)", given, mode)
	}
}

// descriptor reports whether p names one of this process's open descriptors through
// /proc or /dev/fd, and which. Writing those through the descriptor itself, not by
// reopening the path, is what works for pipes and sockets, and keeps the offset and
// append mode of a file the shell opened.
func descriptor(p string) (int, bool) {
	p = filepath.Clean(p)
	dir, name := filepath.Split(p)
	switch strings.TrimSuffix(dir, "/") {
	case "/dev/fd", "/proc/self/fd", "/proc/thread-self/fd", "/proc/" + strconv.Itoa(os.Getpid()) + "/fd":
	default:
		return 0, false
	}
	fd, err := strconv.Atoi(name)
	if err != nil || fd < 0 || name != strconv.Itoa(fd) {
		return 0, false
	}
	return fd, true
}

// tempPrefix is how the temporary files of an output named base begin; os.CreateTemp
// appends decimal digits. isTemp recognises them: stale ones are removed by that name.
func tempPrefix(base string) string { return "." + base + ".tmp-" }

func isTemp(name, base string) bool {
	rest, ok := strings.CutPrefix(name, tempPrefix(base))
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
