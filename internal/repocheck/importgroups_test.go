package repocheck

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"
)

// importClass orders the groups of an import block: the standard library, then
// third-party modules, then this module's packages ("C", cgo's, stands alone).
func importClass(path string) int {
	switch {
	case path == "C":
		return -1
	case strings.HasPrefix(path, strings.TrimSuffix(module, "/")):
		return 2
	case !strings.Contains(strings.Split(path, "/")[0], "."):
		return 0
	}
	return 1
}

var classNames = []string{"the standard library", "third-party", "this module"}

// importGroupErrors lists how the import blocks of a Go file break the grouping: a group
// (imports on consecutive lines) that mixes classes, or groups out of class order.
func importGroupErrors(name string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var errs []string
	lastLine, groupClass, lastClass := -2, -1, -1
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, err
		}
		c, line := importClass(path), fset.Position(imp.Pos()).Line
		if c < 0 {
			lastLine = -2
			continue
		}
		if line != lastLine+1 { // a new group
			if c < lastClass {
				errs = append(errs, fmt.Sprintf("%s:%d: %s's group (%s) comes after %s's", name, line, path, classNames[c], classNames[lastClass]))
			}
			groupClass = c
		} else if c != groupClass {
			errs = append(errs, fmt.Sprintf("%s:%d: %s (%s) in a group of %s", name, line, path, classNames[c], classNames[groupClass]))
		}
		lastLine, lastClass = line, max(lastClass, c)
	}
	return errs, nil
}

// TestImportGroups: every Go file of the repository groups its imports as gofmt leaves
// them to us: the standard library, third-party modules, this module, each its own group,
// in that order.
func TestImportGroups(t *testing.T) {
	root := stagetest.RepoRoot(t)
	for _, name := range repoFiles(t, root) {
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		errs, err := importGroupErrors(name, src)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		for _, e := range errs {
			t.Error(e)
		}
	}
}

// TestImportGroupErrors: the check finds a module import among the standard library's, a
// third-party one in the module's group and groups out of order, and passes cgo's "C".
func TestImportGroupErrors(t *testing.T) {
	for _, c := range []struct {
		src  string
		want int
	}{
		{"package p\nimport (\n\t\"fmt\"\n\t\"os\"\n\n\t\"gorgonia.org/cu\"\n\n\t\"" + module + "pkg/kg\"\n)\n", 0},
		{"package p\n// #include <x.h>\nimport \"C\"\nimport (\n\t\"fmt\"\n\n\t\"" + module + "pkg/kg\"\n)\n", 0},
		{"package p\nimport (\n\t\"fmt\"\n\t\"" + module + "pkg/kg\"\n\t\"os\"\n)\n", 1},
		{"package p\nimport (\n\t\"fmt\"\n\n\t\"" + module + "pkg/kg\"\n\t\"gorgonia.org/cu\"\n)\n", 1},
		{"package p\nimport (\n\t\"" + module + "pkg/kg\"\n\n\t\"fmt\"\n)\n", 1},
	} {
		errs, err := importGroupErrors("x.go", []byte(c.src))
		if err != nil || len(errs) != c.want {
			t.Errorf("%q: %v, %q; want %d errors", c.src, err, errs, c.want)
		}
	}
}
