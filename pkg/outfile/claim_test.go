package outfile

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestClaim: a claimed output cannot be claimed again until released (flock is per open
// file, so this holds within one process too); the error names the holder's pid; release
// removes the lock file; a stale lock file (a killed run's) is taken over.
func TestClaim(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "a.arrow")
	outs := []Path{{Flag: "-o", Path: out}, {Flag: "--plot", Path: filepath.Join(dir, "p.svg")}, {Flag: "stdout", Path: "-"}}
	release, err := Claim(nil, outs)
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, ".a.arrow.lock")
	if b, err := os.ReadFile(lock); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("lock file %q, %v: want this pid", b, err)
	}
	_, err = Claim(nil, []Path{{Flag: "--log", Path: out}})
	if !errors.Is(err, errClaimed) || !strings.Contains(err.Error(), "--log "+out+": another run is writing it (process "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second claim: %v", err)
	}
	// A failed claim of several outputs releases what it took: p.svg is claimed, so q.txt
	// must be free again afterwards.
	q := filepath.Join(dir, "q.txt")
	if _, err := Claim(nil, []Path{{Flag: "-o", Path: q}, {Flag: "--plot", Path: filepath.Join(dir, "p.svg")}}); !errors.Is(err, errClaimed) {
		t.Fatalf("claim of a held plot: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".q.txt.lock")); !os.IsNotExist(err) {
		t.Errorf("a failed claim left q.txt's lock: %v", err)
	}
	release()
	release() // twice is harmless
	for _, p := range []string{lock, filepath.Join(dir, ".p.svg.lock")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left after release: %v", p, err)
		}
	}
	// A killed run's lock file: present, unlocked.
	os.WriteFile(lock, []byte("999999\n"), 0o644)
	release, err = Claim(nil, outs[:1])
	if err != nil {
		t.Fatalf("a stale lock file was not taken over: %v", err)
	}
	release()
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("left %s", es[0].Name())
	}
}

// TestClaimDir: an output folder is claimed as a file is, by .NAME.lock beside it (a link
// to a folder: beside its target). While held, a second ClaimDir of the folder, by its
// name or through the link, and a Claim of a file output at its path fail, naming this
// process; a refusal by CheckDir takes no claim; release frees it and removes the lock.
func TestClaimDir(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "export")
	link := filepath.Join(dir, "link")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("export", link); err != nil {
		t.Fatal(err)
	}
	release, err := ClaimDir(Path{Flag: "-o", Path: out}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, ".export.lock")
	if b, err := os.ReadFile(lock); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("lock file %q, %v: want this pid", b, err)
	}
	held := "another run is writing it (process " + strconv.Itoa(os.Getpid())
	for _, p := range []string{out, link} {
		if _, err := ClaimDir(Path{Flag: "-o", Path: p}, true, nil); !errors.Is(err, errClaimed) || !strings.Contains(err.Error(), "-o "+p+": "+held) {
			t.Errorf("second claim of %s: %v", p, err)
		}
	}
	release()
	// A folder not made yet and a file output at its path share the lock.
	fresh := filepath.Join(dir, "fresh")
	release, err = ClaimDir(Path{Flag: "-o", Path: fresh}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Claim(nil, []Path{{Flag: "--checkpoint", Path: fresh}}); !errors.Is(err, errClaimed) {
		t.Errorf("a file claim of the folder's path: %v", err)
	}
	release()
	release() // twice is harmless
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Errorf("lock left after release: %v", err)
	}
	// A folder CheckDir refuses (not empty, no overwrite) is not claimed.
	if err := os.WriteFile(filepath.Join(out, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ClaimDir(Path{Flag: "-o", Path: out}, false, nil); err == nil || errors.Is(err, errClaimed) {
		t.Errorf("a non-empty folder without overwrite: %v", err)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Errorf("a refused claim left the lock: %v", err)
	}
	release, err = ClaimDir(Path{Flag: "-o", Path: link}, true, nil)
	if err != nil {
		t.Fatalf("claim again after release, through the link: %v", err)
	}
	release()
}

// TestClaimHolder: a refused claim names the holder by the pid in its lock file, and says
// "another process" when the file holds no pid (empty, garbage, or 0, which is no
// process's). The lock is held here through a second open file: flock is per open file.
func TestClaimHolder(t *testing.T) {
	for _, c := range []struct {
		name, content, who string
	}{
		{"pid", "4242\n", "process 4242"},
		{"empty", "", "another process"},
		{"garbage", "abc\n", "another process"},
		{"zero", "0\n", "another process"},
		{"negative", "-7\n", "another process"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "a.arrow")
			lock := filepath.Join(dir, ".a.arrow.lock")
			if err := os.WriteFile(lock, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			lf, err := os.Open(lock)
			if err != nil {
				t.Fatal(err)
			}
			defer lf.Close()
			if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
				t.Fatal(err)
			}
			_, err = Claim(nil, []Path{{Flag: "-o", Path: out}})
			want := "-o " + out + ": another run is writing it (" + c.who + " holds " + lock + "): wait for it to end, or write elsewhere"
			if !errors.Is(err, errClaimed) || err.Error() != want {
				t.Errorf("claim: %v\nwant %s", err, want)
			}
			if b, err := os.ReadFile(lock); err != nil || string(b) != c.content {
				t.Errorf("the holder's lock file became %q, %v; was %q", b, err, c.content)
			}
		})
	}
}
