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
	fset     *token.FileSet
	files    map[string]*ast.File
	srcs     map[string][]byte
	declared map[varKey]bool // every variable, by the scope that declares it
	vars     map[varKey]bool // the variables set from a distance
	funcs    map[string]bool // the package's functions that return a distance
}

// varKey names a variable: its scope's position (a function, or the if, for, range or
// switch statement whose init declares it; 0 for the package) and its name. Blocks are
// not told apart from their function: a variable that shadows another of the same name in
// an inner block is taken for it, which can only add a check to the list.
type varKey struct {
	scope token.Pos
	name  string
}

var distanceCalls = [][2]string{{"math", "Abs"}, {"math", "Sqrt"}, {"math", "Max"}, {"math", "Hypot"}}

// nanBlindErrors parses one package's files (name → source) and lists its NaN-blind
// tolerance checks, "file:line:col: E > tol ...", in file order.
func nanBlindErrors(srcs map[string][]byte) ([]string, error) {
	c := &nanBlind{fset: token.NewFileSet(), files: map[string]*ast.File{}, srcs: srcs,
		declared: map[varKey]bool{}, vars: map[varKey]bool{}, funcs: map[string]bool{}}
	for name, src := range srcs {
		f, err := parser.ParseFile(c.fset, name, src, 0)
		if err != nil {
			return nil, err
		}
		c.files[name] = f
		walk(f, func(n ast.Node, stack []ast.Node) { c.declare(n, stack) })
	}
	for changed := true; changed; {
		changed = false
		for _, f := range c.files {
			walk(f, func(n ast.Node, stack []ast.Node) { changed = c.mark(n, stack) || changed })
		}
	}
	var errs []string
	for _, name := range slices.Sorted(maps.Keys(c.files)) {
		walk(c.files[name], func(n ast.Node, stack []ast.Node) {
			if e := c.check(n, stack, c.srcs[name]); e != "" {
				errs = append(errs, e)
			}
		})
	}
	return errs, nil
}

// walk calls fn for every node under root with the node's ancestors, root first.
func walk(root ast.Node, fn func(n ast.Node, stack []ast.Node)) {
	var stack []ast.Node
	ast.Inspect(root, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		fn(n, stack)
		stack = append(stack, n)
		return true
	})
}

// scopeOf returns the scope a declaration at n (an assignment or a var spec, with its
// ancestors stack) declares into: the statement whose init it is, else the innermost
// function, else the package (0).
func scopeOf(n ast.Node, stack []ast.Node) token.Pos {
	if len(stack) > 0 {
		if p := stack[len(stack)-1]; ast.Node(initOf(p)) == n {
			return p.Pos()
		}
	}
	for i := len(stack) - 1; i >= 0; i-- {
		switch stack[i].(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			return stack[i].Pos()
		}
	}
	return 0
}

// initOf returns the init statement of an if, for or switch statement, else nil.
func initOf(n ast.Node) ast.Stmt {
	switch n := n.(type) {
	case *ast.IfStmt:
		return n.Init
	case *ast.ForStmt:
		return n.Init
	case *ast.SwitchStmt:
		return n.Init
	case *ast.TypeSwitchStmt:
		return n.Init
	}
	return nil
}

// declare records the variables n declares: := and var, range's key and value, and a
// function's parameters and results (which shadow, and are never distances themselves).
func (c *nanBlind) declare(n ast.Node, stack []ast.Node) {
	add := func(scope token.Pos, ids ...*ast.Ident) {
		for _, id := range ids {
			c.declared[varKey{scope, id.Name}] = true
		}
	}
	switch n := n.(type) {
	case *ast.AssignStmt:
		if n.Tok == token.DEFINE {
			for _, l := range n.Lhs {
				if id, ok := l.(*ast.Ident); ok {
					add(scopeOf(n, stack), id)
				}
			}
		}
	case *ast.ValueSpec:
		add(scopeOf(n, stack[:len(stack)-1]), n.Names...) // stack's top is the GenDecl
	case *ast.RangeStmt:
		if n.Tok == token.DEFINE {
			for _, e := range []ast.Expr{n.Key, n.Value} {
				if id, ok := e.(*ast.Ident); ok {
					add(n.Pos(), id)
				}
			}
		}
	case *ast.FuncDecl, *ast.FuncLit:
		var ft *ast.FuncType
		if d, ok := n.(*ast.FuncDecl); ok {
			ft = d.Type
		} else {
			ft = n.(*ast.FuncLit).Type
		}
		for _, fl := range []*ast.FieldList{ft.Params, ft.Results} {
			if fl != nil {
				for _, f := range fl.List {
					add(n.Pos(), f.Names...)
				}
			}
		}
	}
}

