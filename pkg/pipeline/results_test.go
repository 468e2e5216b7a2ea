package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/artifacttest"
	"github.com/rocone/rocone/internal/traintest"
	"github.com/rocone/rocone/pkg/compute/cpu"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/train"
)

// resultsFixture trains tiny models (rocone seeds 1 and 2, cone seed 1), ranks the test
// queries with each and writes one results entry per run under root; it returns the
// entries' ranks files and the entries.
func resultsFixture(t *testing.T, root string) (ranks, entries []string) {
	t.Helper()
	dir := t.TempDir()
	trainFile := traintest.Generate(t, dir, "train.arrow", "train", nil, 1)
	testFile := traintest.Generate(t, dir, "test.arrow", "test", nil, 3)
	kernels := cpu.New(cpu.Options{})
	for _, run := range []struct {
		model string
		seed  int
	}{{"rocone", 1}, {"rocone", 2}, {"cone", 1}} {
		settings := []train.Setting{{Key: "model", Value: run.model}, {Key: "dim", Value: 8}, {Key: "steps", Value: 5},
			{Key: "eval_every", Value: 0}, {Key: "batch", Value: 16}, {Key: "negatives", Value: 4}, {Key: "lr", Value: 0.01},
			{Key: "seed", Value: run.seed}}
		if run.model == "cone" {
			settings = append(settings, train.Setting{Key: "cone_hidden", Value: 8})
		}
		cfg, err := train.NewConfig("", settings)
		if err != nil {
			t.Fatal(err)
		}
		name := run.model + "-seed" + string(rune('0'+run.seed))
		entry := filepath.Join(root, "tiny", name)
		if err := os.MkdirAll(entry, 0o755); err != nil {
			t.Fatal(err)
		}
		ck := filepath.Join(dir, name+".arrow")
		if _, err := train.Run(context.Background(), cfg, train.Options{Train: trainFile, Checkpoint: ck,
			Log: filepath.Join(entry, ResultLogFile), Kernels: kernels}); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, name+"-ranks.arrow")
		if err := Rank(RankConfig{Checkpoint: ck, Queries: testFile, Output: out, Kernels: kernels}); err != nil {
			t.Fatal(err)
		}
		if err := Metrics(MetricsConfig{Ranks: []string{out}, Output: filepath.Join(entry, ResultMetricsFile), Resamples: 0}, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		writeRecord(t, entry, RunRecord{Dataset: "tiny", Model: run.model, Seed: int64(run.seed), Steps: 5, Commit: "0123456789abcdef",
			Device: "test CPU", Date: "2026-11-26", WallTimeS: 1.5, Commands: []string{"train …", "rank …", "metrics -o …"}})
		ranks, entries = append(ranks, out), append(entries, entry)
	}
	return ranks, entries
}

func writeRecord(t *testing.T, entry string, rec RunRecord) {
	t.Helper()
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(entry, RunRecordFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// modelRows returns the lines of the first (MRR) table that are our models' rows.
func modelRows(table string) []string {
	var rows []string
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, "| rocone") || strings.HasPrefix(l, "| cone") {
			rows = append(rows, l)
		}
	}
	return rows
}

