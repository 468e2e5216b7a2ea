package outfile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// snapshot records every entry under dir (kind, link target, bytes), so that a test can
// assert that nothing there changed.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		v := fi.Mode().Type().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			v += " -> " + l
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			v += " " + string(b)
		}
		snap[p] = v
		return nil
	})
	return snap
}

func assertUnchanged(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	after := snapshot(t, dir)
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s changed: %q, was %q", p, after[p], v)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s appeared", p)
		}
	}
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := unix.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readOnlyDir returns a directory that this process cannot create files in: a
// chmod-0555 folder, or, as root (whom permissions do not stop), /sys, which root cannot
// create files in either. It skips, saying why, when neither is at hand.
func readOnlyDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ro")
	os.Mkdir(dir, 0o555)
	if f, err := os.CreateTemp(dir, "probe"); err != nil {
		return dir
	} else {
		f.Close()
		os.Remove(f.Name())
	}
	// Root: permissions do not apply.
	if f, err := os.CreateTemp("/sys", "probe"); err == nil {
		f.Close()
		os.Remove(f.Name())
		t.Skip("running as root with a writable /sys: no directory here is read-only to this process")
	}
	return "/sys"
}

// TestCheck is the table of what Check refuses and accepts. Every case asserts the
// message and that nothing in the test's folder changed.
func TestCheck(t *testing.T) {
	type tc struct {
		name    string
		inputs  []Path
		outputs []Path
		want    string // "" for no error; else substrings separated by |
	}
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	x := write("x.arrow", "the input")
	y := write("y.arrow", "another file")
	if err := os.Link(x, filepath.Join(dir, "hard.arrow")); err != nil {
		t.Fatal(err)
	}
	os.Symlink("x.arrow", filepath.Join(dir, "sym.arrow"))
	os.Symlink("sym.arrow", filepath.Join(dir, "sym2.arrow"))
	os.Symlink("nowhere.arrow", filepath.Join(dir, "dangling.arrow"))
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.Symlink("sub", filepath.Join(dir, "subl"))
	mkfifo(t, filepath.Join(dir, "fifo"))
	ln, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	// The named pipe, open (read-write, so that the open does not wait for a reader).
	fifo, err := os.OpenFile(filepath.Join(dir, "fifo"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fifo.Close()
	// Two descriptors on /dev/null, which takes any number of outputs.
	null1, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null1.Close()
	null2, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null2.Close()
	ro := readOnlyDir(t)
	in := func(p string) []Path { return []Path{{Flag: "--in", Path: p}} }
	out := func(p string) []Path { return []Path{{Flag: "-o", Path: p}} }
	j := func(name string) string { return filepath.Join(dir, name) }
	cases := []tc{
		{"new output", in(x), out(j("new.arrow")), ""},
		{"existing other file", in(x), out(y), ""},
		{"same path", in(x), out(x), "-o " + x + " is the same file as --in " + x},
		{"same file by ./x", in(x), out(dir + "/./x.arrow"), "-o " + dir + "/./x.arrow is the same file as --in " + x},
		{"same file by ../dir/x", in(x), out(dir + "/sub/../x.arrow"), "is the same file as --in " + x},
		{"hard link", in(x), out(j("hard.arrow")), "-o " + j("hard.arrow") + " is the same file as --in " + x},
		{"symbolic link", in(x), out(j("sym.arrow")), "-o " + j("sym.arrow") + " is the same file as --in"},
		{"chain of links", in(x), out(j("sym2.arrow")), "sym2.arrow is the same file as --in"},
		{"input given by a link", in(j("sym.arrow")), out(x), "-o " + x + " is the same file as --in " + j("sym.arrow")},
		{"later input", []Path{{Flag: "--a", Path: y}, {Flag: "--b", Path: x}}, out(x), "is the same file as --b"},
		{"missing input is the stage's to report", in(j("missing.arrow")), out(x), ""},
		{"empty paths skipped", []Path{{Flag: "--a"}}, []Path{{Flag: "-o"}, {Flag: "--plot"}}, ""},
		{"two outputs, one file", nil, []Path{{Flag: "--checkpoint", Path: y}, {Flag: "--log", Path: y}}, "--log " + y + " is the same file as --checkpoint " + y},
		{"two outputs, same new path", nil, []Path{{Flag: "--checkpoint", Path: j("n.arrow")}, {Flag: "--log", Path: dir + "/./n.arrow"}}, "--log " + dir + "/./n.arrow is the same file as --checkpoint"},
		{"two outputs, new path through a linked folder", nil, []Path{{Flag: "-o", Path: j("sub/n.arrow")}, {Flag: "--plot", Path: j("subl/n.arrow")}}, "--plot " + j("subl/n.arrow") + " is the same file as -o"},
		{"two outputs, hard links", nil, []Path{{Flag: "-o", Path: x}, {Flag: "--plot", Path: j("hard.arrow")}}, "is the same file as -o"},
		{"two outputs, different", nil, []Path{{Flag: "-o", Path: j("a.arrow")}, {Flag: "--plot", Path: j("b.png")}}, ""},
		{"two outputs, one name in two folders", nil, []Path{{Flag: "-o", Path: j("n.arrow")}, {Flag: "--plot", Path: j("sub/n.arrow")}}, ""},
		{"two descriptors open on /dev/null", nil, []Path{{Flag: "-o", Path: fmt.Sprintf("/dev/fd/%d", null1.Fd())}, {Flag: "--plot", Path: fmt.Sprintf("/dev/fd/%d", null2.Fd())}}, ""},
		{"a descriptor and the named pipe it is open on", nil, []Path{{Flag: "-o", Path: fmt.Sprintf("/dev/fd/%d", fifo.Fd())}, {Flag: "--plot", Path: j("fifo")}}, "--plot " + j("fifo") + " is the same file as -o"},
		{"one descriptor twice", nil, []Path{{Flag: "-o", Path: fmt.Sprintf("/dev/fd/%d", pw.Fd())}, {Flag: "--plot", Path: fmt.Sprintf("/dev/fd/%d", pw.Fd())}}, "is the same file as -o"},
		{"directory", nil, out(dir), "-o " + dir + ": is a directory"},
		{"under a regular file", nil, out(j("x.arrow/out.arrow")), "-o " + j("x.arrow/out.arrow") + ": not a directory"},
		{"missing folder", nil, out(j("nope/out.arrow")), "-o " + j("nope/out.arrow") + ": directory " + j("nope") + ": no such file or directory"},
		{"read-only folder", nil, out(filepath.Join(ro, "out.arrow")), "cannot create files in " + ro},
		{"dangling link: a new file at its end", in(x), out(j("dangling.arrow")), ""},
		{"stdout", in(x), out("-"), ""},
		{"stdout for a file output", nil, []Path{{Flag: "--checkpoint", Path: "-", File: true}}, "--checkpoint -: must be a file, not stdout"},
		{"device for a file output", nil, []Path{{Flag: "--checkpoint", Path: "/dev/null", File: true}}, "--checkpoint /dev/null: a character device, not a file"},
		{"pipe for a file output", nil, []Path{{Flag: "--log", Path: j("fifo"), File: true}}, "named pipe, not a file"},
		{"new path for a file output", nil, []Path{{Flag: "--checkpoint", Path: j("ck.arrow"), File: true}}, ""},
		{"/dev/null", in(x), out("/dev/null"), ""},
		{"/dev/null twice, and as an input", in("/dev/null"), []Path{{Flag: "-o", Path: "/dev/null"}, {Flag: "--plot", Path: "/dev/null"}}, ""},
		{"named pipe", in(x), out(j("fifo")), ""},
		{"socket", nil, out(j("sock")), "is a socket"},
		{"open descriptor", nil, out(fmt.Sprintf("/dev/fd/%d", pw.Fd())), ""},
		{"descriptor open for reading", nil, out(fmt.Sprintf("/dev/fd/%d", pr.Fd())), "open for reading only"},
		{"descriptor not open", nil, out("/dev/fd/987"), "descriptor 987: bad file descriptor"},
	}
	if _, err := os.Stat("/dev/full"); err == nil {
		cases = append(cases, tc{"/dev/full opens (its writes fail)", nil, out("/dev/full"), ""})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, dir)
			err := Check(c.inputs, c.outputs)
			assertUnchanged(t, dir, before)
			if c.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			for _, w := range strings.Split(c.want, "|") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestCheckStdin: an output that is the file on stdin is refused too.
func TestCheckStdin(t *testing.T) {
	dir := t.TempDir()
	x := filepath.Join(dir, "q.arrow")
	os.WriteFile(x, []byte("queries"), 0o644)
	f, err := os.Open(x)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = saved }()
	err = Check([]Path{{Flag: "--queries", Path: "-"}}, []Path{{Flag: "-o", Path: x}})
	if err == nil || !strings.Contains(err.Error(), "-o "+x+" is the same file as --queries - (stdin)") {
		t.Fatalf("got %v", err)
	}
}

// TestCreate writes through Create and Commit (or Abort) to every kind of output and
// checks what is left: the content, the kind of file (a device stays a device, a link a
// link, a pipe a pipe), the mode, and no temporary file.
func TestCreate(t *testing.T) {
	const data = "artifact bytes\n"
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string) (path string, wait func() string)
		abort bool
		// check runs after Commit or Abort.
		check func(t *testing.T, dir, path, got string, err error)
	}{
		{"new file", nil, false, func(t *testing.T, dir, path, _ string, err error) {
			must(t, err)
			assertFile(t, path, data, 0o644)
		}},
		{"existing file keeps its mode", func(t *testing.T, dir string) (string, func() string) {
			p := filepath.Join(dir, "out")
			os.WriteFile(p, []byte("old"), 0o600)
			return p, nil
		}, false, func(t *testing.T, dir, path, _ string, err error) {
			must(t, err)
			assertFile(t, path, data, 0o600)
		}},
		{"abort leaves the old file", func(t *testing.T, dir string) (string, func() string) {
			p := filepath.Join(dir, "out")
			os.WriteFile(p, []byte("old"), 0o644)
			return p, nil
		}, true, func(t *testing.T, dir, path, _ string, err error) {
			must(t, err)
			assertFile(t, path, "old", 0o644)
		}},
		{"abort of a new file leaves nothing", nil, true, func(t *testing.T, dir, path, _ string, err error) {
			must(t, err)
			if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s exists after Abort: %v", path, err)
			}
		}},
		{"symbolic link followed and kept", func(t *testing.T, dir string) (string, func() string) {
			os.Mkdir(filepath.Join(dir, "real"), 0o755)
			os.WriteFile(filepath.Join(dir, "real", "target"), []byte("old"), 0o644)
			os.Symlink("real/target", filepath.Join(dir, "link"))
			return filepath.Join(dir, "link"), nil
		}, false, func(t *testing.T, dir, path, _ string, err error) {
			must(t, err)
			if l, err := os.Readlink(path); err != nil || l != "real/target" {
				t.Errorf("the link is now %q, %v", l, err)
			}
			assertFile(t, filepath.Join(dir, "real", "target"), data, 0o644)
		}},
		{"dangling link creates its target", func(t *testing.T, dir string) (string, func() string) {
			os.Symlink("made", filepath.Join(dir, "link"))
			return filepath.Join(dir, "link"), nil
		}, false, func(t *testing.T, dir, path, _ string, err error) {
			must(t, err)
			if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("the link was replaced: %v", err)
			}
			assertFile(t, filepath.Join(dir, "made"), data, 0o644)
		}},
		{"/dev/null written, not replaced", func(t *testing.T, dir string) (string, func() string) {
			return "/dev/null", nil
		}, false, func(t *testing.T, dir, path, _ string, err error) {
			must(t, err)
			if fi, err := os.Lstat("/dev/null"); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
				t.Fatalf("/dev/null is no longer a character device: %v %v", fi.Mode(), err)
			}
		}},
		{"/dev/full fails", func(t *testing.T, dir string) (string, func() string) {
			if _, err := os.Stat("/dev/full"); err != nil {
				t.Skip("no /dev/full")
			}
			return "/dev/full", nil
		}, false, func(t *testing.T, dir, path, _ string, err error) {
			if err == nil || !strings.Contains(err.Error(), "/dev/full: no space left on device") {
				t.Fatalf("got %v, want no space left", err)
			}
			if fi, err := os.Lstat("/dev/full"); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
				t.Fatalf("/dev/full is no longer a character device")
			}
		}},
		{"named pipe with a reader", func(t *testing.T, dir string) (string, func() string) {
			p := filepath.Join(dir, "fifo")
			mkfifo(t, p)
			got := make(chan string, 1)
			go func() {
				b, _ := os.ReadFile(p) // opens, reads to EOF: the writer's close
				got <- string(b)
			}()
			return p, func() string {
				select {
				case s := <-got:
					return s
				case <-time.After(10 * time.Second):
					return "reader still waiting"
				}
			}
		}, false, func(t *testing.T, dir, path, got string, err error) {
			must(t, err)
			if got != data {
				t.Errorf("reader got %q", got)
			}
			if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
				t.Errorf("the pipe was replaced")
			}
		}},
		{"open descriptor (>(cmd))", func(t *testing.T, dir string) (string, func() string) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan string, 1)
			go func() {
				b, _ := io.ReadAll(r)
				got <- string(b)
				r.Close()
			}()
			return fmt.Sprintf("/dev/fd/%d", w.Fd()), func() string {
				w.Close() // the shell's end: the reader sees EOF once both are closed
				return <-got
			}
		}, false, func(t *testing.T, dir, path, got string, err error) {
			must(t, err)
			if got != data {
				t.Errorf("reader got %q", got)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path, wait := filepath.Join(dir, "out"), func() string { return "" }
			if c.setup != nil {
				var w func() string
				path, w = c.setup(t, dir)
				if w != nil {
					wait = w
				}
			}
			f, err := Create(path)
			if err == nil {
				io.WriteString(f, data) // an error is reported again by Commit, which the case checks
				if c.abort {
					f.Abort()
				} else {
					err = f.Commit()
				}
			}
			got := wait()
			c.check(t, dir, path, got, err)
			assertNoTemp(t, dir)
		})
	}
}

