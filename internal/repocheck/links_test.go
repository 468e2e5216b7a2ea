package repocheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/rocone/rocone/internal/stagetest"
)

// mdLink is an inline Markdown link or image: [text](target) or ![alt](target), the target
// without a title.
var mdLink = regexp.MustCompile(`\]\(([^()\s]+)\)`)

// inlineCode is a code span; links inside one are text.
var inlineCode = regexp.MustCompile("`[^`]*`")

// mdHeading is an ATX heading: "## Stage 1: `sample`".
var mdHeading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// headingLink is a link inside a heading: its text counts towards the anchor, its target
// does not.
var headingLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// slug is GitHub's anchor for a heading's text: lower case, every character but letters,
// digits, spaces, '-' and '_' dropped, spaces made '-'.
func slug(text string) string {
	text = headingLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// proseLines calls fn with each line of a Markdown document outside its code fences, and
// its number.
func proseLines(doc []byte, fn func(n int, line string)) {
	inFence := false
	s := newScanner(doc)
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			fn(n, line)
		}
	}
}

// anchors returns the anchors of a Markdown document's headings (outside code fences), a
// repeated one numbered as GitHub numbers it: x, x-1, x-2.
func anchors(doc []byte) map[string]bool {
	out, seen := map[string]bool{}, map[string]int{}
	proseLines(doc, func(_ int, line string) {
		m := mdHeading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		a := slug(m[1])
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	})
	return out
}

// links returns the relative link targets of a Markdown document with their lines: not
// inside code fences or code spans, not URLs.
func links(doc []byte) []finding {
	var out []finding
	proseLines(doc, func(n int, line string) {
		for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, finding{n, target})
		}
	})
	return out
}

func TestAnchorsAndLinks(t *testing.T) {
	doc := []byte("# rocone: queries\n## Stage 1: `sample`\n### queries (`artifact=queries`, `version=1`)\n" +
		"```\n## not a heading\n```\n## Notes\n## Notes\n## See [docs](docs/x.md) §2 — ×10\n" +
		"[a](#notes-1) [b](docs/gpu.md#tf32) `[c](nowhere)` [d](https://example.com/x) ![e](img.png)\n")
	want := []string{"notes", "notes-1", "queries-artifactqueries-version1", "rocone-queries", "see-docs-2--10", "stage-1-sample"}
	var got []string
	for a := range anchors(doc) {
		got = append(got, a)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("anchors: %q, want %q", got, want)
	}
	if got, want := fmt.Sprint(links(doc)), "[{9 docs/x.md} {10 #notes-1} {10 docs/gpu.md#tf32} {10 img.png}]"; got != want {
		t.Errorf("links: %s, want %s", got, want)
	}
}

// TestMarkdownLinks checks every relative link in the repository's Markdown files: the
// file it names exists, and a #fragment names a heading of the Markdown file it points
// into (the same file for a bare #fragment), so that renaming a heading or moving a file
// cannot leave a dead link behind.
func TestMarkdownLinks(t *testing.T) {
	root := stagetest.RepoRoot(t)
	docs := map[string]map[string]bool{}
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := docs[rel]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		docs[rel] = anchors(b)
		return docs[rel], nil
	}
	n := 0
	for _, f := range repoFiles(t, root) {
		f = filepath.ToSlash(f)
		if !checked(f) || path.Ext(f) != ".md" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(b) {
			n++
			target, frag, _ := strings.Cut(l.text, "#")
			rel := f
			if target != "" {
				rel = path.Clean(path.Join(path.Dir(f), target))
				if strings.HasPrefix(rel, "../") {
					t.Errorf("%s:%d links outside the repository: %s", f, l.line, l.text)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
					t.Errorf("%s:%d links to %s, which does not exist", f, l.line, l.text)
					continue
				}
			}
			if frag == "" || path.Ext(rel) != ".md" {
				continue
			}
			a, err := anchorsOf(rel)
			if err != nil {
				t.Errorf("%s:%d: %v", f, l.line, err)
				continue
			}
			if !a[frag] {
				t.Errorf("%s:%d links to %s, but %s has no heading with the anchor #%s", f, l.line, l.text, rel, frag)
			}
		}
	}
	if n < 50 {
		t.Fatalf("found only %d relative links in the Markdown files under %s; the scan is broken", n, root)
	}
}
