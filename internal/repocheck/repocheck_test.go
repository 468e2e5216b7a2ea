package repocheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/stagetest"
)

// outsidePointers are the strings that point at material outside the repository: the
// specifications and reference code a developer may keep beside the checkout. They are
// built by concatenation so that this file, which is checked too, does not contain them.
var outsidePointers = []string{
	"../" + "shared",
	"shared" + "/spec",
	"shared" + "/reference",
	"../" + "spec/",
}

// checkedExt are the kinds of file a user reads or runs: documents, code and its
// comments, scripts, kernels, makefiles.
var checkedExt = []string{".md", ".go", ".sh", ".py", ".cu", ".h", ".mk", ".s"}

func checked(path string) bool {
	for _, part := range strings.Split(filepath.ToSlash(path), "/") {
		// testdata holds fixtures (including the reference's own outputs), node_modules
		// third-party code; out and bin are build and run outputs.
		if part == "testdata" || part == "node_modules" || part == ".git" {
			return false
		}
	}
	if strings.HasPrefix(filepath.ToSlash(path), "out/") || strings.HasPrefix(filepath.ToSlash(path), "bin/") {
		return false
	}
	base := filepath.Base(path)
	return base == "Makefile" || slices.Contains(checkedExt, filepath.Ext(base))
}

// repoFiles lists the repository's files, relative to root: git's tracked files where
// root is a git work tree, else every file under root (a source archive), so the check
// readRepoFile is the file at rel (slash-separated, from the repository's root).
func readRepoFile(t *testing.T, root, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// never silently covers nothing.
func repoFiles(t *testing.T, root string) []string {
	t.Helper()
	if _, err := exec.LookPath("git"); err == nil {
		cmd := exec.Command("git", "ls-files", "-z")
		cmd.Dir = root
		if out, err := cmd.Output(); err == nil && len(out) > 0 {
			var files []string
			for _, f := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
				files = append(files, string(f))
			}
			return files
		}
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// finding is one offending line.
type finding struct {
	line int
	text string
}

// scanPointers returns the lines of r that mention any of outsidePointers.
func scanPointers(r *bufio.Scanner) []finding {
	var out []finding
	for n := 1; r.Scan(); n++ {
		line := r.Text()
		for _, p := range outsidePointers {
			if strings.Contains(line, p) {
				out = append(out, finding{n, strings.TrimSpace(line)})
				break
			}
		}
	}
	return out
}

func newScanner(b []byte) *bufio.Scanner {
	s := bufio.NewScanner(bytes.NewReader(b))
	s.Buffer(make([]byte, 1<<20), 1<<24)
	return s
}

func TestScanPointers(t *testing.T) {
	tests := []struct {
		text string
		want []int
	}{
		{"see ../" + "shared" + "/spec/model.md §3", []int{1}},
		{"ok\n# default ../" + "shared" + "/reference/QE-ConE", []int{2}},
		{"a\nfollowing shared" + "/spec/queries.md section 5", []int{2}},
		{"See ../" + "spec/queries.md, section 3.", []int{1}},
		{"the cone distance of docs/model.md §7", nil},
		{"__shared__ memory; a shared count; shared parts", nil},
		{"one\ntwo\nthree", nil},
	}
	for _, tc := range tests {
		var got []int
		for _, f := range scanPointers(newScanner([]byte(tc.text))) {
			got = append(got, f.line)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: lines %v, want %v", tc.text, got, tc.want)
		}
	}
}

// TestSelfContained fails if a document, comment, help string or script of the repository
// points at files outside it: the repository must stand alone, with what matters written
// into docs/.
func TestSelfContained(t *testing.T) {
	root := stagetest.RepoRoot(t)
	n := 0
	for _, f := range repoFiles(t, root) {
		if !checked(f) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue // tracked but deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		for _, hit := range scanPointers(newScanner(b)) {
			t.Errorf("%s:%d points outside the repository: %s", f, hit.line, hit.text)
		}
	}
	if n < 100 {
		t.Fatalf("checked only %d files under %s; the file listing is broken", n, root)
	}
}

// citation is a reference to a section of a specification in docs/.
var citation = regexp.MustCompile(`docs/(\w+)\.md((?:[ ,–-]*§\d+(?:\.\d+)*)+)`)

var sectionNumber = regexp.MustCompile(`§(\d+(?:\.\d+)*)`)

// heading is a numbered section heading: "## 5. Evaluation", "### 3.2 The three variants".
var heading = regexp.MustCompile(`^#{1,6} (\d+(?:\.\d+)*)\.? `)

// sections returns the numbered sections of a Markdown document.
func sections(b []byte) map[string]bool {
	out := map[string]bool{}
	proseLines(b, func(_ int, line string) {
		if m := heading.FindStringSubmatch(line); m != nil {
			out[m[1]] = true
		}
	})
	return out
}

// citations returns every (document, section) a text cites, as "name §n".
func citations(text string) []string {
	var out []string
	for _, m := range citation.FindAllStringSubmatch(text, -1) {
		for _, s := range sectionNumber.FindAllStringSubmatch(m[2], -1) {
			out = append(out, fmt.Sprintf("%s §%s", m[1], s[1]))
		}
	}
	return out
}

func TestCitations(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"(docs/model.md §3.2, Trunc)", []string{"model §3.2"}},
		{"(docs/model.md §7, §6, §9): logits", []string{"model §7", "model §6", "model §9"}},
		{"loop (docs/training.md §1–§3).", []string{"training §1", "training §3"}},
		{"[docs/queries.md §5](docs/queries.md): 1 +", []string{"queries §5"}},
		{"docs/queries.md §5, step 4", []string{"queries §5"}},
		{"see docs/parity.md for the fixtures", nil},
	}
	for _, tc := range tests {
		if got := citations(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.text, got, tc.want)
		}
	}
	secs := sections([]byte("# Title\n\n## 1. One\n### 1.2 Sub\n```\n## 9. not a heading\n```\n## 2. Two\n"))
	if got := fmt.Sprint(secs); got != "map[1:true 1.2:true 2:true]" {
		t.Errorf("sections: %s", got)
	}
}

// TestSectionCitations checks that every "docs/X.md §n" in the repository's files names a
// numbered section that docs/X.md has, so that renumbering a specification cannot leave
// the doc comments that cite it pointing at the wrong text.
func TestSectionCitations(t *testing.T) {
	root := stagetest.RepoRoot(t)
	docs := map[string]map[string]bool{}
	n := 0
	for _, f := range repoFiles(t, root) {
		if !checked(f) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range citations(string(b)) {
			name, sec, _ := strings.Cut(c, " §")
			secs, ok := docs[name]
			if !ok {
				doc, err := os.ReadFile(filepath.Join(root, "docs", name+".md"))
				if err != nil {
					t.Errorf("%s cites %s: %v", f, c, err)
					docs[name] = nil
					continue
				}
				secs = sections(doc)
				docs[name] = secs
			}
			if secs == nil {
				continue
			}
			n++
			if !secs[sec] {
				t.Errorf("%s cites docs/%s.md §%s, which has no such section", f, name, sec)
			}
		}
	}
	if n < 50 {
		t.Fatalf("found only %d section citations; the scan is broken", n)
	}
}
