package stagecheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocone/rocone/internal/stagebuild"
	"github.com/rocone/rocone/internal/stagetest"
	"github.com/rocone/rocone/pkg/artifact"
)

// The README's tour lies between these markers; its commands are the ```sh blocks there,
// and a ```text block after one shows what that block's last command prints.
const (
	tourStart = "<!-- tour -->"
	tourEnd   = "<!-- /tour -->"
)

// step is one command of the tour, with the output the README shows for it, if any.
type step struct {
	line  string   // the command as written (continuation lines joined)
	words []string // its words, as the shell splits them
	shown string   // the ```text block after it, or ""
}

// tourSteps extracts the tour's commands from a README.
func tourSteps(readme string) ([]step, error) {
	a, b := strings.Index(readme, tourStart), strings.Index(readme, tourEnd)
	if a < 0 || b < a || strings.Count(readme, tourStart) != 1 || strings.Count(readme, tourEnd) != 1 {
		return nil, fmt.Errorf("want one %s ... %s section", tourStart, tourEnd)
	}
	var steps []step
	lines := strings.Split(readme[a+len(tourStart):b], "\n")
	for i := 0; i < len(lines); i++ {
		fence := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(fence, "```") {
			continue
		}
		lang := strings.TrimPrefix(fence, "```")
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("a ```%s block is not closed", lang)
		}
		switch lang {
		case "sh":
			cmd := ""
			for _, l := range body {
				if strings.HasSuffix(l, "\\") {
					cmd += strings.TrimSuffix(l, "\\")
					continue
				}
				cmd = strings.TrimSpace(cmd + l)
				if cmd != "" && !strings.HasPrefix(cmd, "#") {
					words, err := shellWords(cmd)
					if err != nil {
						return nil, fmt.Errorf("%q: %v", cmd, err)
					}
					steps = append(steps, step{line: cmd, words: words})
				}
				cmd = ""
			}
			if cmd != "" {
				return nil, fmt.Errorf("a ```sh block ends in a continuation: %q", cmd)
			}
		case "text":
			if len(steps) == 0 || steps[len(steps)-1].shown != "" {
				return nil, fmt.Errorf("a ```text block that follows no command: %q", strings.Join(body, "\n"))
			}
			steps[len(steps)-1].shown = strings.Join(body, "\n")
		default:
			return nil, fmt.Errorf("a ```%s block: the tour has ```sh commands and ```text outputs", lang)
		}
	}
	return steps, nil
}

// shellWords splits a command line as the shell does for the plain words, single and
// double quotes and backslashes the tour uses (no expansions).
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
			continue
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unclosed '")
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return nil, errors.New(`unclosed "`)
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
		case strings.IndexByte("$`|&;<>*?", c) >= 0:
			return nil, fmt.Errorf("%q: the tour's test reads plain commands only", c)
		default:
			w.WriteByte(c)
		}
		inWord = true
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

