package outfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// An output folder (embed export -o DIR) is written as a whole, like a file: into a
// hidden temporary folder .NAME.tmp-NNNN beside the destination, locked while this
// process lives, and renamed into place only when every file in it is complete (Commit).
// A failure, SIGINT or SIGTERM removes the temporary folder; a killed run's is removed by
// the next CheckDir of the same destination. A folder that exists is replaced only when
// it is empty or the caller allows it (--overwrite), and never when an input lies in it.

// CheckDir checks an output folder before any work, so that a mistake costs nothing.
// It refuses, naming the flag and the path: stdout ("-"); an existing path that is not a
// folder; a folder that is one of inputs or holds one at any depth (compared by device
// and inode, so links and ./ are caught; an input folder such as --data counts as a
// whole; stdin counts when it is a regular file); the working directory or a folder above it; an existing non-empty folder unless
// overwrite; and a parent folder in which a folder cannot be created. It removes the stale temporary folders of killed runs.
func CheckDir(out Path, overwrite bool, inputs []Path) error {
	switch out.Path {
	case "":
		return fmt.Errorf("%s: no output folder given", out.Flag)
	case "-":
		return fmt.Errorf("%s -: the output is a folder of files, not stdout", out.Flag)
	}
	dest, fi, err := resolveDir(out.Path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", out.Flag, out.Path, err)
	}
	if fi != nil {
		id := idOf(fi)
		if within(".", id) {
			return fmt.Errorf("%s %s holds the working directory: a folder replaced as a whole cannot be the one the command runs in (choose another output folder)", out.Flag, out.Path)
		}
		for _, in := range inputs {
			path := in.Path
			if path == "-" {
				// Stdin redirected from a file (--cones - < DIR/cones.arrow) is that file:
				// the link /proc/self/fd/N names it (Linux; elsewhere it is not checked).
				if _, ok := inputID("-"); !ok {
					continue
				}
				path = "/proc/self/fd/" + strconv.Itoa(int(os.Stdin.Fd()))
			}
			if path == "" {
				continue
			}
			if within(path, id) {
				return fmt.Errorf("%s %s holds %s %s: an input is never written over (choose another output folder)", out.Flag, out.Path, in.Flag, displayIn(in.Path))
			}
		}
		if !overwrite {
			empty, err := isEmpty(dest)
			if err != nil {
				return fmt.Errorf("%s %s: %w", out.Flag, out.Path, unwrapPath(err))
			}
			if !empty {
				return fmt.Errorf("%s %s: the folder exists and is not empty (--overwrite replaces it as a whole)", out.Flag, out.Path)
			}
		}
	}
	parent, base := filepath.Dir(dest), filepath.Base(dest)
	pfi, err := os.Stat(parent)
	if err != nil {
		return fmt.Errorf("%s %s: folder %s: %w", out.Flag, out.Path, parent, unwrapPath(err))
	}
	if !pfi.IsDir() {
		return fmt.Errorf("%s %s: %s is not a folder", out.Flag, out.Path, parent)
	}
	removeStaleDirs(parent, base)
	// Only creating a folder tells: permissions say nothing of a read-only file system,
	// and root ignores them.
	tmp, lock, err := createTempDir(parent, base)
	if err != nil {
		return fmt.Errorf("%s %s: cannot create a folder in %s: %w", out.Flag, out.Path, parent, unwrapPath(err))
	}
	(&Dir{tmp: tmp, lock: lock}).Abort()
	return nil
}

// ClaimDir is CheckDir, then a claim on the folder that lasts until release is called, as
// Claim claims a file: a second run naming the same folder (or a file output at that path)
// fails at once, naming this run's process. Without it two `embed export --overwrite` runs
// into one folder would both write it in full, and the later Commit would silently replace
// the other's. The lock file is .NAME.lock beside the folder (links followed), removed by
// release and by a signal, through Main.
func ClaimDir(out Path, overwrite bool, inputs []Path) (release func(), err error) {
	if err := CheckDir(out, overwrite, inputs); err != nil {
		return nil, err
	}
	dest, _, err := resolveDir(out.Path)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", out.Flag, out.Path, err)
	}
	c, err := claimPath(dest)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", out.Flag, out.Path, err)
	}
	return c.release, nil
}

