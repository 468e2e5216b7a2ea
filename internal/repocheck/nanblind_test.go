package repocheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"
)

// A tolerance check that a NaN passes: `if math.Abs(got-want) > tol { fail }` takes a NaN
// result for a match, since every comparison with a NaN is false, and the kernel or
// operator that returned it passes its test. `if !(math.Abs(got-want) <= tol) { fail }`
// does not. nanBlind finds the first form in the test files of one package: a
// comparison `E > tol` or `E >= tol` whose E is a distance, in a statement that never
// asks math.IsNaN (an if statement's init and condition, not its body), and not under a
// `!` (`!(e >= lo && e <= hi)` fails a NaN). A distance is a call of math.Abs, math.Sqrt,
// math.Max or math.Hypot, a variable a declaration or an assignment sets from a distance
// (the worst error so far), or a call of one of the package's own functions that returns
// a distance (an angle difference, a relative error).
type nanBlind struct {
	fset  *token.FileSet
	files map[string]*ast.File
	srcs  map[string][]byte
	vars  map[*ast.Object]bool // variables set from a distance
	funcs map[string]bool      // the package's functions that return a distance
}

var distanceCalls = [][2]string{{"math", "Abs"}, {"math", "Sqrt"}, {"math", "Max"}, {"math", "Hypot"}}

// nanBlindErrors parses one package's files (name → source) and lists its NaN-blind
// tolerance checks, "file:line:col: E > tol ...", in file order.
func nanBlindErrors(srcs map[string][]byte) ([]string, error) {
	c := &nanBlind{fset: token.NewFileSet(), files: map[string]*ast.File{}, srcs: srcs,
		vars: map[*ast.Object]bool{}, funcs: map[string]bool{}}
	for name, src := range srcs {
		f, err := parser.ParseFile(c.fset, name, src, 0)
		if err != nil {
			return nil, err
		}
		c.files[name] = f
	}
	for changed := true; changed; {
		changed = false
		for _, f := range c.files {
			changed = c.markDistances(f) || changed
		}
	}
	var errs []string
	for _, name := range slices.Sorted(maps.Keys(c.files)) {
		errs = append(errs, c.check(name)...)
	}
	return errs, nil
}

// markDistances marks the variables and functions of f that hold or return a distance,
// reporting whether it marked any new one.
func (c *nanBlind) markDistances(f *ast.File) bool {
	changed := false
	mark := func(lhs []*ast.Ident, rhs []ast.Expr) {
		for i, id := range lhs {
			if id.Obj == nil || c.vars[id.Obj] {
				continue
			}
			r := rhs[0]
			if len(rhs) == len(lhs) {
				r = rhs[i]
			}
			if c.isDistance(r) {
				c.vars[id.Obj], changed = true, true
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			var lhs []*ast.Ident
			for _, l := range n.Lhs {
				if id, ok := l.(*ast.Ident); ok {
					lhs = append(lhs, id)
				} else {
					lhs = append(lhs, &ast.Ident{}) // keeps the positions paired
				}
			}
			mark(lhs, n.Rhs)
		case *ast.ValueSpec:
			if len(n.Values) > 0 {
				mark(n.Names, n.Values)
			}
		case *ast.FuncDecl:
			if n.Recv != nil || n.Body == nil || c.funcs[n.Name.Name] {
				return true
			}
			ast.Inspect(n.Body, func(m ast.Node) bool {
				if r, ok := m.(*ast.ReturnStmt); ok && len(r.Results) > 0 && c.isDistance(r.Results[0]) {
					c.funcs[n.Name.Name], changed = true, true
				}
				return !c.funcs[n.Name.Name]
			})
		}
		return true
	})
	return changed
}

// isDistance reports whether e holds a distance (see nanBlind).
func (c *nanBlind) isDistance(e ast.Expr) bool {
	return contains(e, func(m ast.Node) bool {
		switch m := m.(type) {
		case *ast.CallExpr:
			if id, ok := m.Fun.(*ast.Ident); ok {
				return c.funcs[id.Name]
			}
			for _, d := range distanceCalls {
				if isCall(m, d[0], d[1]) {
					return true
				}
			}
		case *ast.Ident:
			return m.Obj != nil && c.vars[m.Obj]
		}
		return false
	})
}

// check lists the NaN-blind comparisons of one file.
func (c *nanBlind) check(name string) []string {
	var errs []string
	var stack []ast.Node
	ast.Inspect(c.files[name], func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		b, ok := n.(*ast.BinaryExpr)
		if !ok || (b.Op != token.GTR && b.Op != token.GEQ) || !c.isDistance(b.X) || asksIsNaN(enclosingTest(stack)) || negated(stack) {
			return true
		}
		from, to := c.fset.Position(b.Pos()), c.fset.Position(b.End())
		errs = append(errs, fmt.Sprintf("%s: %s lets a NaN pass: write !(x <= tol), or ask math.IsNaN too",
			from, c.srcs[name][from.Offset:to.Offset]))
		return true
	})
	return errs
}

// enclosingTest returns the part of the innermost statement around the stack's top that
// decides with it: an if statement's init and condition, or the whole statement.
func enclosingTest(stack []ast.Node) []ast.Node {
	for i := len(stack) - 1; i >= 0; i-- {
		switch s := stack[i].(type) {
		case *ast.IfStmt:
			return []ast.Node{s.Init, s.Cond}
		case ast.Stmt:
			return []ast.Node{s}
		}
	}
	return nil
}

