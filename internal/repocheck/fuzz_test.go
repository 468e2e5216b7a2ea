package repocheck

import (
	"maps"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"
)

var (
	fuzzFunc = regexp.MustCompile(`(?m)^func (Fuzz\w*)\(`)
	// A row of docs/reliability.md's fuzzing table: | `FuzzX` (a note) | `pkg/dir` | ...
	fuzzRow = regexp.MustCompile("^\\| `(Fuzz\\w*)`[^|]*\\| `([^`]+)` \\|")
	// The README's count: "30 Go fuzz targets".
	fuzzCount = regexp.MustCompile(`(\d+) Go fuzz targets`)
	// The Makefile's list for make fuzz, continuation lines and all.
	fuzzTargets = regexp.MustCompile(`(?m)^FUZZ_TARGETS :=((?:.*\\\n)*.*)$`)
)

// fuzzTarget is a Go fuzz function and the folder of its package, relative to the root.
type fuzzTarget struct{ dir, name string }

// TestFuzzTargetsDocumented keeps fuzzing and its documentation whole: `make fuzz` runs
// every Go fuzz target (the Makefile's FUZZ_TARGETS, package:name) and nothing else, every
// target has a row, with its package, in docs/reliability.md's fuzzing table (what it
// reads, how long it was fuzzed), every row names a target that exists, and the README's
// count is the number of targets.
func TestFuzzTargetsDocumented(t *testing.T) {
	root := stagetest.RepoRoot(t)
	read := func(rel string) []byte { return readRepoFile(t, root, rel) }
	targets := map[fuzzTarget]bool{}
	for _, f := range repoFiles(t, root) {
		f = filepath.ToSlash(f)
		if !strings.HasSuffix(f, "_test.go") || strings.Contains(f, "/testdata/") {
			continue
		}
		for _, m := range fuzzFunc.FindAllSubmatch(read(f), -1) {
			targets[fuzzTarget{path.Dir(f), string(m[1])}] = true
		}
	}
	if len(targets) < 10 {
		t.Fatalf("found %d fuzz targets: the search is broken", len(targets))
	}
	sorted := slices.SortedFunc(maps.Keys(targets), func(a, b fuzzTarget) int {
		return strings.Compare(a.name+" "+a.dir, b.name+" "+b.dir)
	})

	rows := map[fuzzTarget]bool{}
	proseLines(read("docs/reliability.md"), func(n int, line string) {
		if m := fuzzRow.FindStringSubmatch(line); m != nil {
			key := fuzzTarget{m[2], m[1]}
			rows[key] = true
			if !targets[key] {
				t.Errorf("docs/reliability.md:%d: %s in %s is not a fuzz target", n, m[1], m[2])
			}
		}
	})
	for _, key := range sorted {
		if !rows[key] {
			t.Errorf("docs/reliability.md's fuzzing table has no row for %s (%s)", key.name, key.dir)
		}
	}

	list := fuzzTargets.FindSubmatch(read("Makefile"))
	if list == nil {
		t.Fatal("the Makefile has no FUZZ_TARGETS")
	}
	made := map[fuzzTarget]bool{}
	for _, item := range strings.Fields(strings.ReplaceAll(string(list[1]), "\\\n", " ")) {
		dir, name, ok := strings.Cut(item, ":")
		key := fuzzTarget{strings.TrimPrefix(dir, "./"), name}
		if !ok || !targets[key] {
			t.Errorf("the Makefile's FUZZ_TARGETS names %q, which is not a fuzz target", item)
		}
		if made[key] {
			t.Errorf("the Makefile's FUZZ_TARGETS names %q twice", item)
		}
		made[key] = true
	}
	for _, key := range sorted {
		if !made[key] {
			t.Errorf("make fuzz does not run %s (./%s:%s is not in the Makefile's FUZZ_TARGETS)", key.name, key.dir, key.name)
		}
	}

	m := fuzzCount.FindSubmatch(read("README.md"))
	if m == nil {
		t.Fatal("README.md does not say how many Go fuzz targets there are")
	}
	if n, _ := strconv.Atoi(string(m[1])); n != len(targets) {
		t.Errorf("README.md says %d Go fuzz targets; there are %d", n, len(targets))
	}
}