// TestCreateErrors: outputs that cannot be written fail at Create, leaving nothing.
func TestCreateErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
	for _, c := range []struct{ path, want string }{
		{dir, "is a directory"},
		{filepath.Join(dir, "file", "x"), "not a directory"},
		{filepath.Join(dir, "missing", "x"), "no such file or directory"},
	} {
		f, err := Create(c.path)
		if err == nil {
			f.Abort()
			t.Errorf("%s: no error", c.path)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
	}
	assertNoTemp(t, dir)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func assertFile(t *testing.T, p, want string, mode fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != mode {
		t.Errorf("%s: mode %v, want a regular file %v", p, fi.Mode(), mode)
	}
	if b, _ := os.ReadFile(p); string(b) != want {
		t.Errorf("%s holds %q, want %q", p, b, want)
	}
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

// TestStaleTemps: Check removes the temporary files a killed run left next to an output
// (its own name pattern, regular, older than this process, unlocked) and nothing else.
func TestStaleTemps(t *testing.T) {
	dir := t.TempDir()
	old := processStart.Add(-time.Hour)
	mk := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk(".out.arrow.tmp-123", old)                      // removed
	mk(".out.arrow.tmp-4567890123", old)               // removed
	mk(".out.arrow.tmp-55", time.Now().Add(time.Hour)) // newer than this process: kept
	mk(".out.arrow.tmp-abc", old)                      // not CreateTemp's pattern: kept
	mk(".out.arrow.tmp-", old)                         // kept
	mk(".other.arrow.tmp-123", old)                    // another output's: kept
	mk("out.arrow.tmp-123", old)                       // not hidden: kept
	mk(".out.arrow.tmp-12.bak", old)                   // kept
	locked := mk(".out.arrow.tmp-777", old)            // a live writer's: kept
	lf, err := os.Open(locked)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, ".out.arrow.tmp-888"), 0o755) // a directory: kept
	target := mk("target", old)
	os.Symlink(target, filepath.Join(dir, ".out.arrow.tmp-999")) // a link: kept, and its target too

	if err := Check(nil, []Path{{Flag: "-o", Path: filepath.Join(dir, "out.arrow")}}); err != nil {
		t.Fatal(err)
	}
	var left []string
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		left = append(left, e.Name())
	}
	want := []string{".other.arrow.tmp-123", ".out.arrow.tmp-", ".out.arrow.tmp-12.bak", ".out.arrow.tmp-55", ".out.arrow.tmp-777",
		".out.arrow.tmp-888", ".out.arrow.tmp-999", ".out.arrow.tmp-abc", "out.arrow.tmp-123", "target"}
	if !slices.Equal(left, want) {
		t.Errorf("left %v\nwant %v", left, want)
	}

	// Through a symbolic link, the stale files at its target's end are the ones removed.
	real := t.TempDir()
	os.Symlink(filepath.Join(real, "m.arrow"), filepath.Join(dir, "m.arrow"))
	p := filepath.Join(real, ".m.arrow.tmp-42")
	os.WriteFile(p, nil, 0o600)
	os.Chtimes(p, old, old)
	if err := Check(nil, []Path{{Flag: "-o", Path: filepath.Join(dir, "m.arrow")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s not removed: %v", p, err)
	}
}

// TestTempNames: temporary files are named so that isTemp, and so the stale sweep,
// recognise them: hidden, the output's name, .tmp-, digits.
func TestTempNames(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "r.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	if !isTemp(filepath.Base(f.tmp), "r.arrow") {
		t.Errorf("%s is not recognised as a temporary file of r.arrow", f.tmp)
	}
	if filepath.Dir(f.tmp) != dir {
		t.Errorf("temporary file %s not beside its output", f.tmp)
	}
}

