// Package stagebuild builds the stage binaries that the end-to-end tests run, the same
// way from every test that builds one. It is for tests only.
package stagebuild

import "os/exec"

// Command is the command that builds pkgs into out (a file, or a folder ending in a
// separator), in the current folder. A test binary built with -race (make test-race)
// builds the stages with -race too, so that the stages' own goroutines (the sampler's
// workers, training's prefetch, rank's workers, the pipes) run under the race detector in
// the end-to-end tests, and not only in the packages' tests.
func Command(out string, pkgs ...string) *exec.Cmd {
	args := []string{"build"}
	if Race {
		args = append(args, "-race")
	}
	return exec.Command("go", append(append(args, "-o", out), pkgs...)...)
}
