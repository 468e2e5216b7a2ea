// Package buildtag answers which builds compile a Go file, from its //go:build line: for
// the checks that a build without cgo says what it leaves out (emu.NoCgoLeftOut,
// internal/repocheck's TestCgoOnlyTestsAreSaid).
package buildtag

import (
	"go/build/constraint"
	"runtime"
	"strings"
)

// Compiles reports whether a build for this GOOS and GOARCH without the cuda tag (or any
// other), with cgo on or off, compiles the Go source src. A file without a //go:build
// line compiles in every build.
func Compiles(src string, cgo bool) (bool, error) {
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "package ") {
			break
		}
		if !constraint.IsGoBuild(line) {
			continue
		}
		expr, err := constraint.Parse(line)
		if err != nil {
			return false, err
		}
		return expr.Eval(func(tag string) bool {
			switch tag {
			case "cgo":
				return cgo
			case runtime.GOOS, runtime.GOARCH, "unix":
				return true
			}
			return false
		}), nil
	}
	return true, nil
}
