// Package arrowcheck finds the Node.js checks in scripts/arrow-check, which read this
// project's files with readers that are not its own (apache-arrow, hyparquet), for the
// tests of the packages that write those files.
package arrowcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Script returns node's path and the path of the script name in scripts/arrow-check, whose
// node_modules must hold module. Without node or the module the test is skipped, unless
// ARROW_CHECK_JS is set (make test-js), which makes that a failure: the check must run.
func Script(tb testing.TB, name, module string) (node, script string) {
	tb.Helper()
	missing := tb.Skip
	if os.Getenv("ARROW_CHECK_JS") != "" {
		missing = tb.Fatal
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "arrow-check")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", module)); err != nil {
		missing("scripts/arrow-check/node_modules/" + module + " is missing; run npm ci --prefix scripts/arrow-check")
	}
	return node, filepath.Join(dir, name)
}