// lookup returns the key of the variable name means where stack ends: the innermost
// scope on the stack that declares it, else the package's.
func (c *nanBlind) lookup(name string, stack []ast.Node) varKey {
	for i := len(stack) - 1; i >= 0; i-- { // a node that starts where a scope does names it too
		if k := (varKey{stack[i].Pos(), name}); c.declared[k] {
			return k
		}
	}
	return varKey{0, name}
}

// mark marks what n makes a distance: the variables an assignment or a declaration sets
// from one, a function that returns one. It reports whether it marked a new one.
func (c *nanBlind) mark(n ast.Node, stack []ast.Node) bool {
	changed := false
	set := func(lhs []ast.Expr, rhs []ast.Expr) {
		for i, l := range lhs {
			id, ok := l.(*ast.Ident)
			if !ok || id.Name == "_" {
				continue
			}
			r := rhs[0]
			if len(rhs) == len(lhs) {
				r = rhs[i]
			}
			if k := c.lookup(id.Name, append(stack[:len(stack):len(stack)], n)); !c.vars[k] && c.isDistance(r, stack) {
				c.vars[k], changed = true, true
			}
		}
	}
	switch n := n.(type) {
	case *ast.AssignStmt:
		set(n.Lhs, n.Rhs)
	case *ast.ValueSpec:
		if len(n.Values) > 0 {
			lhs := make([]ast.Expr, len(n.Names))
			for i, id := range n.Names {
				lhs[i] = id
			}
			set(lhs, n.Values)
		}
	case *ast.ReturnStmt:
		for i := len(stack) - 1; i >= 0; i-- {
			if _, ok := stack[i].(*ast.FuncLit); ok {
				break // a closure's return is not its function's
			}
			if d, ok := stack[i].(*ast.FuncDecl); ok {
				if d.Recv == nil && !c.funcs[d.Name.Name] && len(n.Results) > 0 && c.isDistance(n.Results[0], stack) {
					c.funcs[d.Name.Name], changed = true, true
				}
				break
			}
		}
	}
	return changed
}

// isDistance reports whether e, whose ancestors are stack, holds a distance (see
// nanBlind).
func (c *nanBlind) isDistance(e ast.Expr, stack []ast.Node) bool {
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
			return c.vars[c.lookup(m.Name, stack)]
		}
		return false
	})
}

// check returns the error for n, with its ancestors stack, if it is a NaN-blind
// comparison, else "".
func (c *nanBlind) check(n ast.Node, stack []ast.Node, src []byte) string {
	b, ok := n.(*ast.BinaryExpr)
	if !ok || (b.Op != token.GTR && b.Op != token.GEQ) || !c.isDistance(b.X, stack) {
		return ""
	}
	full := append(stack[:len(stack):len(stack)], n)
	if asksIsNaN(enclosingTest(full)) || negated(full) {
		return ""
	}
	from, to := c.fset.Position(b.Pos()), c.fset.Position(b.End())
	return fmt.Sprintf("%s: %s lets a NaN pass: write !(x <= tol), or ask math.IsNaN too", from, src[from.Offset:to.Offset])
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
		{"an int shadowing a distance", "d := math.Abs(got - want)\n\t_ = d\n\tif d := int(a); d > 3 { t.Fail() }", 0},
		{"a closure's own variable", "d := math.Abs(got - want)\n\t_ = d\n\tg := func(d int) bool { return d > 3 }\n\t_ = g", 0},
		{"a distance from the enclosing function", "d := math.Abs(got - want)\n\tg := func() bool { return d > tol }\n\t_ = g", 1},
		{"a range variable shadowing a distance", "d := math.Abs(got - want)\n\t_ = d\n\tfor _, d := range []int{1} { _ = d > 3 }", 0},
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