// TestResultsTable: the table made from the entries' per-run metrics is the table that
// `metrics --models` makes from the same runs' ranks (the same means and standard deviations
// over seeds, digit for digit), and the runs are listed.
func TestResultsTable(t *testing.T) {
	root := t.TempDir()
	ranks, entries := resultsFixture(t, root)
	var got bytes.Buffer
	if err := Results(ResultsConfig{Dirs: []string{root}}, &got); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := Metrics(MetricsConfig{Ranks: ranks, Models: true, Resamples: 0}, &want); err != nil {
		t.Fatal(err)
	}
	g, w := modelRows(got.String()), modelRows(want.String())
	slices.Sort(g) // the entries come in path order, the ranks here in training order
	slices.Sort(w)
	if len(w) < 2 || strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Fatalf("results rows:\n%s\nmetrics --models rows:\n%s\nwhole results output:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"), got.String())
	}
	if !strings.Contains(strings.Join(g, "\n"), "| rocone (2 seeds) |") {
		t.Errorf("rocone's row should average its 2 entries:\n%s", strings.Join(g, "\n"))
	}
	for _, e := range entries {
		if !strings.Contains(got.String(), "| `"+filepath.ToSlash(e)+"` |") {
			t.Errorf("entry %s not listed:\n%s", e, got.String())
		}
	}
	// One entry given on its own, beside its folder: twice.
	err := Results(ResultsConfig{Dirs: []string{root, entries[0]}}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("an entry twice: %v", err)
	}
	// The folder under two names (a link): the same entries twice.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	err = Results(ResultsConfig{Dirs: []string{root, link}}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "are the same folder, given twice") {
		t.Errorf("the folder and a link to it: %v", err)
	}
	if err := Results(ResultsConfig{Dirs: []string{filepath.Join(root, "nope")}}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "results folder: stat "+filepath.Join(root, "nope")) {
		t.Errorf("a missing folder: %v", err)
	}
	// A folder without an entry (a mistyped one, say): an error naming it, not empty
	// tables that a --readme would take.
	empty := t.TempDir()
	if err := Results(ResultsConfig{Dirs: []string{root, empty}}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), empty+": no results entry under it") {
		t.Errorf("a folder with no entry: %v", err)
	}
}