func TestTourSteps(t *testing.T) {
	readme := "intro\n```sh\nnot in the tour\n```\n" + tourStart + "\ntext\n```sh\nmkdir -p out\n# a comment\n\nbin/a --x 'y z' \\\n    -o \"f g\"\n```\n\n```text\nout 1\nout 2\n```\n" + tourEnd
	steps, err := tourSteps(readme)
	if err != nil {
		t.Fatal(err)
	}
	want := []step{
		{line: "mkdir -p out", words: []string{"mkdir", "-p", "out"}},
		{line: `bin/a --x 'y z'     -o "f g"`, words: []string{"bin/a", "--x", "y z", "-o", "f g"}, shown: "out 1\nout 2"},
	}
	if len(steps) != len(want) {
		t.Fatalf("got %d steps %q, want %d", len(steps), steps, len(want))
	}
	for i := range want {
		if steps[i].line != want[i].line || !slices.Equal(steps[i].words, want[i].words) || steps[i].shown != want[i].shown {
			t.Errorf("step %d: got %+v, want %+v", i, steps[i], want[i])
		}
	}
	for _, bad := range []string{
		"no markers",
		tourStart + "\n```sh\nbin/a \\\n```\n" + tourEnd,
		tourStart + "\n```text\nout\n```\n" + tourEnd,
		tourStart + "\n```sh\nbin/a\n```\n```text\no\n```\n```text\no\n```\n" + tourEnd,
		tourStart + "\n```sh\nbin/a $HOME\n```\n" + tourEnd,
		tourStart + "\n```python\nx\n```\n" + tourEnd,
		tourStart + "\n```sh\nbin/a\n" + tourEnd,
		tourStart + tourStart + tourEnd,
	} {
		if _, err := tourSteps(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestTour runs the README's tour as written: each command in turn, through bash, in a
// fresh folder where bin/ holds the stages built from this checkout and data/ is the
// repository's; python3 is one that has NumPy (the tour's reader of the export; without
// one, its step is skipped and said). Every command must exit 0, and what the README says
// of its outputs must hold: check lists them by command.
func TestTour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the stages and trains a model (about 30 s)")
	}
	root := stagetest.RepoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := tourSteps(string(readme))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	bin := binaries(t)
	work := t.TempDir()
	for _, link := range [][2]string{{bin, "bin"}, {filepath.Join(root, "data"), "data"}} {
		if err := os.Symlink(link[0], filepath.Join(work, link[1])); err != nil {
			t.Fatal(err)
		}
	}
	path := os.Getenv("PATH")
	py, pyErr := pythonWithNumPy()
	if pyErr == nil {
		shim := t.TempDir()
		if err := os.Symlink(py, filepath.Join(shim, "python3")); err != nil {
			t.Fatal(err)
		}
		path = shim + string(os.PathListSeparator) + path
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("the tour's commands are run by bash, which is not on PATH")
	}
	// A step's bound: the tour's training takes 20 s here, 140 s race-built (make test-race).
	stepTimeout := 5 * time.Minute
	if stagebuild.Race {
		stepTimeout = 20 * time.Minute
	}
	for _, s := range steps {
		if s.words[0] == "python3" && pyErr != nil {
			t.Logf("skipped (%v): %s", pyErr, s.line)
			continue
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
		cmd := exec.CommandContext(ctx, bash, "-c", s.line)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+path)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", s.line, err, stdout.String(), stderr.String())
		}
		t.Logf("%.1fs: %s", time.Since(start).Seconds(), s.line)
		if !check(t, work, s, stdout.String()) && s.shown != "" {
			t.Errorf("the README shows what %q prints, and TestTour does not compare it: put the output after the command that prints it, or check it", s.line)
		}
	}
}

// pythonWithNumPy returns a python3 that imports numpy: the one on PATH, else the
// system's (a pyenv or virtualenv python3 may lack it).
func pythonWithNumPy() (string, error) {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		if exec.Command(path, "-c", "import numpy").Run() == nil {
			return path, nil
		}
	}
	return "", errors.New("no python3 with numpy (Debian: apt-get install python3-numpy)")
}

// flagValue returns the value of a flag given as --name V or -n V, or "".
func flagValue(words []string, names ...string) string {
	for i := 0; i+1 < len(words); i++ {
		if slices.Contains(names, words[i]) {
			return words[i+1]
		}
	}
	return ""
}

