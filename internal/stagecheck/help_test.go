package stagecheck

import (
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// required is every flag that a stage or command refuses to run without, by its own
// checks or urfave/cli's Required, with the condition its help states ("" for always).
// The help must mark exactly these, and each one's absence must be refused naming it.
var required = map[string]map[string]string{
	"sample":              {},
	"sample generate":     {"data": "", "split": "", "output": ""},
	"sample import-betae": {"pickle": "", "data": "", "split": "", "output": ""},
	"sample merge":        {"output": ""},
	"sample stats":        {},
	"sample synth":        {"entities": "", "relations": "", "edges": "", "output": ""},
	"train":               {"train": "", "checkpoint": ""},
	"train import-qecone": {"from": "", "output": ""},
	"embed":               {"checkpoint": "", "queries": "", "output": ""},
	"embed export":        {"checkpoint": "unless --cones", "cones": "unless --checkpoint", "format": "", "output": ""},
	"rank": {"checkpoint": "", "queries": "unless --ask or --ask-file", "output": "unless --ask or --ask-file",
		"data": "with --ask or --ask-file"},
	"metrics":          {},
	"metrics curves":   {},
	"metrics results":  {},
	"metrics patterns": {"checkpoint": ""},
}

// condition are the flags that make a "with" condition hold, to test the flag it requires.
var condition = map[string][]string{
	"with --ask or --ask-file": {"--ask", "(a,(b,))"},
}

// dummy is a value that gets a flag past the checks before the required flags' (any
// value does for the others: nothing is read before they are checked).
var dummy = map[string]string{"format": "npy", "split": "train"}

// helpFlag is one flag's entry in a help page.
type helpFlag struct {
	names []string // without dashes: "output", "o"
	line  string
	note  string // the trailing "(required ...)" note's text, or ""
}

// helpPage is the parts of a help page the test checks.
type helpPage struct {
	text     string
	sections []string   // the headings, e.g. "USAGE", "COMMANDS", "OPTIONS"
	commands [][]string // the COMMANDS section's entries, each with its aliases
	flags    []helpFlag
}

var (
	headingRe  = regexp.MustCompile(`^([A-Z][A-Z ]*):$`)
	entryRe    = regexp.MustCompile(`^   (\S.*?)(?:\s{2,}(.*))?$`)
	requiredRe = regexp.MustCompile(`\((required(?: [^()]*)?)\)$`)
	defaultRe  = regexp.MustCompile(`(?i)\bdefaults?\b`)
	// valueRe finds urfave/cli's placeholder for a flag whose usage names none.
	valueRe = regexp.MustCompile(`(^|, )-{1,2}[a-z0-9-]+ value(,|  |$)`)
)

func parseHelp(text string) helpPage {
	p := helpPage{text: text}
	section := ""
	for _, line := range strings.Split(text, "\n") {
		if m := headingRe.FindStringSubmatch(line); m != nil {
			section = m[1]
			p.sections = append(p.sections, section)
			continue
		}
		m := entryRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		switch {
		case section == "COMMANDS":
			p.commands = append(p.commands, strings.Split(m[1], ", "))
		case strings.HasSuffix(section, "OPTIONS") && strings.HasPrefix(m[1], "-"):
			f := helpFlag{line: line}
			for _, part := range strings.Split(m[1], ", ") {
				f.names = append(f.names, strings.TrimLeft(strings.Fields(part)[0], "-"))
			}
			if n := requiredRe.FindStringSubmatch(m[2]); n != nil {
				f.note = n[1]
			}
			p.flags = append(p.flags, f)
		}
	}
	return p
}

// TestHelp reads the help of every stage and of every command below it, asked both ways
// (STAGE CMD --help and STAGE help CMD), and checks that
//
//   - a page has a COMMANDS section only where there are commands other than help, and a
//     stage without commands says "OPTIONS", not "GLOBAL OPTIONS";
//   - every flag that takes a value names it (`N`, `FILE`), not urfave/cli's "value";
//   - no flag's entry states a default twice (its usage in words and urfave/cli's
//     "(default: ...)"), nor "(default: false)" for a switch;
//   - the flags marked required are those of the table required, with its conditions,
//     and each is: the command without it (the other required flags given) fails,
//     naming it.
func TestHelp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the stages")
	}
	bin := binaries(t)
	work := t.TempDir()
	seen := map[string]bool{}
	var visit func(path []string, page helpPage)
	visit = func(path []string, page helpPage) {
		name := strings.Join(path, " ")
		seen[name] = true
		checkPage(t, name+" --help", page)
		checkRequired(t, bin, work, path, page)
		for _, c := range page.commands {
			if c[0] == "help" {
				continue
			}
			sub := append(slices.Clone(path), c[0])
			_, a, _ := run(t, work, filepath.Join(bin, path[0]), append(slices.Clone(path[1:]), c[0], "--help")...)
			pa := parseHelp(a)
			visit(sub, pa)
			// The same page through the help command.
			_, b, _ := run(t, work, filepath.Join(bin, path[0]), append(append(slices.Clone(path[1:]), "help"), c[0])...)
			checkPage(t, strings.Join(append(append(slices.Clone(path), "help"), c[0]), " "), parseHelp(b))
		}
	}
	for _, s := range stages {
		code, out, errOut := run(t, work, filepath.Join(bin, s), "--help")
		if code != 0 || errOut != "" {
			t.Fatalf("%s --help: exit %d, stderr %q", s, code, errOut)
		}
		visit([]string{s}, parseHelp(out))
	}
	for name := range required {
		if !seen[name] {
			t.Errorf("%s: in the table, not in any help: a command renamed or gone?", name)
		}
	}
	for name := range seen {
		if _, ok := required[name]; !ok {
			t.Errorf("%s: a command the table of required flags does not list: add it", name)
		}
	}
}