// negated reports whether an odd number of ! stand between the stack's top and its
// statement, as in `!(e >= lo && e <= hi)`, where a NaN fails the check.
func negated(stack []ast.Node) bool {
	odd := false
	for i := len(stack) - 2; i >= 0; i-- {
		if _, ok := stack[i].(ast.Stmt); ok {
			break
		}
		if u, ok := stack[i].(*ast.UnaryExpr); ok && u.Op == token.NOT {
			odd = !odd
		}
	}
	return odd
}

// isCall reports whether n calls pkg.name.
func isCall(n ast.Node, pkg, name string) bool {
	c, ok := n.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg && sel.Sel.Name == name
}

// contains reports whether n or a node under it satisfies pred.
func contains(n ast.Node, pred func(ast.Node) bool) bool {
	found := false
	if n == nil {
		return false
	}
	ast.Inspect(n, func(m ast.Node) bool {
		if m != nil && pred(m) {
			found = true
		}
		return !found
	})
	return found
}

func asksIsNaN(parts []ast.Node) bool {
	for _, p := range parts {
		if contains(p, func(m ast.Node) bool { return isCall(m, "math", "IsNaN") }) {
			return true
		}
	}
	return false
}

// TestToleranceChecksSeeNaN: no test, and no test helper (internal/*test), compares a
// distance with its tolerance in a way a NaN passes (nanBlind): a kernel or an operator
// that returns NaN must fail its parity test, not match every reference.
func TestToleranceChecksSeeNaN(t *testing.T) {
	root := stagetest.RepoRoot(t)
	pkgs := map[string]map[string][]byte{} // folder → test file → source
	files := 0
	for _, f := range repoFiles(t, root) {
		f = filepath.ToSlash(f)
		helper := strings.HasPrefix(f, "internal/") && strings.HasSuffix(path.Dir(f), "test") && strings.HasSuffix(f, ".go")
		if !(strings.HasSuffix(f, "_test.go") || helper) || !checked(f) {
			continue
		}
		dir := path.Dir(f)
		if pkgs[dir] == nil {
			pkgs[dir] = map[string][]byte{}
		}
		pkgs[dir][f] = readRepoFile(t, root, f)
		files++
	}
	if files < 50 {
		t.Fatalf("checked %d test files: the search is broken", files)
	}
	for _, dir := range slices.Sorted(maps.Keys(pkgs)) {
		errs, err := nanBlindErrors(pkgs[dir])
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range errs {
			t.Error(e)
		}
	}
}

// TestNanBlindErrors: the check flags the forms a NaN passes and none of those it fails.
func TestNanBlindErrors(t *testing.T) {
	for _, c := range []struct {
		name, body string
		flagged    int
	}{
		{"abs above", `if math.Abs(got-want) > tol { t.Fail() }`, 1},
		{"abs at or above", `if math.Abs(got-want) >= tol { t.Fail() }`, 1},
		{"scaled abs", `if math.Abs(got-want)/scale > tol { t.Fail() }`, 1},
		{"through init", `if d := math.Abs(got - want); d > tol { t.Fail() }`, 1},
		{"through assignment", "d := math.Abs(got - want)\n\tif d > tol { t.Fail() }", 1},
		{"both halves", `if math.Abs(a) > tol || math.Abs(b) > tol { t.Fail() }`, 2},
		{"in a return", `return math.Abs(got-want) > tol`, 1},
		{"a norm", `if math.Sqrt(a*a+b*b) > tol { t.Fail() }`, 1},
		{"worst so far", "var worst float64\n\tif e := math.Abs(got - want); e > worst || math.IsNaN(e) {\n\t\tworst = e\n\t}\n\tif worst > tol { t.Fail() }", 1},
		{"worst by math.Max", "var worst float64\n\tworst = math.Max(worst, math.Abs(got))\n\tif worst > tol { t.Fail() }", 1},
		{"own distance function", `if diff(got, want) > tol { t.Fail() }`, 1},
		{"own function through a variable", `if e := relative(got, want); e > tol { t.Fail() }`, 1},
		{"negated at most", `if !(math.Abs(got-want) <= tol) { t.Fail() }`, 0},
		{"negated range", `if !(math.Abs(got) >= a && math.Abs(got) <= b) { t.Fail() }`, 0},
		{"negated twice", `if !(!(math.Abs(got) > tol)) { t.Fail() }`, 1},
		{"below", `if math.Abs(got-want) < tol { return }`, 0},
		{"asks IsNaN", `if d := math.Abs(got - want); d > tol || math.IsNaN(d) { t.Fail() }`, 0},
		{"IsNaN in the body only", "if math.Abs(got-want) > tol { _ = math.IsNaN(got) }", 1},
		{"no distance", `if got > tol { t.Fail() }`, 0},
		{"a function that is no distance", `if plain(got) > tol { t.Fail() }`, 0},
	} {
		src := "package p\nimport \"math\"\nfunc f(t T, got, want, a, b, tol, scale float64) bool {\n\t" + c.body + "\n\treturn false\n}\n"
		helpers := "package p\nimport \"math\"\nfunc diff(a, b float64) float64 { return math.Abs(a - b) }\n" +
			"func relative(a, b float64) float64 { d := diff(a, b); return d / b }\nfunc plain(a float64) float64 { return a + 1 }\n"
		errs, err := nanBlindErrors(map[string][]byte{"case.go": []byte(src), "helpers.go": []byte(helpers)})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(errs) != c.flagged {
			t.Errorf("%s: flagged %d (%q), want %d", c.name, len(errs), errs, c.flagged)
		}
	}
}
