package repocheck

import (
	"fmt"
	"maps"
	"os"
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

// TestFuzzTargetsDocumented keeps fuzzing and its documentation whole: `make fuzz` runs
// every Go fuzz target (the Makefile's FUZZ_TARGETS, package:name) and nothing else, every
// target has a row, with its package, in docs/reliability.md's fuzzing table (what it
// reads, how long it was fuzzed), every row names a target that exists, and the README's
// count is the number of targets.
func TestFuzzTargetsDocumented(t *testing.T) {
	root := stagetest.RepoRoot(t)
	targets := map[string]bool{} // "pkg/dir FuzzX"
	for _, f := range repoFiles(t, root) {
		f = filepath.ToSlash(f)
		if !strings.HasSuffix(f, "_test.go") || strings.Contains(f, "/testdata/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range fuzzFunc.FindAllSubmatch(b, -1) {
			targets[path.Dir(f)+" "+string(m[1])] = true
		}
	}
	if len(targets) < 10 {
		t.Fatalf("found %d fuzz targets: the search is broken", len(targets))
	}

	doc, err := os.ReadFile(filepath.Join(root, "docs", "reliability.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	proseLines(doc, func(n int, line string) {
		if m := fuzzRow.FindStringSubmatch(line); m != nil {
			key := m[2] + " " + m[1]
			rows[key] = true
			if !targets[key] {
				t.Errorf("docs/reliability.md:%d: %s in %s is not a fuzz target", n, m[1], m[2])
			}
		}
	})
	var missing []string
	for key := range targets {
		if !rows[key] {
			dir, name, _ := strings.Cut(key, " ")
			missing = append(missing, fmt.Sprintf("%s (%s)", name, dir))
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("docs/reliability.md's fuzzing table has no row for %s", m)
	}

	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	list := fuzzTargets.FindSubmatch(makefile)
	if list == nil {
		t.Fatal("the Makefile has no FUZZ_TARGETS")
	}
	made := map[string]bool{}
	for _, item := range strings.Fields(strings.ReplaceAll(string(list[1]), "\\\n", " ")) {
		dir, name, ok := strings.Cut(item, ":")
		key := strings.TrimPrefix(dir, "./") + " " + name
		if !ok || !targets[key] {
			t.Errorf("the Makefile's FUZZ_TARGETS names %q, which is not a fuzz target", item)
		}
		if made[key] {
			t.Errorf("the Makefile's FUZZ_TARGETS names %q twice", item)
		}
		made[key] = true
	}
	for _, key := range slices.Sorted(maps.Keys(targets)) {
		if !made[key] {
			dir, name, _ := strings.Cut(key, " ")
			t.Errorf("make fuzz does not run %s (./%s:%s is not in the Makefile's FUZZ_TARGETS)", name, dir, name)
		}
	}

	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := fuzzCount.FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md does not say how many Go fuzz targets there are")
	}
	if n, _ := strconv.Atoi(string(m[1])); n != len(targets) {
		t.Errorf("README.md says %d Go fuzz targets; there are %d", n, len(targets))
	}
}