// resolveDir returns the folder that path names, following symbolic links (a link to a
// folder is replaced at its target, and stays a link), and its FileInfo; fi is nil when
// nothing is there yet. An existing path that is not a folder is an error.
func resolveDir(path string) (dest string, fi os.FileInfo, err error) {
	dest = filepath.Clean(path)
	if _, err := os.Lstat(dest); err == nil {
		if dest, err = filepath.EvalSymlinks(dest); err != nil {
			return "", nil, unwrapPath(err)
		}
	}
	fi, err = os.Stat(dest)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return dest, nil, nil
	case err != nil:
		return "", nil, unwrapPath(err)
	case !fi.IsDir():
		return "", nil, errors.New("exists and is not a folder")
	}
	return dest, fi, nil
}

// within reports whether the input at path is the folder id or lies under it: whether
// the folder is the input or one of the folders above it, after symbolic links.
func within(path string, id fileID) bool {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false // missing: the stage reports it when it reads it
	}
	if p, err = filepath.Abs(p); err != nil {
		return false
	}
	for {
		if fi, err := os.Stat(p); err == nil && idOf(fi) == id {
			return true
		}
		up := filepath.Dir(p)
		if up == p {
			return false
		}
		p = up
	}
}

func isEmpty(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	if err == io.EOF {
		return true, nil
	}
	return false, err
}

// Dir is an output folder being written: files are created in a temporary folder
// (Create) and appear at the destination together on Commit.
type Dir struct {
	name      string   // the path as given, for errors
	dest      string   // the destination, symbolic links followed
	tmp       string   // the temporary folder
	lock      *os.File // the temporary folder, open and locked while it is written
	overwrite bool
	done      bool
}

// CreateDir starts writing the output folder at path. Nothing is at path until Commit,
// which replaces an existing non-empty folder only when overwrite is set.
func CreateDir(path string, overwrite bool) (*Dir, error) {
	dest, _, err := resolveDir(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	parent, base := filepath.Dir(dest), filepath.Base(dest)
	tmp, lock, err := createTempDir(parent, base)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot create a folder in %s: %w", path, parent, unwrapPath(err))
	}
	if testHoldOutputs {
		fmt.Fprintf(os.Stderr, "outfile test: holding %s\n", tmp)
		holdForever()
	}
	return &Dir{name: path, dest: dest, tmp: tmp, lock: lock, overwrite: overwrite}, nil
}

// Name is the destination as given.
func (d *Dir) Name() string { return d.name }

// WriteFile writes the file rel (a slash-separated path inside the folder; its folders
// are made) with write, through a buffer, and syncs it. An error names the file as it
// will be at the destination.
func (d *Dir) WriteFile(rel string, write func(w io.Writer) error) error {
	shown := filepath.Join(d.name, filepath.FromSlash(rel))
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return fmt.Errorf("%s: not a path inside the output folder", shown)
	}
	p := filepath.Join(d.tmp, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("%s: %w", shown, unwrapPath(err))
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, newFileMode)
	if err != nil {
		return fmt.Errorf("%s: %w", shown, unwrapPath(err))
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", shown, unwrapPath(err))
	}
	return nil
}

// Commit puts the folder in place: renamed to the destination when nothing or an empty
// folder is there; swapped with an existing non-empty folder (overwrite only; atomically
// where the file system can exchange two names, else by two renames), whose old
// contents are then removed.
func (d *Dir) Commit() error {
	if d.done {
		return fmt.Errorf("%s: already committed or aborted", d.name)
	}
	if err := syncDir(d.tmp); err != nil {
		d.Abort()
		return fmt.Errorf("%s: %w", d.name, err)
	}
	err := d.commit()
	if err != nil {
		d.Abort()
		return fmt.Errorf("%s: %w", d.name, err)
	}
	d.done = true
	d.lock.Close()
	syncDir(filepath.Dir(d.dest))
	return nil
}