// check is what the README says of each command's outputs; it reports whether it
// compared the output the README shows. A command it does not know fails the test: a new
// step of the tour gets its check here.
func check(t *testing.T, work string, s step, stdout string) (comparedShown bool) {
	t.Helper()
	w := s.words
	at := func(p string) string { return filepath.Join(work, p) }
	sub := ""
	if len(w) > 1 {
		sub = w[1]
	}
	switch {
	case w[0] == "mkdir":
		if _, err := os.Stat(at(w[len(w)-1])); err != nil {
			t.Errorf("%s: %v", s.line, err)
		}
	case w[0] == "bin/sample" && sub == "generate":
		checkSample(t, s, at(flagValue(w, "-o", "--output")))
	case w[0] == "bin/sample" && sub == "stats":
		_, qs, err := artifact.ReadQueries(at(w[len(w)-1]))
		if err != nil {
			t.Fatalf("%s: %v", s.line, err)
		}
		for typ, n := range typeCounts(qs) {
			if !regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(typ) + ` +\| +` + strconv.Itoa(n) + ` \|`).MatchString(stdout) {
				t.Errorf("%s: no row %s with %d queries in\n%s", s.line, typ, n, stdout)
			}
		}
	case w[0] == "bin/train":
		checkTrain(t, s, at(flagValue(w, "--checkpoint")))
	case w[0] == "bin/rank" && flagValue(w, "--ask") != "":
		checkAsk(t, s, stdout)
		return true
	case w[0] == "bin/rank":
		meta, ranks, err := artifact.ReadRanks(at(flagValue(w, "-o", "--output")))
		if err != nil || len(ranks) == 0 || meta.Split != "test" {
			t.Errorf("%s: ranks %s: %d rows, split %q, %v", s.line, flagValue(w, "-o"), len(ranks), meta.Split, err)
		}
	case w[0] == "bin/embed" && sub == "export":
		dir := at(flagValue(w, "-o", "--output"))
		for _, f := range []string{"manifest.json", "entity_axis.npy", "relation_axis.npy", "entities.tsv", "relations.tsv"} {
			if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
				t.Errorf("%s: %s: %v", s.line, f, err)
			}
		}
	case w[0] == "python3":
		if strings.TrimSpace(stdout) != strings.TrimSpace(s.shown) {
			t.Errorf("%s printed\n%s\nthe README shows\n%s", s.line, stdout, s.shown)
		}
		return true
	case w[0] == "bin/metrics" && sub == "curves":
		checkCurves(t, s, stdout, at(flagValue(w, "--plot")))
	case w[0] == "bin/metrics":
		checkMetrics(t, s, stdout)
		return true
	default:
		t.Errorf("the tour runs %q, which TestTour has no check for: add one to check", s.line)
	}
	return false
}

func typeCounts(qs []artifact.Query) map[string]int {
	n := map[string]int{}
	for _, q := range qs {
		n[q.Type]++
	}
	return n
}