// TestResultsRefuses: an entry whose parts do not belong together, or that does not say
// how it was made, is refused with the file at fault.
func TestResultsRefuses(t *testing.T) {
	root := t.TempDir()
	ranks, entries := resultsFixture(t, root)
	good := RunRecord{Dataset: "tiny", Model: "rocone", Seed: 1, Steps: 5, Commit: "0123456789abcdef", Device: "test CPU",
		Date: "2026-11-26", WallTimeS: 1.5, Commands: []string{"train …"}}
	entry := entries[0]
	// writeRun writes the entry's run.json as made and the metrics of the ranks given to out.
	writeRun := func(t *testing.T, out string, ranks ...string) {
		writeRecord(t, entry, good)
		if err := Metrics(MetricsConfig{Ranks: ranks, Output: out, Resamples: 0}, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
	}
	metricsFile, logFile := filepath.Join(entry, ResultMetricsFile), filepath.Join(entry, ResultLogFile)
	// editMetrics is writeRun of the entry's one run, its metrics with edit applied (under
	// a valid checksum).
	editMetrics := func(t *testing.T, edit func(meta map[string]string, rows []artifacttest.Row) []artifacttest.Row) {
		made := filepath.Join(t.TempDir(), ResultMetricsFile)
		writeRun(t, made, ranks[0])
		artifacttest.Edit(t, made, metricsFile, edit)
	}
	// editLog makes the entry's train log the log src with edit applied.
	editLog := func(t *testing.T, src string, edit func(meta map[string]string, rows []artifacttest.Row) []artifacttest.Row) {
		made := filepath.Join(t.TempDir(), ResultLogFile)
		artifacttest.Edit(t, src, made, edit)
		b, err := os.ReadFile(made)
		if err != nil || os.WriteFile(logFile, b, 0o644) != nil {
			t.Fatal("replacing the entry's train log")
		}
	}
	for _, c := range []struct {
		name string
		edit func(t *testing.T)
		want string
	}{
		{"other seed", func(t *testing.T) { r := good; r.Seed = 7; writeRecord(t, entry, r) }, "is of seed 1, but"},
		{"other model", func(t *testing.T) { r := good; r.Model = "cone"; writeRecord(t, entry, r) }, "tiny rocone, but"},
		{"steps not logged", func(t *testing.T) { r := good; r.Steps = 300001; writeRecord(t, entry, r) }, "logs steps up to 4, but"},
		{"no commands", func(t *testing.T) { r := good; r.Commands = nil; writeRecord(t, entry, r) }, "no commands"},
		{"no device", func(t *testing.T) { r := good; r.Device = " "; writeRecord(t, entry, r) }, `"device" is missing or empty`},
		{"bad date", func(t *testing.T) { r := good; r.Date = "26/11/2026"; writeRecord(t, entry, r) }, "is not YYYY-MM-DD"},
		{"not a commit", func(t *testing.T) { r := good; r.Commit = "zz"; writeRecord(t, entry, r) }, `commit "zz": want the git commit's hex id`},
		{"a newline in a cell", func(t *testing.T) { r := good; r.Device = "a\nb"; writeRecord(t, entry, r) }, `device "a\nb" holds '\n', which would break the Markdown table`},
		{"a | in a cell", func(t *testing.T) { r := good; r.Device = "a|b"; writeRecord(t, entry, r) }, `holds '|'`},
		{"centuries of wall time", func(t *testing.T) { r := good; r.WallTimeS = 1e10; writeRecord(t, entry, r) }, "wall_time_s 1e+10: want"},
		{"unknown field", func(t *testing.T) {
			os.WriteFile(filepath.Join(entry, RunRecordFile), []byte(`{"dataset":"tiny","wall_time":3}`), 0o644)
		}, `unknown field "wall_time"`},
		{"seeds aggregated", func(t *testing.T) { writeRun(t, metricsFile, ranks[:2]...) }, "not the metrics of one run"},
		{"no steps", func(t *testing.T) { r := good; r.Steps = 0; writeRecord(t, entry, r) }, "steps 0: want the number of steps trained"},
		{"the valid split", func(t *testing.T) {
			editMetrics(t, func(meta map[string]string, rows []artifacttest.Row) []artifacttest.Row {
				meta["split"] = "valid"
				return rows
			})
		}, "ranks the valid split; a results entry reports the test split"},
		{"a row of two seeds", func(t *testing.T) {
			editMetrics(t, func(_ map[string]string, rows []artifacttest.Row) []artifacttest.Row {
				rows[len(rows)-1]["seeds"] = int32(2)
				return rows
			})
		}, "has 2 seeds; an entry is one run"},
		{"log of another configuration", func(t *testing.T) {
			writeRun(t, metricsFile, ranks[0])
			editLog(t, logFile, func(meta map[string]string, rows []artifacttest.Row) []artifacttest.Row {
				meta["config"] = strings.Replace(meta["config"], `"lr":0.01`, `"lr":0.02`, 1)
				return rows
			})
		}, "have other training configurations: not one run"},
		{"log of another run", func(t *testing.T) {
			writeRun(t, metricsFile, ranks[0])
			b, _ := os.ReadFile(filepath.Join(entries[2], ResultLogFile))
			os.WriteFile(logFile, b, 0o644)
		}, "not one run"},
		{"log of another train file", func(t *testing.T) {
			writeRun(t, metricsFile, ranks[0])
			// A rocone log, of a run on another train file (its lineage edited, under a
			// valid checksum): refused for that before its seed is looked at.
			editLog(t, filepath.Join(entries[1], ResultLogFile), func(meta map[string]string, rows []artifacttest.Row) []artifacttest.Row {
				meta["train_fingerprint"] = "0123456789abcdef"
				return rows
			})
		}, "and train file 0123456789abcdef"},
		// Last: an entry's artifacts without its run.json would drop out of the tables.
		{"no run.json", func(t *testing.T) { os.Remove(filepath.Join(entry, RunRecordFile)) }, "holds metrics.arrow but no run.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.edit(t)
			err := Results(ResultsConfig{Dirs: []string{root}}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), entry) {
				t.Errorf("error %v, want one naming %s and containing %q", err, entry, c.want)
			}
		})
	}
}

