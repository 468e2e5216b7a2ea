package outfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Claim is Check, then a claim on every output written by rename (a new path or a regular
// file) that lasts until release is called: a second run, of any stage, naming one of
// those outputs fails at once, naming the first run's process. Without it, two `train` runs
// on one --checkpoint would both run to the end and one would silently replace the other's
// checkpoint: the "another run" check at start sees nothing while the first has not yet
// written.
//
// The claim is an exclusive flock on .NAME.lock beside the output, holding the claimant's
// pid; release removes it (so does a signal, through Main). A run killed outright leaves
// the file unlocked: the next claim takes it over. Devices, pipes and stdout are written in
// place and are not claimed.
func Claim(inputs, outputs []Path) (release func(), err error) {
	if err := Check(inputs, outputs); err != nil {
		return nil, err
	}
	var held []*claim
	release = func() {
		for _, c := range held {
			c.release()
		}
		held = nil
	}
	for _, o := range outputs {
		if o.Path == "" || o.Path == "-" {
			continue
		}
		t, err := locate(o.Path)
		if err != nil {
			release()
			return nil, fmt.Errorf("%s %w", o.Flag, err)
		}
		if !t.kind.atomic() {
			continue
		}
		c, err := claimPath(t.path)
		if err != nil {
			release()
			return nil, fmt.Errorf("%s %s: %w", o.Flag, o.Path, err)
		}
		held = append(held, c)
	}
	return release, nil
}

// claim is a held lock file.
type claim struct {
	path string
	f    *os.File
}

// The claims this process holds, so that a signal can remove their files.
var claims struct {
	sync.Mutex
	held map[*claim]bool
}

func lockPath(out string) string {
	return filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".lock")
}

// errClaimed is wrapped by the error of a claim that another process holds.
var errClaimed = errors.New("another run is writing it")

// claimPath takes the lock file of out. The lock is taken on an open file, which is then
// checked to still be the file at the lock's path: a holder that was releasing (removing
// the file) between our open and our flock leaves us a lock on a removed file, which
// guards nothing, and we try again.
func claimPath(out string) (*claim, error) {
	lp := lockPath(out)
	for try := 0; try < 10; try++ {
		f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o644)
		if err != nil {
			return nil, fmt.Errorf("its lock file %s: %w", lp, unwrapPath(err))
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			pid := readPid(f)
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				who := "another process"
				if pid > 0 {
					who = "process " + strconv.Itoa(pid)
				}
				return nil, fmt.Errorf("%w (%s holds %s): wait for it to end, or write elsewhere", errClaimed, who, lp)
			}
			return nil, fmt.Errorf("locking %s: %w", lp, err)
		}
		var held, now unix.Stat_t
		if unix.Fstat(int(f.Fd()), &held) != nil || unix.Lstat(lp, &now) != nil || held.Dev != now.Dev || held.Ino != now.Ino {
			f.Close()
			continue
		}
		if err := f.Truncate(0); err == nil {
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		c := &claim{path: lp, f: f}
		claims.Lock()
		if claims.held == nil {
			claims.held = map[*claim]bool{}
		}
		claims.held[c] = true
		claims.Unlock()
		return c, nil
	}
	return nil, fmt.Errorf("its lock file %s keeps being replaced", lp)
}

func readPid(f *os.File) int {
	b, _ := io.ReadAll(io.LimitReader(f, 32))
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// release removes the lock file while still holding the lock, then drops the lock.
func (c *claim) release() {
	claims.Lock()
	defer claims.Unlock()
	c.drop()
}

func (c *claim) drop() {
	if !claims.held[c] {
		return
	}
	delete(claims.held, c)
	os.Remove(c.path)
	c.f.Close()
}

// releaseClaims drops every claim this process holds (on a signal, before it exits).
func releaseClaims() {
	claims.Lock()
	defer claims.Unlock()
	for c := range claims.held {
		c.drop()
	}
}
