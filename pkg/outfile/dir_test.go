package outfile

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// TestCheckDir is the table of what CheckDir refuses and accepts; every case asserts the
// message and that nothing in the test's folder changed.
func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	os.MkdirAll(filepath.Join(full, "deep"), 0o755)
	os.WriteFile(filepath.Join(full, "deep", "model.arrow"), []byte("ckpt"), 0o644)
	os.WriteFile(filepath.Join(full, "old.npy"), []byte("old"), 0o644)
	os.Mkdir(filepath.Join(dir, "empty"), 0o755)
	os.WriteFile(filepath.Join(dir, "file"), []byte("f"), 0o644)
	os.Symlink(filepath.Join(full, "deep", "model.arrow"), filepath.Join(dir, "link.arrow"))
	os.Symlink(full, filepath.Join(dir, "linkdir"))
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	os.WriteFile(filepath.Join(data, "train.tsv"), []byte("0\t0\t1\n"), 0o644)
	ro := readOnlyDir(t)

	ckpt := Path{Flag: "--checkpoint", Path: filepath.Join(full, "deep", "model.arrow")}
	for _, c := range []struct {
		name      string
		out       string
		overwrite bool
		inputs    []Path
		want      string // "" accepts
	}{
		{"new", filepath.Join(dir, "new"), false, nil, ""},
		{"empty", filepath.Join(dir, "empty"), false, nil, ""},
		{"stdout", "-", false, nil, "-o -: the output is a folder of files, not stdout"},
		{"none", "", false, nil, "-o: no output folder given"},
		{"a file", filepath.Join(dir, "file"), true, nil, "-o " + filepath.Join(dir, "file") + ": exists and is not a folder"},
		{"not empty", full, false, nil, "-o " + full + ": the folder exists and is not empty (--overwrite replaces it as a whole)"},
		{"not empty, overwrite", full, true, nil, ""},
		{"holds an input", full, true, []Path{ckpt}, "-o " + full + " holds --checkpoint " + ckpt.Path + ": an input is never written over"},
		{"holds an input, no overwrite", full, false, []Path{ckpt}, "holds --checkpoint"},
		{"holds an input by a link", full, true, []Path{{Flag: "--cones", Path: filepath.Join(dir, "link.arrow")}}, "holds --cones " + filepath.Join(dir, "link.arrow")},
		{"through a link, holds an input", filepath.Join(dir, "linkdir"), true, []Path{ckpt}, "holds --checkpoint"},
		{"by ./, holds an input", full + "/./deep/..", true, []Path{ckpt}, "holds --checkpoint"},
		{"is an input folder", data, true, []Path{{Flag: "--data", Path: data}}, "-o " + data + " holds --data " + data},
		{"inside an input folder", filepath.Join(data, "export"), true, []Path{{Flag: "--data", Path: data}}, ""},
		{"missing input", full, true, []Path{{Flag: "--cones", Path: filepath.Join(dir, "nothing")}}, ""},
		{"no parent", filepath.Join(dir, "nothing", "x"), false, nil, "-o " + filepath.Join(dir, "nothing", "x") + ": folder " + filepath.Join(dir, "nothing") + ": no such file or directory"},
		{"parent is a file", filepath.Join(dir, "file", "x"), false, nil, "-o " + filepath.Join(dir, "file", "x") + ": not a directory"},
		{"read-only parent", filepath.Join(ro, "x"), false, nil, "-o " + filepath.Join(ro, "x") + ": cannot create a folder in " + ro},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, dir)
			err := CheckDir(Path{Flag: "-o", Path: c.out}, c.overwrite, c.inputs)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want %q", err, c.want)
			}
			assertUnchanged(t, dir, before)
		})
	}
}

// TestCheckDirStdin: stdin redirected from a file counts as that file: an output folder
// holding it is refused (embed export --cones - -o DIR --overwrite < DIR/cones.arrow used
// to replace DIR, deleting the file it read), one that does not is not, and a pipe is no
// file of any folder.
func TestCheckDirStdin(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	os.MkdirAll(filepath.Join(full, "deep"), 0o755)
	inside := filepath.Join(full, "deep", "cones.arrow")
	outside := filepath.Join(dir, "cones.arrow")
	for _, p := range []string{inside, outside} {
		os.WriteFile(p, []byte("cones"), 0o644)
	}
	os.Link(inside, filepath.Join(dir, "hard.arrow"))
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	for _, c := range []struct {
		name  string
		stdin string // "" for the pipe
		want  string // "" accepts
	}{
		{"stdin from a file in the folder", inside, "-o " + full + " holds --cones - (stdin): an input is never written over"},
		{"stdin from a hard link of it outside", filepath.Join(dir, "hard.arrow"), ""},
		{"stdin from a file outside", outside, ""},
		{"stdin a pipe", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := pr
			if c.stdin != "" {
				f, err := os.Open(c.stdin)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				in = f
			}
			saved := os.Stdin
			os.Stdin = in
			defer func() { os.Stdin = saved }()
			before := snapshot(t, dir)
			err := CheckDir(Path{Flag: "-o", Path: full}, true, []Path{{Flag: "--cones", Path: "-"}})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want %q", err, c.want)
			}
			assertUnchanged(t, dir, before)
		})
	}
}