// TestReplaceResultsBlock: the block between the markers is replaced, the rest kept; the
// markers must be there once each, in order.
func TestReplaceResultsBlock(t *testing.T) {
	doc := "# R\n\nbefore\n" + ResultsBegin + "\nold table\n" + ResultsEnd + "\nafter\n"
	got, err := ReplaceResultsBlock([]byte(doc), []byte("new\ntable\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "# R\n\nbefore\n" + ResultsBegin + "\nnew\ntable\n" + ResultsEnd + "\nafter\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	again, _ := ReplaceResultsBlock(got, []byte("new\ntable\n"))
	if !bytes.Equal(again, got) {
		t.Errorf("not idempotent: %q", again)
	}
	for _, bad := range []string{"no markers", ResultsBegin + ResultsBegin + ResultsEnd, ResultsEnd + "x" + ResultsBegin} {
		if _, err := ReplaceResultsBlock([]byte(bad), nil); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestReadmeResultsUpToDate: the README's reproduction tables are what `metrics results`
// makes from results/ now (regenerate: metrics results --readme README.md results/).
func TestReadmeResultsUpToDate(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	cwd, _ := os.Getwd()
	if err := os.Chdir(root); err != nil { // entries are listed by their path from the repository's root
		t.Fatal(err)
	}
	err = Results(ResultsConfig{Dirs: []string{"results"}}, &table)
	os.Chdir(cwd)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReplaceResultsBlock(readme, table.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, readme) {
		t.Errorf("README.md's results block is stale; run: metrics results --readme README.md results/")
	}
}

// TestResultsReadme: --readme replaces the block of a regular file in place; it is claimed
// for the run (a held claim refuses it, naming the other run, and leaves the file as it
// was), and stdout or a missing file is refused by name.
func TestResultsReadme(t *testing.T) {
	results, err := filepath.Abs(filepath.Join("..", "..", "results"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	doc := "# x\n\n" + ResultsBegin + "\nold\n" + ResultsEnd + "\n"
	if err := os.WriteFile(readme, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	release, err := outfile.Claim(nil, []outfile.Path{{Flag: "-o", Path: readme}})
	if err != nil {
		t.Fatal(err)
	}
	err = Results(ResultsConfig{Dirs: []string{results}, Readme: readme}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--readme "+readme+": another run is writing it") {
		t.Fatalf("a claimed README: %v", err)
	}
	if b, _ := os.ReadFile(readme); string(b) != doc {
		t.Fatalf("the refused run changed the README: %q", b)
	}
	release()
	if err := Results(ResultsConfig{Dirs: []string{results}, Readme: readme}, io.Discard); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(readme)
	if strings.Contains(string(b), "\nold\n") || !strings.Contains(string(b), "| model") {
		t.Fatalf("the block was not replaced:\n%s", b)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("left %d entries beside the README", len(es)-1)
	}
	for _, bad := range []string{"-", filepath.Join(dir, "missing.md")} {
		if err := Results(ResultsConfig{Dirs: []string{results}, Readme: bad}, io.Discard); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("--readme %s: %v", bad, err)
		}
	}
}

// TestResultsReadmeIsAnEntryFile: a --readme that is one of the entries' own files is
// refused before any is read, even one that holds the markers (a run.json whose notes
// quote them), and the entry is left as it was.
func TestResultsReadmeIsAnEntryFile(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join("..", "..", "results"))); err != nil {
		t.Fatal(err)
	}
	entries, err := findEntries(root)
	if err != nil || len(entries) == 0 {
		t.Fatalf("no entries copied: %v", err)
	}
	run := filepath.Join(entries[0], RunRecordFile)
	rec, err := readRunRecord(run)
	if err != nil {
		t.Fatal(err)
	}
	rec.Notes = "the README's block: " + ResultsBegin + " … " + ResultsEnd
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the markers as they are, not \u003c…
	enc.Encode(rec)
	doc := buf.Bytes()
	if err := os.WriteFile(run, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "README.md")
	os.Symlink(run, link)
	for _, readme := range []string{run, link} {
		err := Results(ResultsConfig{Dirs: []string{root}, Readme: readme}, io.Discard)
		if want := "--readme " + readme + " is the same file as results entry file " + run; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--readme %s: %v, want %q", readme, err, want)
		}
		if b, _ := os.ReadFile(run); !bytes.Equal(b, doc) {
			t.Fatalf("--readme %s: the refused run changed %s", readme, run)
		}
	}
}

// FuzzRunRecord: any run.json is read into a record that says how its run was made (the
// fields readEntry relies on set), or refused with an error naming the file; never a panic.
func FuzzRunRecord(f *testing.F) {
	good, _ := json.Marshal(RunRecord{Dataset: "tiny", Model: "rocone", Seed: 1, Steps: 5, Commit: "c", Device: "d",
		Date: "2026-11-26", WallTimeS: 1, Commands: []string{"train"}})
	for _, s := range []string{string(good), "{}", `{"dataset":"x"}`, "[]", "", `{"steps":-1}`, string(good) + "{}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		path := filepath.Join(t.TempDir(), RunRecordFile)
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		rec, err := readRunRecord(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if strings.TrimSpace(rec.Dataset) == "" || strings.TrimSpace(rec.Model) == "" || rec.Steps < 1 || !(rec.WallTimeS > 0) || len(rec.Commands) == 0 {
			t.Fatalf("%q read as %+v", doc, rec)
		}
	})
}

func TestWallTime(t *testing.T) {
	for _, c := range []struct {
		seconds float64
		want    string
	}{
		{1e-7, "<1ms"},
		{0.0004, "<1ms"},
		{0.0006, "1ms"},
		{0.078, "78ms"},
		{0.9996, "1s"},
		{1.5, "2s"},
		{363.4, "6m3s"},
		{3023.7, "50m24s"},
		{9000, "2h30m0s"},
	} {
		if got := wallTime(c.seconds); got != c.want {
			t.Errorf("wallTime(%v) = %q, want %q", c.seconds, got, c.want)
		}
	}
}

// TestShortRunLabel: a row of runs shorter (or longer) than the dataset preset's, which
// the papers' rows stand beside, says its steps; a full-length run, a dataset without a
// preset, or a label that already tells the steps apart, is left alone.
func TestShortRunLabel(t *testing.T) {
	for _, c := range []struct {
		label, dataset string
		steps          int64
		want           string
	}{
		{"rocone", "fb15k-237", 20000, "rocone (steps 20000)"},
		{"rocone", "fb15k-237", 300001, "rocone"},
		{"cone", "nell-995", 1000, "cone (steps 1000)"},
		{"rocone (dim 200)", "nell995", 5, "rocone (dim 200, steps 5)"},
		{"rocone (steps 5)", "fb15k-237", 5, "rocone (steps 5)"},
		{"rocone", "tiny", 5, "rocone"},
	} {
		if got := shortRunLabel(c.label, c.dataset, c.steps); got != c.want {
			t.Errorf("shortRunLabel(%q, %q, %d) = %q, want %q", c.label, c.dataset, c.steps, got, c.want)
		}
	}
}

// TestCommitPattern: run.json's commit is what git describe --always --dirty writes.
func TestCommitPattern(t *testing.T) {
	for commit, ok := range map[string]bool{
		"0123abc": true, "0123456789abcdef0123456789abcdef01234567": true, "0123abc-dirty": true, "v1.2-3-g0123abc": true,
		"v1.2-3-g0123abc-dirty": true, "zz": false, "0123ab": false, "unknown": false, "0123ABC": false, "0123abc dirty": false,
	} {
		if commitPattern.MatchString(commit) != ok {
			t.Errorf("commit %q: accepted %v, want %v", commit, !ok, ok)
		}
	}
}
