package stagecheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/rocone/rocone/internal/stagetest"
)

// The README's reference of a stage is its section "## Stage N: `stage`": a first fenced
// block, the synopsis, with one command a line (a line that starts with a space goes on
// the one before), and flag tables whose first column is a flag, `--name PLACEHOLDER`.
var (
	stageHeading = regexp.MustCompile("^## Stage [0-9]+: `([a-z]+)`")
	// synopsisFlag is a flag in a synopsis and the placeholder after it, if any: a word
	// that is not a flag, a bracket or the "|" between alternatives; MEASURE[:GROUP] is
	// one placeholder.
	synopsisFlag = regexp.MustCompile(`(?:^|[\s\[|])(--?[a-z][a-z0-9-]*)(?: ([^\s\[\]|-][^\s\[\]]*(?:\[[^\s\[\]]*\])?))?`)
	// tableFlag is a flag table's first cell, `--name PLACEHOLDER`, or a list of bare
	// flags, `--dim`, `--batch`.
	tableFlag = regexp.MustCompile("^\\| (`--?[a-z][a-z0-9-]*(?: [^`]+)?`(?:, `--?[a-z][a-z0-9-]*`)*) \\|")
	// commandWord is a synopsis line's second word when it names a command (merge,
	// import-qecone), not a flag or a placeholder.
	commandWord = regexp.MustCompile(`^[a-z][a-z-]*$`)
)

// readmeCommand is what a stage's README section says of one command.
type readmeCommand struct {
	flags map[string]string // flag (with its dashes) -> placeholder ("" for none)
	lines []string          // the synopsis lines, for messages
}

// readmeStage is a stage's README section: its commands by name ("sample generate",
// "rank") and the flags of its tables with their placeholders.
type readmeStage struct {
	commands map[string]*readmeCommand
	table    map[string]string
}

// parseReadmeStages reads every "## Stage" section of a README. subcommands gives each
// stage's commands, so that "train import-qecone ..." is told from "train --train ...".
func parseReadmeStages(readme string, subcommands map[string][]string) (map[string]*readmeStage, error) {
	out := map[string]*readmeStage{}
	var cur *readmeStage
	var stage string
	inFence, synopsisDone := false, false
	var last *readmeCommand
	for _, line := range strings.Split(readme, "\n") {
		if strings.HasPrefix(line, "## ") {
			cur = nil
			if m := stageHeading.FindStringSubmatch(line); m != nil {
				stage = m[1]
				cur = &readmeStage{commands: map[string]*readmeCommand{}, table: map[string]string{}}
				out[stage] = cur
				synopsisDone = false
			}
			continue
		}
		if cur == nil {
			continue
		}
		if strings.HasPrefix(line, "```") {
			if inFence {
				synopsisDone = true
			}
			inFence = !inFence
			continue
		}
		if inFence && !synopsisDone {
			if strings.TrimSpace(line) == "" {
				continue
			}
			if !strings.HasPrefix(line, " ") {
				words := strings.Fields(line)
				if words[0] != stage {
					return nil, fmt.Errorf("stage %s: a synopsis line of another stage: %q", stage, line)
				}
				name := stage
				if len(words) > 1 && commandWord.MatchString(words[1]) {
					if !slices.Contains(subcommands[stage], words[1]) {
						return nil, fmt.Errorf("stage %s: the synopsis names a command %q that %s --help does not list: %q", stage, words[1], stage, line)
					}
					name += " " + words[1]
				}
				if cur.commands[name] == nil {
					cur.commands[name] = &readmeCommand{flags: map[string]string{}}
				}
				last = cur.commands[name]
			} else if last == nil {
				return nil, fmt.Errorf("stage %s: the synopsis starts with a continuation line: %q", stage, line)
			}
			last.lines = append(last.lines, strings.TrimSpace(line))
			for _, m := range synopsisFlag.FindAllStringSubmatch(line, -1) {
				if p, ok := last.flags[m[1]]; ok && p != m[2] && m[2] != "" && p != "" {
					return nil, fmt.Errorf("%s: --%s with two placeholders, %q and %q", stage, m[1], p, m[2])
				}
				if last.flags[m[1]] == "" {
					last.flags[m[1]] = m[2]
				}
			}
			continue
		}
		if inFence {
			continue
		}
		if m := tableFlag.FindStringSubmatch(line); m != nil {
			for _, cell := range strings.Split(m[1], ", ") {
				flag, placeholder, _ := strings.Cut(strings.Trim(cell, "`"), " ")
				cur.table[flag] = placeholder
			}
		}
	}
	return out, nil
}