// TestDir: a folder appears whole on Commit (new, over an empty folder, and with
// overwrite over a full one, whose old files go); Abort, a failed write and a refused
// commit leave the destination as it was and no temporary folder.
func TestDir(t *testing.T) {
	list := func(t *testing.T, dir string) []string {
		t.Helper()
		var names []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(dir, p)
			names = append(names, rel)
			return nil
		})
		return names
	}
	write := func(t *testing.T, d *Dir) {
		t.Helper()
		for _, f := range []string{"a.npy", "params/b.npy"} {
			if err := d.WriteFile(f, writeString("new "+f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name      string
		before    map[string]string // files at the destination before; nil: nothing there
		overwrite bool
		want      string // Commit's error; "" succeeds
	}{
		{"new", nil, false, ""},
		{"empty folder", map[string]string{}, false, ""},
		{"full folder, overwrite", map[string]string{"old.npy": "old", "a.npy": "old a"}, true, ""},
		{"full folder, overwrite, no exchange", map[string]string{"old.npy": "old", "a.npy": "old a"}, true, ""},
		{"full folder", map[string]string{"old.npy": "old"}, false, "the folder exists and is not empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if strings.HasSuffix(c.name, "no exchange") {
				defer func(e func(a, b string) error) { exchange = e }(exchange)
				exchange = func(a, b string) error { return unix.EINVAL }
			}
			parent := t.TempDir()
			out := filepath.Join(parent, "out")
			if c.before != nil {
				os.Mkdir(out, 0o755)
				for f, s := range c.before {
					os.WriteFile(filepath.Join(out, f), []byte(s), 0o644)
				}
			}
			d, err := CreateDir(out, c.overwrite)
			if err != nil {
				t.Fatal(err)
			}
			write(t, d)
			if _, err := os.Stat(filepath.Join(out, "a.npy")); len(c.before) == 0 {
				if err == nil {
					t.Error("a.npy is at the destination before Commit")
				}
			}
			err = d.Commit()
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("Commit: %v, want %q", err, c.want)
				}
				if got := list(t, parent); !slices.Equal(got, []string{".", "out", "out/old.npy"}) {
					t.Errorf("left %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := list(t, parent); !slices.Equal(got, []string{".", "out", "out/a.npy", "out/params", "out/params/b.npy"}) {
				t.Errorf("after Commit: %v", got)
			}
			if b, _ := os.ReadFile(filepath.Join(out, "params", "b.npy")); string(b) != "new params/b.npy" {
				t.Errorf("params/b.npy holds %q", b)
			}
			if len(live.temps) != 0 {
				t.Errorf("still registered: %v", live.temps)
			}
		})
	}
	t.Run("abort", func(t *testing.T) {
		parent := t.TempDir()
		d, err := CreateDir(filepath.Join(parent, "out"), false)
		if err != nil {
			t.Fatal(err)
		}
		write(t, d)
		d.Abort()
		if got := list(t, parent); !slices.Equal(got, []string{"."}) {
			t.Errorf("left %v", got)
		}
		if err := d.Commit(); err == nil {
			t.Error("Commit after Abort succeeded")
		}
	})
	t.Run("write errors", func(t *testing.T) {
		parent := t.TempDir()
		d, err := CreateDir(filepath.Join(parent, "out"), false)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Abort()
		boom := errors.New("boom")
		if err := d.WriteFile("x.npy", func(io.Writer) error { return boom }); !errors.Is(err, boom) || !strings.Contains(err.Error(), filepath.Join(parent, "out", "x.npy")) {
			t.Errorf("WriteFile: %v", err)
		}
		if err := d.WriteFile("../escape", writeString("x")); err == nil || !strings.Contains(err.Error(), "not a path inside the output folder") {
			t.Errorf("WriteFile ../escape: %v", err)
		}
		if err := d.WriteFile("a", writeString("x")); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteFile("a", writeString("y")); err == nil {
			t.Error("a file written twice")
		}
	})
	t.Run("symbolic link", func(t *testing.T) {
		parent := t.TempDir()
		real := filepath.Join(parent, "real")
		os.Mkdir(real, 0o755)
		os.Symlink(real, filepath.Join(parent, "link"))
		d, err := CreateDir(filepath.Join(parent, "link"), false)
		if err != nil {
			t.Fatal(err)
		}
		write(t, d)
		if err := d.Commit(); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(filepath.Join(parent, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link is no longer a link: %v", err)
		}
		if _, err := os.Stat(filepath.Join(real, "params", "b.npy")); err != nil {
			t.Error(err)
		}
	})
}

// TestStaleDirs: CheckDir removes the temporary folders of killed runs (old, unlocked),
// and keeps a live writer's, newer ones, other outputs' and files.
func TestStaleDirs(t *testing.T) {
	dir := t.TempDir()
	old := processStart.Add(-time.Hour)
	mk := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Join(p, "params"), 0o755)
		os.WriteFile(filepath.Join(p, "params", "x.npy"), []byte("partial"), 0o644)
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk(".out.tmp-123", old)                      // removed, with its contents
	mk(".out.tmp-55", time.Now().Add(time.Hour)) // newer than this process: kept
	mk(".out.tmp-abc", old)                      // not MkdirTemp's pattern: kept
	mk(".other.tmp-123", old)                    // another output's: kept
	locked := mk(".out.tmp-777", old)            // a live writer's: kept
	lf, err := os.Open(locked)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir(Path{Flag: "-o", Path: filepath.Join(dir, "out")}, false, nil); err != nil {
		t.Fatal(err)
	}
	var left []string
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		left = append(left, e.Name())
	}
	if want := []string{".other.tmp-123", ".out.tmp-55", ".out.tmp-777", ".out.tmp-abc"}; !slices.Equal(left, want) {
		t.Errorf("left %v\nwant %v", left, want)
	}
	// Its temporary folders are named so that the sweep recognises them.
	d, err := CreateDir(filepath.Join(dir, "out"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Abort()
	if !isTemp(filepath.Base(d.tmp), "out") || filepath.Dir(d.tmp) != dir {
		t.Errorf("temporary folder %s is not recognised as one of out", d.tmp)
	}
	// It is locked while this process writes it: a sweep spares it even when it looks as
	// old as a killed run's.
	if err := d.WriteFile("a.npy", writeString("in flight")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(d.tmp, old, old); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir(Path{Flag: "-o", Path: filepath.Join(dir, "out")}, false, nil); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(d.tmp, "a.npy")); err != nil || string(b) != "in flight" {
		t.Errorf("a sweep removed the live temporary folder %s: %q, %v", d.tmp, b, err)
	}
}

// TestDirSignal: SIGTERM while an output folder is in flight removes the temporary folder
// and all in it, and says the output was not written.
func TestDirSignal(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cmd := exec.Command(os.Args[0], "-test.run=^$", out)
	cmd.Env = append(os.Environ(), helperEnv+"=dir")
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
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".out.tmp-*", "sub", "a.npy")); len(tmps) != 1 {
		t.Fatalf("files in flight: %v, want one", tmps)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 143 {
		t.Errorf("exit status %d, want 143\n%s", code, stderr.String())
	}
	if w := "helper: stopped by SIGTERM; not written: " + out; !strings.Contains(stderr.String(), w) {
		t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("left %v", es[0].Name())
	}
}

// TestDirMode: a new output folder gets a plain mkdir's mode (0777 less the umask), not
// the temporary folder's 0700; a folder it replaces keeps its own mode.
func TestDirMode(t *testing.T) {
	defer unix.Umask(unix.Umask(0o022))
	for _, c := range []struct {
		name   string
		before os.FileMode // 0: nothing there
		full   bool
		want   os.FileMode
	}{
		{"new", 0, false, 0o755},
		{"empty folder", 0o750, false, 0o750},
		{"full folder, overwrite", 0o711, true, 0o711},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			if c.before != 0 {
				if err := os.Mkdir(out, c.before); err != nil {
					t.Fatal(err)
				}
				if c.full {
					os.WriteFile(filepath.Join(out, "old.npy"), []byte("old"), 0o644)
				}
			}
			d, err := CreateDir(out, c.full)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.WriteFile("a.npy", writeString("new")); err != nil {
				t.Fatal(err)
			}
			if err := d.Commit(); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(out)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != c.want {
				t.Errorf("mode %v, want %v", got, c.want)
			}
		})
	}
}