// checkSample: the file is a queries file of the split with the types asked for, each
// with as many queries as --count says (and some where it says nothing).
func checkSample(t *testing.T, s step, path string) {
	t.Helper()
	meta, qs, err := artifact.ReadQueries(path)
	if err != nil {
		t.Fatalf("%s: %v", s.line, err)
	}
	if split := flagValue(s.words, "--split"); meta.Split != split {
		t.Errorf("%s: split %q, want %q", s.line, meta.Split, split)
	}
	got := typeCounts(qs)
	want := map[string]int{}
	for _, typ := range strings.Split(flagValue(s.words, "--types"), ",") {
		want[typ] = -1 // some
	}
	for _, c := range strings.Split(flagValue(s.words, "--count"), ",") {
		typ, n, _ := strings.Cut(c, "=")
		want[typ], _ = strconv.Atoi(n)
	}
	for typ, n := range want {
		if got[typ] == 0 || (n >= 0 && got[typ] != n) {
			t.Errorf("%s: %d %s queries, want %d (-1: some)", s.line, got[typ], typ, n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: types %v, want %v", s.line, got, want)
	}
}

// checkTrain: the checkpoint holds --steps steps of the model asked for, and its log
// beside it (model-log.arrow) the training rows and a validation at the last step.
func checkTrain(t *testing.T, s step, ckPath string) {
	t.Helper()
	meta, err := artifact.ReadCheckpointMeta(ckPath)
	if err != nil {
		t.Fatalf("%s: %v", s.line, err)
	}
	steps, _ := strconv.Atoi(flagValue(s.words, "--steps"))
	dim, _ := strconv.Atoi(flagValue(s.words, "--dim"))
	if meta.Step != int64(steps) || meta.Dim != dim || meta.Model != "rocone" {
		t.Errorf("%s: checkpoint of %d steps, d=%d, %s; want %d, %d, rocone", s.line, meta.Step, meta.Dim, meta.Model, steps, dim)
	}
	_, rows, err := artifact.ReadTrainLog(strings.TrimSuffix(ckPath, ".arrow") + "-log.arrow")
	if err != nil {
		t.Fatalf("%s: its log: %v", s.line, err)
	}
	train, lastValid := 0, int64(-1)
	for _, r := range rows {
		switch r.Kind {
		case "train":
			train++
		case "valid":
			lastValid = r.Step
		}
	}
	if train != steps || lastValid != int64(steps-1) {
		t.Errorf("%s: the log has %d train rows and its last validation at step %d; want %d and %d", s.line, train, lastValid, steps, steps-1)
	}
}

// collapse is a line with runs of spaces made one: table columns are as wide as the
// run's values.
func collapse(line string) string { return strings.Join(strings.Fields(line), " ") }

// checkAsk: the README's lines up to the table's header (the query as read, its ids and
// names, its known answers) are printed as shown; then --top rows, numbered, each marked
// known or predicted (their entities and scores are the trained model's).
func checkAsk(t *testing.T, s step, stdout string) {
	t.Helper()
	shown, got := strings.Split(strings.TrimSpace(s.shown), "\n"), strings.Split(strings.TrimSpace(stdout), "\n")
	header := slices.IndexFunc(shown, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "# ") })
	if header < 0 || len(got) <= header {
		t.Fatalf("%s: the README shows no table header, or the output is short:\n%s", s.line, stdout)
	}
	for i := 0; i <= header; i++ {
		if collapse(got[i]) != collapse(shown[i]) {
			t.Errorf("%s: line %d is\n%s\nthe README shows\n%s", s.line, i+1, got[i], shown[i])
		}
	}
	top, _ := strconv.Atoi(flagValue(s.words, "--top"))
	rows := got[header+1:]
	if len(rows) != top || len(shown)-header-1 != top {
		t.Fatalf("%s: %d rows printed, %d shown; want --top %d", s.line, len(rows), len(shown)-header-1, top)
	}
	for i, r := range rows {
		f := strings.Fields(r)
		if f[0] != strconv.Itoa(i+1) || (f[len(f)-1] != "known" && f[len(f)-1] != "predicted") {
			t.Errorf("%s: row %q: want position %d and known or predicted", s.line, r, i+1)
		}
	}
}

// checkMetrics: the README's table lines are printed, the papers' rows and the header as
// shown, the run's own row (its MRRs are the trained model's) with a value or – in every
// column.
func checkMetrics(t *testing.T, s step, stdout string) {
	t.Helper()
	if !strings.Contains(s.shown, "| rocone ") {
		t.Errorf("%s: the README shows no table with the run's row after it", s.line)
	}
	got := map[string]bool{}
	var own []string
	for _, l := range strings.Split(stdout, "\n") {
		got[collapse(l)] = true
		if strings.HasPrefix(l, "| rocone ") {
			own = append(own, l)
		}
	}
	rule := regexp.MustCompile(`^[|:\- ]+$`)
	for _, l := range strings.Split(strings.TrimSpace(s.shown), "\n") {
		switch {
		case rule.MatchString(l):
			continue // the rule under the header: as wide as the columns
		case strings.HasPrefix(l, "| rocone "):
			if len(own) == 0 || strings.Count(own[0], "|") != strings.Count(l, "|") {
				t.Errorf("%s: the run's row %q, the README shows %q", s.line, own, l)
			}
		case !got[collapse(l)]:
			t.Errorf("%s: no line\n%s\nin its output\n%s", s.line, l, stdout)
		}
	}
}

// checkCurves: --points windows of the loss, the validations, and the plot, a PNG.
func checkCurves(t *testing.T, s step, stdout, plot string) {
	t.Helper()
	points, _ := strconv.Atoi(flagValue(s.words, "--points"))
	windows := regexp.MustCompile(`(?m)^\| \d+–\d+ \|`).FindAllString(stdout, -1)
	if len(windows) != points || !strings.Contains(stdout, "valid MRR") {
		t.Errorf("%s: %d loss windows (want %d) or no valid MRR in\n%s", s.line, len(windows), points, stdout)
	}
	b, err := os.ReadFile(plot)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("%s: plot %s: %v", s.line, plot, err)
	}
}