// checkPage checks one help page; asked names the command line that printed it.
func checkPage(t *testing.T, asked string, p helpPage) {
	t.Helper()
	if len(p.flags) == 0 || !slices.Contains(p.sections, "USAGE") {
		t.Errorf("%s: no USAGE or no flags found in\n%s", asked, p.text)
		return
	}
	hasCommands := slices.Contains(p.sections, "COMMANDS")
	listed := 0
	for _, c := range p.commands {
		if c[0] != "help" {
			listed++
		}
	}
	if hasCommands && listed == 0 {
		t.Errorf("%s: a COMMANDS section without commands:\n%s", asked, p.text)
	}
	if !hasCommands && (slices.Contains(p.sections, "GLOBAL OPTIONS") || strings.Contains(p.text, "[global options]")) {
		t.Errorf("%s: global options without commands:\n%s", asked, p.text)
	}
	for _, f := range p.flags {
		if valueRe.MatchString(strings.TrimSpace(f.line)) {
			t.Errorf("%s: --%s shows the placeholder \"value\": name what it takes in its usage (`N`, `FILE`, ...): %q", asked, f.names[0], strings.TrimSpace(f.line))
		}
		if n := len(defaultRe.FindAllString(f.line, -1)); n > 1 {
			t.Errorf("%s: --%s states its default %d times: %q", asked, f.names[0], n, strings.TrimSpace(f.line))
		}
		if strings.Contains(f.line, "(default: false)") || strings.Contains(f.line, `(default: "")`) {
			t.Errorf("%s: --%s prints a default that says nothing (a switch is off unless given): %q", asked, f.names[0], strings.TrimSpace(f.line))
		}
		if f.note != "" && defaultRe.MatchString(f.line) {
			t.Errorf("%s: --%s is required and has a default: %q", asked, f.names[0], strings.TrimSpace(f.line))
		}
	}
}

// checkRequired compares the flags the page marks required with the table, and runs the
// command without each to see it refused by name.
func checkRequired(t *testing.T, bin, work string, path []string, p helpPage) {
	t.Helper()
	name := strings.Join(path, " ")
	want, ok := required[name]
	if !ok {
		return
	}
	got := map[string]string{}
	for _, f := range p.flags {
		if f.note != "" {
			got[f.names[0]] = strings.TrimSpace(strings.TrimPrefix(f.note, "required"))
		}
	}
	for _, n := range sortedKeys(want) {
		if g, ok := got[n]; !ok {
			t.Errorf("%s --help: --%s is required (%q) but not marked so", name, n, want[n])
		} else if g != want[n] {
			t.Errorf("%s --help: --%s is marked required %q, want %q", name, n, g, want[n])
		}
	}
	for _, n := range sortedKeys(got) {
		if _, ok := want[n]; !ok {
			t.Errorf("%s --help: --%s is marked required (%q), which the table does not have", name, n, got[n])
		}
	}
	for _, n := range sortedKeys(want) {
		args := slices.Clone(path[1:])
		for _, o := range sortedKeys(want) {
			if o != n && want[o] == "" {
				args = append(args, "--"+o, valueFor(o))
			}
		}
		args = append(args, condition[want[n]]...)
		code, _, errOut := run(t, work, filepath.Join(bin, path[0]), args...)
		if code == 0 || !namesFlag(errOut, p.flags, n) {
			t.Errorf("%s %s (without --%s): exit %d, stderr %q: want a refusal naming --%s", path[0], strings.Join(args, " "), n, code, errOut, n)
		}
	}
}

func valueFor(flag string) string {
	if v, ok := dummy[flag]; ok {
		return v
	}
	return "1"
}

// namesFlag reports whether msg names the flag by any of its names: --name, -n or "name".
func namesFlag(msg string, flags []helpFlag, name string) bool {
	for _, f := range flags {
		if f.names[0] != name {
			continue
		}
		for _, n := range f.names {
			dashes := "--"
			if len(n) == 1 {
				dashes = "-"
			}
			if regexp.MustCompile(`(^|[^\w-])`+dashes+regexp.QuoteMeta(n)+`\b`).MatchString(msg) || strings.Contains(msg, `"`+n+`"`) {
				return true
			}
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