// The signal tests run this test binary again as a stage (helperEnv set): it creates an
// output, writes part of it, says "ready" on stdout and waits to be signalled.
const helperEnv = "OUTFILE_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		helper(mode, os.Args[len(os.Args)-1])
		return
	}
	os.Exit(m.Run())
}

func helper(mode, out string) {
	if mode == "stdout" { // what a stage sees of its standard output (TestClosedStdout)
		Main("helper", func(context.Context) error {
			for _, p := range []string{"-", "/dev/stdout", "/dev/fd/1", "/dev/fd/2", out} {
				f, err := Create(p)
				if err != nil {
					fmt.Fprintf(os.Stderr, "create %s: %v\n", p, err)
					continue
				}
				f.Abort()
				fmt.Fprintf(os.Stderr, "create %s: ok\n", p)
			}
			_, err := io.WriteString(Stdout, "table\n")
			fmt.Fprintf(os.Stderr, "write: %v\n", err)
			return nil
		})
		os.Exit(0)
	}
	run := func(ctx context.Context) error {
		if mode == "idle" { // nothing in flight; waits for the signal to end the process
			fmt.Println("ready")
			select {}
		}
		if mode == "dir" { // an output folder in flight (dir_test.go)
			d, err := CreateDir(out, false)
			if err != nil {
				return err
			}
			defer d.Abort()
			if err := d.WriteFile("sub/a.npy", func(w io.Writer) error { _, err := io.WriteString(w, "partial"); return err }); err != nil {
				return err
			}
			fmt.Println("ready")
			<-ctx.Done()
			return errors.New("stopped cleanly")
		}
		f, err := Create(out)
		if err != nil {
			return err
		}
		defer f.Abort()
		io.WriteString(f, "partial")
		fmt.Println("ready")
		if mode == "panic" {
			panic("a bug in the stage")
		}
		<-ctx.Done()
		if mode == "stubborn" {
			select {} // ignores the cancellation: only a second signal ends it
		}
		return errors.New("stopped cleanly")
	}
	if mode == "main" || mode == "panic" || mode == "dir" || mode == "idle" {
		Main("helper", run)
	} else {
		MainGraceful("helper", run)
	}
	os.Exit(0)
}