// helpPlaceholders returns a help page's flags, each of its names (with dashes) mapped to
// the flag's first name and its placeholder ("" for a switch).
func helpPlaceholders(p helpPage) map[string][2]string {
	out := map[string][2]string{}
	for _, f := range p.flags {
		m := entryRe.FindStringSubmatch(f.line)
		for _, part := range strings.Split(m[1], ", ") {
			name, placeholder, _ := strings.Cut(part, " ")
			out[name] = [2]string{"--" + f.names[0], placeholder}
		}
	}
	return out
}

// placeholderAgrees reports whether the README's placeholder for a flag agrees with the
// help's: a metavariable (one that starts with a capital or a Greek letter: FILE, N, γ)
// is the help's, or the help's followed by its forms (FILE|-, FILE.png|.svg,
// FILE.yaml|.toml); a list of values or an example (cpu|cuda, i/n, 1p,2p,...) stands for
// the help's metavariable and is not compared. A switch takes none.
func placeholderAgrees(readme, help string) bool {
	if readme == "" {
		return true
	}
	if help == "" {
		return false
	}
	r, _ := utf8.DecodeRuneInString(readme)
	if !unicode.IsUpper(r) && r < utf8.RuneSelf {
		return true
	}
	if readme == help {
		return true
	}
	rest, ok := strings.CutPrefix(readme, help)
	return ok && (strings.HasPrefix(rest, "|") || strings.HasPrefix(rest, "."))
}

func TestPlaceholderAgrees(t *testing.T) {
	for _, c := range []struct {
		readme, help string
		want         bool
	}{
		{"", "FILE", true}, {"", "", true}, {"FILE", "FILE", true}, {"FILE|-", "FILE", true},
		{"FILE.png|.svg", "FILE", true}, {"cpu|cuda", "DEVICE", true}, {"i/n", "i/n", true},
		{"1p,2p,...", "TYPES", true}, {"γ", "γ", true}, {"MEASURE[:GROUP]", "MEASURE[:GROUP]", true},
		{"G", "γ", false}, {"L", "λ", false}, {"F", "FRACTION", false}, {"TRAINLOG", "FILE", false},
		{"FILES", "FILE", false}, {"N", "", false}, {"γ", "G", false},
	} {
		if got := placeholderAgrees(c.readme, c.help); got != c.want {
			t.Errorf("placeholderAgrees(%q, %q) = %v, want %v", c.readme, c.help, got, c.want)
		}
	}
}