func (d *Dir) commit() error {
	live.Lock()
	defer live.Unlock()
	fi, err := os.Lstat(d.dest)
	switch {
	case errors.Is(err, os.ErrNotExist):
		delete(live.temps, d.tmp)
		return os.Rename(d.tmp, d.dest)
	case err != nil:
		return unwrapPath(err)
	case !fi.IsDir():
		return errors.New("exists and is not a folder")
	}
	empty, err := isEmpty(d.dest)
	if err != nil {
		return unwrapPath(err)
	}
	// The folder that replaces it keeps its mode (as files written in it would).
	if err := os.Chmod(d.tmp, fi.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return unwrapPath(err)
	}
	if empty {
		delete(live.temps, d.tmp)
		return unix.Rename(d.tmp, d.dest) // rename(2) replaces an empty folder (os.Rename refuses)
	}
	if !d.overwrite {
		return errors.New("the folder exists and is not empty (--overwrite replaces it as a whole)")
	}
	// The old contents end up under the temporary name, which stays registered (a signal
	// now removes them) until they are removed.
	err = exchange(d.tmp, d.dest)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		// No exchange here: the old folder moves aside to a temporary name of its own
		// (removed as stale if this process dies now), then the new one moves in.
		old, lerr := os.MkdirTemp(filepath.Dir(d.dest), tempPrefix(filepath.Base(d.dest)))
		if lerr != nil {
			return unwrapPath(lerr)
		}
		live.temps[old] = d.dest
		if err = unix.Rename(d.dest, old); err != nil {
			delete(live.temps, old)
			os.Remove(old)
			return unwrapPath(err)
		}
		if err = os.Rename(d.tmp, d.dest); err != nil {
			unix.Rename(old, d.dest)
			delete(live.temps, old)
			return unwrapPath(err)
		}
		delete(live.temps, d.tmp)
		d.tmp = old
	} else if err != nil {
		return err
	}
	os.RemoveAll(d.tmp)
	delete(live.temps, d.tmp)
	return nil
}

// exchange swaps two paths atomically (Linux's renameat2 RENAME_EXCHANGE); a variable so
// that the tests also take the path of a file system without it.
var exchange = func(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}

// Abort gives the folder up: the temporary folder and everything in it are removed and
// the destination is left as it was. It does nothing after Commit.
func (d *Dir) Abort() {
	if d.done {
		return
	}
	d.done = true
	live.Lock()
	defer live.Unlock()
	delete(live.temps, d.tmp)
	os.RemoveAll(d.tmp)
	d.lock.Close()
}

// createTempDir creates a temporary folder for an output folder named base in dir,
// registers it (a signal removes it) and holds it open and locked (flock), so that another
// run's sweep (removeStaleDirs) leaves it alone while this process lives.
func createTempDir(dir, base string) (string, *os.File, error) {
	live.Lock()
	defer live.Unlock()
	tmp, err := mkdirTemp(dir, tempPrefix(base))
	if err != nil {
		return "", nil, err
	}
	f, err := os.Open(tmp)
	if err == nil {
		if err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil && !errors.Is(err, unix.ENOLCK) && !errors.Is(err, unix.EOPNOTSUPP) {
			f.Close()
		} else {
			err = nil
		}
	}
	if err != nil {
		os.Remove(tmp)
		return "", nil, fmt.Errorf("locking %s: %w", tmp, err)
	}
	if live.temps == nil {
		live.temps = map[string]string{}
	}
	live.temps[tmp] = filepath.Join(dir, base)
	return tmp, f, nil
}

// removeStaleDirs removes the temporary folders that killed runs writing the output
// folder base in dir left behind (removeStale's rule, for folders).
func removeStaleDirs(dir, base string) { sweepStale(dir, base, true) }

// syncDir flushes a folder's entries to stable storage.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	return nil
}

// mkdirTemp is os.MkdirTemp(dir, prefix+"*") with the mode of a plain mkdir (0777 less
// the umask) rather than 0700: the folder becomes the output folder, which should be as
// readable as any other the user makes.
func mkdirTemp(dir, prefix string) (string, error) {
	for try := 0; ; try++ {
		name := filepath.Join(dir, prefix+strconv.FormatUint(uint64(rand.Uint32()), 10))
		err := os.Mkdir(name, 0o777)
		switch {
		case err == nil:
			return name, nil
		case !errors.Is(err, fs.ErrExist) || try == 10_000:
			return "", err
		}
	}
}