// TestSignals: SIGINT or SIGTERM while an output's temporary file is in flight removes
// it and exits with 128+signal and a message; MainGraceful lets the run stop itself on
// the first signal and acts like Main on a second. A panic removes it too, and still
// shows where it happened.
func TestSignals(t *testing.T) {
	for _, c := range []struct {
		mode    string
		signals []syscall.Signal
		code    int
		want    []string
	}{
		{"main", []syscall.Signal{syscall.SIGTERM}, 143, []string{"helper: stopped by SIGTERM; not written: OUT"}},
		{"main", []syscall.Signal{syscall.SIGINT}, 130, []string{"helper: stopped by SIGINT; not written: OUT"}},
		{"graceful", []syscall.Signal{syscall.SIGTERM}, 1, []string{"helper: SIGTERM: stopping at the next step", "helper: stopped cleanly"}},
		{"stubborn", []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}, 143, []string{"helper: SIGINT: stopping", "helper: stopped by SIGTERM; not written: OUT"}},
		{"panic", nil, 2, []string{"panic: a bug in the stage", "outfile_test.go"}},
		{"idle", []syscall.Signal{syscall.SIGTERM}, 143, []string{"helper: stopped by SIGTERM\n"}}, // no "not written"
	} {
		t.Run(fmt.Sprint(c.mode, c.signals), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out.arrow")
			cmd := exec.Command(os.Args[0], "-test.run=^$", out)
			cmd.Env = append(os.Environ(), helperEnv+"="+c.mode)
			var stderr syncBuffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil || line != "ready\n" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("helper said %q, %v\n%s", line, err, stderr.String())
			}
			if tmps, _ := filepath.Glob(filepath.Join(dir, ".out.arrow.tmp-*")); len(tmps) != 1 && c.mode != "panic" && c.mode != "idle" {
				t.Fatalf("temporary files in flight: %v, want one", tmps)
			}
			for i, s := range c.signals {
				if i > 0 {
					// The first signal's message says it was handled.
					for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "stopping") && time.Now().Before(deadline); {
						time.Sleep(5 * time.Millisecond)
					}
				}
				cmd.Process.Signal(s)
			}
			err = cmd.Wait()
			code := cmd.ProcessState.ExitCode()
			if code != c.code {
				t.Errorf("exit status %d (%v), want %d\n%s", code, err, c.code, stderr.String())
			}
			for _, w := range c.want {
				if w = strings.ReplaceAll(w, "OUT", out); !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if es, _ := os.ReadDir(dir); len(es) != 0 {
				t.Errorf("left %v", es[0].Name())
			}
		})
	}
}

