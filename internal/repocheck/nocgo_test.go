package repocheck

import (
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/buildtag"
	"github.com/rocone/rocone/internal/stagetest"
)

// TestCgoOnlyTestsAreSaid keeps a build without cgo from dropping tests in silence: a
// package with test files that build only with cgo (those that run the launch emulator,
// C++ through cgo) must have a nocgo_test.go whose TestEmulatorNeedsCgo fails, naming
// them (emu.NoCgoLeftOut reads them from the package's folder at run time). That such a
// build compiles at all is make test's `GOARCH=arm64 go vet ./...` (cgo off).
func TestCgoOnlyTestsAreSaid(t *testing.T) {
	root := stagetest.RepoRoot(t)
	byDir := map[string][]string{}
	for _, f := range repoFiles(t, root) {
		f = filepath.ToSlash(f)
		if strings.HasSuffix(f, "_test.go") && !strings.Contains(f, "/testdata/") {
			byDir[path.Dir(f)] = append(byDir[path.Dir(f)], f)
		}
	}
	read := func(f string) string { return string(readRepoFile(t, root, f)) }
	cgoOnly := 0
	for dir, tests := range byDir {
		var only []string
		for _, f := range tests {
			src := read(f)
			with, without := builds(t, f, src, true), builds(t, f, src, false)
			if with && !without {
				only = append(only, path.Base(f))
			}
		}
		if len(only) == 0 {
			continue
		}
		cgoOnly++
		nocgo := dir + "/nocgo_test.go"
		if !slices.Contains(tests, nocgo) {
			t.Errorf("%s: %v build only with cgo, and no nocgo_test.go says so without it", dir, only)
			continue
		}
		if src := read(nocgo); !strings.Contains(src, "func TestEmulatorNeedsCgo(") || !strings.Contains(src, "NoCgoLeftOut(\".\")") {
			t.Errorf("%s: no TestEmulatorNeedsCgo naming what it leaves out (NoCgoLeftOut(\".\"))", nocgo)
		}
	}
	if cgoOnly < 3 {
		t.Fatalf("found %d packages with tests that need cgo: the search is broken", cgoOnly)
	}
}

// builds is buildtag.Compiles for the file f, failing the test on a malformed line.
func builds(t *testing.T, f, src string, cgo bool) bool {
	t.Helper()
	ok, err := buildtag.Compiles(src, cgo)
	if err != nil {
		t.Fatalf("%s: %v", f, err)
	}
	return ok
}