func TestParseReadmeStages(t *testing.T) {
	readme := "# x\n## Stage 1: `train`\n\n```\ntrain --train FILE|- [--lr RATE] [--resume | --auto-resume]\n" +
		"      [--best-metric MEASURE[:GROUP]] [--keep-best [--best FILE]] [-q]\ntrain import-qecone --from PATH -o FILE\n```\n\n" +
		"| flag | meaning |\n|---|---|\n| `--lr RATE` | x |\n| `--dim`, `--batch` | y |\n\n```\ntrain --not-the-synopsis\n```\n## Other\n| `--x Y` | z |\n"
	stages, err := parseReadmeStages(readme, map[string][]string{"train": {"import-qecone"}})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(stages["train"].commands["train"].flags, stages["train"].commands["train import-qecone"].flags, stages["train"].table, len(stages))
	want := `map[--auto-resume: --best:FILE --best-metric:MEASURE[:GROUP] --keep-best: --lr:RATE --resume: --train:FILE|- -q:] ` +
		`map[--from:PATH -o:FILE] map[--batch: --dim: --lr:RATE] 1`
	if got != want {
		t.Errorf("parsed\n%s\nwant\n%s", got, want)
	}
	for _, bad := range []string{
		"## Stage 1: `train`\n```\ntrain import-x --y\n```\n",
		"## Stage 1: `train`\n```\nrank --y\n```\n",
		"## Stage 1: `train`\n```\n   --y\n```\n",
	} {
		if _, err := parseReadmeStages(bad, map[string][]string{"train": {"import-qecone"}}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestReadmeSynopses compares each stage's README section with its binaries' help: every
// command the help lists has a synopsis line; every flag of a command's help is in its
// synopsis, and every flag of a synopsis in its command's help; a placeholder the README
// gives (synopsis or a flag table's first column) agrees with the help's (placeholderAgrees);
// every flag a table lists is one of the stage's. So a flag added, renamed or given another
// placeholder in a stage's code shows up here until the README follows.
func TestReadmeSynopses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the stages")
	}
	readme, err := os.ReadFile(filepath.Join(stagetest.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	bin := binaries(t)
	work := t.TempDir()
	helps := map[string]map[string][2]string{} // command -> its help's flags
	subcommands := map[string][]string{}
	for _, s := range stages {
		code, out, errOut := run(t, work, filepath.Join(bin, s), "--help")
		if code != 0 {
			t.Fatalf("%s --help: exit %d, %s", s, code, errOut)
		}
		page := parseHelp(out)
		helps[s] = helpPlaceholders(page)
		for _, c := range page.commands {
			if c[0] == "help" {
				continue
			}
			subcommands[s] = append(subcommands[s], c[0])
			code, out, errOut := run(t, work, filepath.Join(bin, s), c[0], "--help")
			if code != 0 {
				t.Fatalf("%s %s --help: exit %d, %s", s, c[0], code, errOut)
			}
			helps[s+" "+c[0]] = helpPlaceholders(parseHelp(out))
		}
	}
	sections, err := parseReadmeStages(string(readme), subcommands)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	for _, s := range stages {
		sec := sections[s]
		if sec == nil {
			t.Errorf("README.md has no section \"## Stage N: `%s`\"", s)
			continue
		}
		for _, name := range append([]string{s}, prefixed(s, subcommands[s])...) {
			help := helps[name]
			rc := sec.commands[name]
			if rc == nil {
				if name != s || ownFlags(help) {
					t.Errorf("README.md, stage %s: no synopsis line for %s", s, name)
				}
				continue
			}
			for flag, p := range rc.flags {
				h, ok := help[flag]
				if !ok {
					t.Errorf("README.md: %s's synopsis has %s, which %s --help does not: %q", name, flag, name, rc.lines)
					continue
				}
				if !placeholderAgrees(p, h[1]) {
					t.Errorf("README.md: %s's synopsis writes %s %s, its help %s %s", name, flag, p, flag, h[1])
				}
			}
			for flag, h := range help {
				if flag != h[0] || flag == "--help" || flag == "--version" {
					continue // an alias; or what every stage has
				}
				found := false
				for alias, a := range help {
					if a[0] == flag {
						_, in := rc.flags[alias]
						found = found || in
					}
				}
				if !found {
					t.Errorf("README.md: %s --help has %s, which its synopsis in the README lacks: %q", name, flag, rc.lines)
				}
			}
		}
		for flag, p := range sec.table {
			known, agrees := false, false
			for name, help := range helps {
				if name != s && !strings.HasPrefix(name, s+" ") {
					continue
				}
				if h, ok := help[flag]; ok {
					known = true
					agrees = agrees || placeholderAgrees(p, h[1])
				}
			}
			if !known {
				t.Errorf("README.md, stage %s: a flag table lists %s, which no %s command has", s, flag, s)
			} else if !agrees {
				t.Errorf("README.md, stage %s: a flag table writes %s %s, which no %s command's help agrees with", s, flag, p, s)
			}
		}
	}
}

// ownFlags reports whether a help page has flags other than --help and --version: a stage
// that is only its commands (sample) needs no synopsis line of its own.
func ownFlags(help map[string][2]string) bool {
	for _, h := range help {
		if h[0] != "--help" && h[0] != "--version" {
			return true
		}
	}
	return false
}

func prefixed(stage string, commands []string) []string {
	out := make([]string, len(commands))
	for i, c := range commands {
		out[i] = stage + " " + c
	}
	return out
}