// syncBuffer is a bytes.Buffer that a test may read while exec's goroutine writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPatch: ReadAt and WriteAt read and patch what was written to an atomic output
// before Commit, and refuse an output written in place.
func TestPatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("head=????;body")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := f.ReadAt(got, 5); err != nil || string(got) != "????" {
		t.Fatalf("ReadAt: %q, %v", got, err)
	}
	if _, err := f.WriteAt([]byte("abcd"), 5); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("+tail")); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "head=abcd;body+tail" {
		t.Errorf("committed %q", b)
	}
	if _, err := f.WriteAt([]byte("x"), 0); err == nil {
		t.Error("WriteAt after Commit: no error")
	}
	dev, err := Create(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Abort()
	if _, err := dev.WriteAt([]byte("x"), 0); err == nil || !strings.Contains(err.Error(), "cannot be read back or patched") {
		t.Errorf("WriteAt on %s: %v", os.DevNull, err)
	}
}

// TestWriteAll: outputs made together are all committed when the writer succeeds, and
// none is left when it fails.
func TestWriteAll(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.md"), filepath.Join(dir, "a.csv")
	err := WriteAll([]string{a, b}, func(ws []io.Writer) error {
		io.WriteString(ws[0], "table")
		io.WriteString(ws[1], "csv")
		return errors.New("boom")
	})
	if err == nil || err.Error() != "boom" {
		t.Fatalf("WriteAll: %v", err)
	}
	for _, p := range []string{a, b} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s after a failed WriteAll: %v", p, err)
		}
	}
	if err := WriteAll([]string{a, b}, func(ws []io.Writer) error {
		_, err := io.WriteString(ws[0], "table")
		if err == nil {
			_, err = io.WriteString(ws[1], "csv")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{a: "table", b: "csv"} {
		if got, err := os.ReadFile(p); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v", p, got, err)
		}
	}
}

// TestDistinct: an input given twice, under one name or another (./x, a hard or symbolic
// link) or "-" for stdin twice, is refused, naming both; distinct inputs, "-" once, and
// names that are no regular file (missing, a folder: their readers report them) pass.
func TestDistinct(t *testing.T) {
	dir := t.TempDir()
	j := func(name string) string { return filepath.Join(dir, name) }
	for _, name := range []string{"x", "y"} {
		if err := os.WriteFile(j(name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(j("x"), j("hard")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("x", j("sym")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		paths []string
		want  string // "": accepted
	}{
		{"distinct", []string{j("x"), j("y"), "-"}, ""},
		{"one file twice", []string{j("x"), j("y"), j("x")}, j("x") + " and " + j("x") + " are the same file, given twice"},
		{"by ./", []string{j("x"), dir + "/./x"}, "are the same file, given twice"},
		{"by a hard link", []string{j("hard"), j("y"), j("x")}, j("hard") + " and " + j("x") + " are the same file"},
		{"by a symbolic link", []string{j("sym"), j("x")}, j("sym") + " and " + j("x") + " are the same file"},
		{"stdin twice", []string{"-", j("x"), "-"}, "- (stdin) is given twice"},
		{"missing twice", []string{j("missing"), j("missing")}, ""},
		{"a folder twice", []string{dir, dir}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Distinct(c.paths)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestClosedStdout: a stage started with standard output closed (which the Go runtime
// turns into /dev/null open read-write) cannot create "-", /dev/stdout or /dev/fd/1, and
// its writes to Stdout fail, so that Main exits 1 naming the cause; the other
// descriptors and files are unaffected. Standard output open on anything else, /dev/null
// write-only (>/dev/null) included, is no closed one; a write to it that fails (/dev/full)
// fails the stage too.
func TestClosedStdout(t *testing.T) {
	const closed = "standard output is closed (>&-): nowhere to write"
	for _, c := range []struct {
		name   string
		open   func(dir string) (*os.File, error)
		code   int
		create string // the error of creating "-", /dev/stdout and /dev/fd/1; "": none
		write  string // the error of a write to Stdout; "": none
	}{
		{"closed", func(string) (*os.File, error) { return os.OpenFile(os.DevNull, os.O_RDWR, 0) }, 1, closed, closed},
		{">/dev/null", func(string) (*os.File, error) { return os.OpenFile(os.DevNull, os.O_WRONLY, 0) }, 0, "", ""},
		{"1<>/dev/zero", func(string) (*os.File, error) { return os.OpenFile("/dev/zero", os.O_RDWR, 0) }, 0, "", ""},
		{"1<>file", func(dir string) (*os.File, error) {
			return os.OpenFile(filepath.Join(dir, "stdout.txt"), os.O_RDWR|os.O_CREATE, 0o644)
		}, 0, "", ""},
		{">/dev/full", func(string) (*os.File, error) { return os.OpenFile("/dev/full", os.O_WRONLY, 0) }, 1, "", "write /dev/stdout: no space left on device"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			stdout, err := c.open(dir)
			if err != nil {
				t.Skipf("cannot open the standard output under test: %v", err)
			}
			defer stdout.Close()
			out := filepath.Join(dir, "out.arrow")
			cmd := exec.Command(os.Args[0], "-test.run=^$", out)
			cmd.Env = append(os.Environ(), helperEnv+"=stdout")
			cmd.Stdout = stdout
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err = cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != c.code {
				t.Errorf("exit status %d (%v), want %d", code, err, c.code)
			}
			var want []string
			for _, p := range []string{"-", "/dev/stdout", "/dev/fd/1"} {
				if c.create == "" {
					want = append(want, "create "+p+": ok")
				} else {
					want = append(want, "create "+p+": "+p+": "+c.create)
				}
			}
			want = append(want, "create /dev/fd/2: ok", "create "+out+": ok")
			if c.write == "" {
				want = append(want, "write: <nil>")
			} else {
				want = append(want, "write: "+c.write, "helper: writing standard output: "+c.write)
			}
			if got := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n"); !slices.Equal(got, want) {
				t.Errorf("the helper said:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if es, _ := os.ReadDir(dir); len(es) > 1 || len(es) == 1 && es[0].Name() != "stdout.txt" {
				t.Errorf("left %v", es)
			}
		})
	}
}

// TestLinkChain: a chain of symbolic links is followed to its end for as many links as the
// kernel follows (maxLinks); one link more, or a cycle, is an error naming the path.
func TestLinkChain(t *testing.T) {
	for _, c := range []struct {
		name  string
		links int  // the chain's length: link0 -> link1 -> ... -> target
		cycle bool // the last link points back to link0
		want  string
	}{
		{"one", 1, false, ""},
		{"the most", maxLinks, false, ""},
		{"one too many", maxLinks + 1, false, "too many levels of symbolic links"},
		{"cycle", 2, true, "too many levels of symbolic links"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for i := range c.links {
				next := fmt.Sprintf("link%d", i+1)
				if i == c.links-1 {
					next = "target"
					if c.cycle {
						next = "link0"
					}
				}
				must(t, os.Symlink(next, filepath.Join(dir, fmt.Sprintf("link%d", i))))
			}
			path := filepath.Join(dir, "link0")
			f, err := Create(path)
			if c.want != "" {
				if err == nil {
					f.Abort()
					t.Fatalf("Create: no error, want %q", c.want)
				}
				if want := path + ": " + c.want; err.Error() != want {
					t.Fatalf("Create: %v, want %q", err, want)
				}
				return
			}
			must(t, err)
			io.WriteString(f, "x")
			must(t, f.Commit())
			assertFile(t, filepath.Join(dir, "target"), "x", 0o644)
			if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("%s is no longer a link: %v", path, err)
			}
		})
	}
}
