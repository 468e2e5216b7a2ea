package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocone/rocone/internal/outfiletest"
	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/sample"
	"github.com/rocone/rocone/pkg/train"
)

// triples reads a split of a dataset of ids (plain or gzipped) as written, for reference
// answers computed here rather than by pkg/answer.
func triples(t *testing.T, dir, split string) [][3]int32 {
	t.Helper()
	var r io.Reader
	f, err := os.Open(filepath.Join(dir, split+".tsv"))
	if err == nil {
		r = f
	} else {
		if f, err = os.Open(filepath.Join(dir, split+".tsv.gz")); err != nil {
			t.Fatal(err)
		}
		gz, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = gz
	}
	defer f.Close()
	var out [][3]int32
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		var v [3]int32
		for i := range v {
			n, err := strconv.Atoi(fs[i])
			if err != nil {
				t.Fatal(err)
			}
			v[i] = int32(n)
		}
		out = append(out, v)
	}
	return out
}

// tails is the set of t with (h, r, t) in ts.
func tails(ts [][3]int32, h, r int32) map[int32]bool {
	s := map[int32]bool{}
	for _, x := range ts {
		if x[0] == h && x[1] == r {
			s[x[2]] = true
		}
	}
	return s
}

// askRun runs rank with args and returns the run and, with -o, the artifact's rows.
func askRun(t *testing.T, args ...string) outfiletest.Result {
	t.Helper()
	return outfiletest.Run(t, 2*time.Minute, args...)
}

func readAnswers(t *testing.T, path string) (artifact.AnswersMeta, []artifact.Answer) {
	t.Helper()
	m, rows, err := artifact.ReadAnswers(path)
	if err != nil {
		t.Fatal(err)
	}
	return m, rows
}

// tableBody is the stdout of an ask without its first line (the query as written).
func tableBody(out string) string {
	_, rest, _ := strings.Cut(out, "\n")
	return rest
}

// checkKnown checks that the rows of one question mark exactly the entities of known as
// known, list the top entities by score (ties by id), and that with every entity listed
// each known answer is among them.
func checkKnown(t *testing.T, what string, rows []artifact.Answer, known map[int32]bool, all bool) {
	t.Helper()
	seen := map[int32]bool{}
	for i, r := range rows {
		if r.Known != known[r.Entity] {
			t.Errorf("%s: entity %d marked known=%v, reference %v", what, r.Entity, r.Known, known[r.Entity])
		}
		if int(r.KnownAnswers) != len(known) {
			t.Errorf("%s: %d known answers, reference %d", what, r.KnownAnswers, len(known))
		}
		if r.Position != int32(i+1) {
			t.Errorf("%s: row %d at position %d", what, i, r.Position)
		}
		if i > 0 && (rows[i-1].Score < r.Score || (rows[i-1].Score == r.Score && rows[i-1].Entity > r.Entity)) {
			t.Errorf("%s: position %d (%d, %v) after (%d, %v)", what, i+1, r.Entity, r.Score, rows[i-1].Entity, rows[i-1].Score)
		}
		seen[r.Entity] = true
	}
	if all {
		for e := range known {
			if !seen[e] {
				t.Errorf("%s: known answer %d not listed", what, e)
			}
		}
	}
}

// tinyWithLabels is testdata/tiny with an entity_labels.tsv: ent72 is "Seventy_Two", and
// ent5 and ent6 are both "Twin".
func tinyWithLabels(t *testing.T, src string) string {
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "entity_labels.tsv"), []byte("5\tTwin\n6\tTwin\n72\tSeventy_Two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestAskTiny: queries asked by name, loose name, label and id on tiny give the same
// entities, scores and marks; the marks are the reference's (train, or train and valid);
// --exclude-known lists predictions only; a file of queries gives each query's answers.
func TestAskTiny(t *testing.T) {
	f := outfiletest.Make(t)
	data := tinyWithLabels(t, f.Data)
	tr, va := triples(t, data, "train"), triples(t, data, "valid")
	base := []string{"--checkpoint", f.Checkpoint, "--data", data, "-q"}
	out := func(name string) string { return filepath.Join(f.Dir, name) }

	// One 1p query in four spellings.
	known := tails(tr, 2, 0)
	if len(known) == 0 {
		t.Fatal("tiny has no (2, 0) edge")
	}
	var body string
	var first []artifact.Answer
	for i, q := range []string{"(ent2,(+rel0,))", "(2,(0,))", "(ENT2,(rel0,))", `("ent2", ('+rel0',))`} {
		o := out(fmt.Sprintf("a%d.arrow", i))
		r := askRun(t, append(base, "--ask", q, "--top", "82", "-o", o)...)
		r.Expect(t, 0)
		meta, rows := readAnswers(t, o)
		if meta.NumQuestions != 1 || meta.TopK != 82 || meta.Known != "train" || meta.ExcludeKnown || meta.Dataset != "tiny" || len(rows) != 82 {
			t.Fatalf("%s: meta %+v, %d rows", q, meta, len(rows))
		}
		checkKnown(t, q, rows, known, true)
		if rows[0].Grounded != "(2,(0,))" || rows[0].Type != "1p" || rows[0].Query != q {
			t.Errorf("%s: row %+v", q, rows[0])
		}
		if !strings.Contains(r.Stdout, "1p (2,(0,)) = ('ent2',('+rel0',)); "+strconv.Itoa(len(known))+" known answer") {
			t.Errorf("%s: stdout\n%s", q, r.Stdout)
		}
		if n := strings.Count(r.Stdout, " known\n"); n != len(known) {
			t.Errorf("%s: %d lines say known, want %d:\n%s", q, n, len(known), r.Stdout)
		}
		if i == 0 {
			body, first = tableBody(r.Stdout), rows
			continue
		}
		if tableBody(r.Stdout) != body {
			t.Errorf("%s: table differs from the first spelling's:\n%s\nwant\n%s", q, r.Stdout, body)
		}
		for k := range rows {
			if rows[k].Entity != first[k].Entity || rows[k].Score != first[k].Score {
				t.Fatalf("%s: position %d is %d (%v), first spelling %d (%v)", q, k+1, rows[k].Entity, rows[k].Score, first[k].Entity, first[k].Score)
			}
		}
	}

	// --exclude-known: the same order without the known answers.
	o := out("excl.arrow")
	askRun(t, append(base, "--ask", "(ent2,(+rel0,))", "--top", "82", "--exclude-known", "-o", o)...).Expect(t, 0)
	_, rows := readAnswers(t, o)
	var want []artifact.Answer
	for _, r := range first {
		if !r.Known {
			want = append(want, r)
		}
	}
	if len(rows) != len(want) {
		t.Fatalf("--exclude-known: %d rows, want %d", len(rows), len(want))
	}
	for k := range rows {
		if rows[k].Entity != want[k].Entity || rows[k].Known || rows[k].Position != int32(k+1) {
			t.Fatalf("--exclude-known: position %d is %+v, want entity %d", k+1, rows[k], want[k].Entity)
		}
	}

	// --known train+valid: a fact only in valid turns a prediction into a known answer.
	var vh, vr, vt int32 = -1, 0, 0
	for _, x := range va {
		if !tails(tr, x[0], x[1])[x[2]] {
			vh, vr, vt = x[0], x[1], x[2]
			break
		}
	}
	if vh < 0 {
		t.Fatal("no valid-only fact in tiny")
	}
	q := fmt.Sprintf("(ent%d,(%d,))", vh, vr)
	for _, k := range []string{"train", "train+valid"} {
		o := out("known-" + k + ".arrow")
		askRun(t, append(base, "--ask", q, "--top", "82", "--known", k, "-o", o)...).Expect(t, 0)
		_, rows := readAnswers(t, o)
		ref := tails(tr, vh, vr)
		if k == "train+valid" {
			for e := range tails(va, vh, vr) {
				ref[e] = true
			}
		}
		checkKnown(t, q+" --known "+k, rows, ref, true)
		for _, r := range rows {
			if r.Entity == vt && r.Known != (k == "train+valid") {
				t.Errorf("%s --known %s: valid-only answer %d marked known=%v", q, k, vt, r.Known)
			}
		}
	}

	// Negation and a label: ((Seventy_Two,(+rel4,)),(ent2,(+rel0,n))) is 2in.
	q = "(('Seventy Two',(+rel4,)),(ent2,(+rel0,n)))"
	o = out("2in.arrow")
	r := askRun(t, append(base, "--ask", q, "--top", "82", "-o", o)...)
	r.Expect(t, 0)
	ref := tails(tr, 72, 8)
	for e := range tails(tr, 2, 0) {
		delete(ref, e)
	}
	_, rows = readAnswers(t, o)
	checkKnown(t, q, rows, ref, true)
	if !strings.Contains(r.Stdout, "2in ((72,(8,)),(2,(0,-2))) = (('ent72',('+rel4',)),('ent2',('+rel0','n')))") || !strings.Contains(r.Stdout, "Seventy_Two") {
		t.Errorf("%s: stdout\n%s", q, r.Stdout)
	}

	// A file of queries: each question's rows are those of asking it alone.
	qs := []string{"(ent2,(+rel0,))", "(('Seventy Two',(+rel4,)),(ent2,(+rel0,n)))", "(((ent2,(+rel0,)),(ent72,(+rel4,)),(u,)),(+rel1,))", "(ent9,(+rel2,+rel3,+rel2))"}
	file := out("questions.txt")
	os.WriteFile(file, []byte("# questions\n"+qs[0]+"\n\n   "+qs[1]+"\n  # another comment\n"+qs[2]+"\n"+qs[3]+"\n"), 0o644)
	o = out("file.arrow")
	r = askRun(t, append(base, "--ask-file", file, "--top", "7", "-o", o)...)
	r.Expect(t, 0)
	meta, rows := readAnswers(t, o)
	if meta.NumQuestions != len(qs) {
		t.Fatalf("%d questions, want %d", meta.NumQuestions, len(qs))
	}
	for i, q := range qs {
		single := out(fmt.Sprintf("single%d.arrow", i))
		askRun(t, append(base, "--ask", q, "--top", "7", "-o", single)...).Expect(t, 0)
		_, want := readAnswers(t, single)
		var got []artifact.Answer
		for _, r := range rows {
			if r.Question == int32(i) {
				r.Question = 0
				got = append(got, r)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("question %d of the file:\n%+v\nasked alone:\n%+v", i, got, want)
		}
		if !strings.Contains(r.Stdout, fmt.Sprintf("question %d (%s:", i+1, file)) {
			t.Errorf("stdout does not name question %d's line:\n%s", i+1, r.Stdout)
		}
	}
	if rows[len(rows)-1].Type != "3p" || !strings.Contains(r.Stdout, "up (((2,(0,)),(72,(8,)),(-1,)),(2,))") {
		t.Errorf("types: last row %+v; stdout\n%s", rows[len(rows)-1], r.Stdout)
	}
}

// TestAskRefused: ambiguous and unknown names, malformed queries and wrong flags exit 1
// with a message saying what is wrong (candidates for a name), and change no file.
func TestAskRefused(t *testing.T) {
	f := outfiletest.Make(t)
	data := tinyWithLabels(t, f.Data)
	o := filepath.Join(f.Dir, "answers.arrow")
	os.WriteFile(o, []byte("an older file the failed run must leave alone"), 0o644)
	bad := filepath.Join(f.Dir, "bad.txt")
	os.WriteFile(bad, []byte("(ent2,(+rel0,))\n# fine so far\n(ent2,(+rel0,)\n(ent2,(rel0 x,))\n"), 0o644)
	unknown := filepath.Join(f.Dir, "unknown.txt")
	os.WriteFile(unknown, []byte("(ent2,(+rel0,))\n(ent2x,(+rel0,))\n(ent2,(+rel0,))\n(Twin,(+rel0,))\n"), 0o644)
	utf16 := filepath.Join(f.Dir, "utf16.txt") // (ent2,(+rel0,)) as PowerShell's > writes it
	os.WriteFile(utf16, []byte("\xff\xfe(\x00e\x00n\x00t\x002\x00,\x00(\x00+\x00r\x00e\x00l\x000\x00,\x00)\x00)\x00\r\x00\n\x00"), 0o644)
	empty := filepath.Join(f.Dir, "empty.txt")
	os.WriteFile(empty, []byte("# nothing\n\n"), 0o644)
	long := filepath.Join(f.Dir, "long.txt")
	os.WriteFile(long, []byte("(ent2,(+rel0,))\n(ent2,(+rel0,))"+strings.Repeat(" ", 1<<20)+"\n"), 0o644)
	base := []string{"--checkpoint", f.Checkpoint, "-q", "-o", o}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"ambiguous label", []string{"--data", data, "--ask", "(Twin,(+rel0,))"},
			[]string{`rank: --ask: query "(Twin,(+rel0,))": at offset 1: entity "Twin" is ambiguous: 2 entities match it: id 5 name "ent5" label "Twin"; id 6 name "ent6" label "Twin" (write the entity by its id or its exact name)`}},
		{"unknown entity", []string{"--data", data, "--ask", "((ent2,(+rel0,)),(ent2x,(+rel0,)))"},
			[]string{`at offset 18: unknown entity "ent2x"; the closest: id 2 name "ent2"; id 20 name "ent20"`}},
		{"unknown relation", []string{"--data", data, "--ask", "(ent2,(rel11,))"},
			[]string{`at offset 7: unknown relation "rel11"; the closest: id 2 name "+rel1"`}},
		{"entity id out of range", []string{"--data", data, "--ask", "(82,(0,))"}, []string{"at offset 1: entity id 82 out of range [0,82)"}},
		{"relation id out of range", []string{"--data", data, "--ask", "(8,(10,))"}, []string{"at offset 4: relation id 10 out of range [0,10)"}},
		{"quoted id", []string{"--data", data, "--ask", "('8',(0,))"}, []string{`unknown entity "8"`, "an id is written without quotes"}},
		{"malformed", []string{"--data", data, "--ask", "(ent2,(+rel0,)"}, []string{`rank: --ask: query "(ent2,(+rel0,)": at offset 14: unexpected end of input: missing ')'`}},
		{"unquoted space", []string{"--data", data, "--ask", "(Seventy Two,(+rel0,))"}, []string{"at offset 9: expected ',' or ')', found 'T' (a name holding spaces"}},
		{"negated union", []string{"--data", data, "--ask", "(((ent2,(+rel0,)),(ent3,(+rel0,)),(u,)),(n,))"}, []string{"negation of a union has no DNF form"}},
		{"30 unions intersected", []string{"--data", data, "--ask", "(" + strings.Repeat("((ent2,(+rel0,)),(ent3,(+rel0,)),(u,)),", 29) + "((ent2,(+rel0,)),(ent3,(+rel0,)),(u,)))"},
			[]string{"its DNF has more than 128 branches"}},
		{"a one-item tuple without its comma", []string{"--data", data, "--ask", "(8,(0))"}, []string{"at offset 5: one-element tuple needs a trailing comma"}},
		{"bad file lines", []string{"--data", data, "--ask-file", bad},
			[]string{bad + `:3: query "(ent2,(+rel0,)": at offset 14`, bad + `:4: query "(ent2,(rel0 x,))": at offset 12: expected ','`}},
		{"unknown names in a file", []string{"--data", data, "--ask-file", unknown},
			[]string{unknown + `:2: query "(ent2x,(+rel0,))": at offset 1: unknown entity "ent2x"`, unknown + `:4: query "(Twin,(+rel0,))": at offset 1: entity "Twin" is ambiguous`}},
		{"empty file", []string{"--data", data, "--ask-file", empty}, []string{empty + ": no query in it"}},
		{"a UTF-16 file", []string{"--data", data, "--ask-file", utf16}, []string{utf16 + ": UTF-16 text (it starts with a UTF-16 byte-order mark): write the queries as UTF-8"}},
		{"a line over 1 MiB", []string{"--data", data, "--ask-file", long}, []string{long + ":2: a line longer than 1048576 bytes (one query a line)"}},
		{"a folder as the file", []string{"--data", data, "--ask-file", f.Dir}, []string{"--ask-file " + f.Dir + ": a folder, not a file of queries"}},
		{"missing file", []string{"--data", data, "--ask-file", filepath.Join(f.Dir, "none.txt")}, []string{"--ask-file: open"}},
		{"no data", []string{"--ask", "(ent2,(+rel0,))"}, []string{"--ask needs --data DIR"}},
		{"top 0", []string{"--data", data, "--ask", "(ent2,(+rel0,))", "--top", "0"}, []string{"--top 0: want a number of at least 1 (leave --top out for none, or 10 with --ask)"}},
		{"bad known", []string{"--data", data, "--ask", "(ent2,(+rel0,))", "--known", "test"}, []string{`--known "test": want train or train+valid`}},
		{"queries with ask", []string{"--data", data, "--ask", "(ent2,(+rel0,))", "--queries", f.Test}, []string{"--queries is not used with --ask"}},
		{"shard with ask", []string{"--data", data, "--ask", "(ent2,(+rel0,))", "--shard", "0/2"}, []string{"--shard is not used with --ask"}},
		{"profile with ask", []string{"--data", data, "--ask", "(ent2,(+rel0,))", "--profile", "p.md"}, []string{"--profile is not used with --ask"}},
		{"empty ask", []string{"--data", data, "--ask", ""}, []string{`--ask "": an empty query`}},
		{"exclude-known without ask", []string{"--queries", f.Test, "--exclude-known"}, []string{"--exclude-known needs --ask or --ask-file"}},
		{"no queries", nil, []string{"--queries required"}},
		{"-o is the ask file", []string{"--data", data, "--ask-file", bad, "-o", bad}, []string{"is the same file as --ask-file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := outfiletest.Take(t, f.Dir, data)
			args := slices.Clone(base)
			if slices.Contains(tc.args, "-o") { // the case's own -o replaces base's (a flag is given once)
				i := slices.Index(args, "-o")
				args = slices.Delete(args, i, i+2)
			}
			r := askRun(t, append(args, tc.args...)...)
			r.Expect(t, 1, tc.want...)
			if strings.Count(r.Stderr, "rank: ") != 1 {
				t.Errorf("want one rank: prefix:\n%s", r.Stderr)
			}
			before.Unchanged(t)
			outfiletest.NoTemp(t, f.Dir)
		})
	}
}

// TestAskRefusedBeforeModel: a query without a DNF (a negated union, too many branches) is
// refused as a malformed one is, before the model is loaded: here the checkpoint is no
// Arrow file, so loading it would fail, and it must not be what the error says.
func TestAskRefusedBeforeModel(t *testing.T) {
	dir := t.TempDir()
	notModel := filepath.Join(dir, "model.arrow")
	os.WriteFile(notModel, []byte("not a model"), 0o644)
	r := askRun(t, "--checkpoint", notModel, "--data", dir, "-q", "--ask", "(((0,(0,)),(1,(0,)),(u,)),(n,))")
	r.Expect(t, 1, `rank: --ask: query "(((0,(0,)),(1,(0,)),(u,)),(n,))": negation of a union has no DNF form`)
	if strings.Contains(r.Stderr, "model.arrow") {
		t.Errorf("the checkpoint was read before the query was refused:\n%s", r.Stderr)
	}
}

// fbCheckpoint trains a tiny model (d=8, 2 steps) on 64 1p queries of the shipped
// FB15k-237: enough to rank with, and recorded as FB15k-237's, entity table and all.
func fbCheckpoint(t *testing.T, data string) string {
	t.Helper()
	dir := t.TempDir()
	q := filepath.Join(dir, "train.arrow")
	if err := sample.GenerateToFile(context.Background(), sample.Source{Dir: data, Format: kg.FormatAuto}, "train",
		sample.Options{Types: []string{"1p"}, Counts: map[string]int{"1p": 64}, Seed: 1, Workers: 1}, q, nil); err != nil {
		t.Fatal(err)
	}
	cfg := train.Default()
	cfg.Dim, cfg.Batch, cfg.Negatives, cfg.Steps, cfg.EvalEvery, cfg.CheckpointEvery = 8, 16, 4, 2, 0, 0
	ck := filepath.Join(dir, "model.arrow")
	if _, err := train.Run(context.Background(), cfg, train.Options{Train: q, Checkpoint: ck, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	return ck
}

// TestAskFB15k237: on the shipped FB15k-237, a query by label, by Freebase id and by ids
// gives the same answers, marked known exactly where the train graph has the edge;
// inverse relations are written with '-'; an ambiguous label and a misspelt one are
// refused with candidates.
func TestAskFB15k237(t *testing.T) {
	if testing.Short() {
		t.Skip("loads FB15k-237")
	}
	data := filepath.Join("..", "..", "data", "fb15k-237")
	ck := fbCheckpoint(t, data)
	tr := triples(t, data, "train")
	dir := t.TempDir()
	base := []string{"--checkpoint", ck, "--data", data, "-q", "--top", "14505"}
	const rel = "/location/country/form_of_government" // relation 0; 1 is its inverse
	known := tails(tr, 0, 0)                           // Dominican_Republic's forms of government
	if !known[1] {
		t.Fatal("train has no Dominican_Republic form_of_government Republic")
	}
	var first []artifact.Answer
	for i, q := range []string{"(Dominican_Republic,(" + rel + ",))", "('/m/027rn',('+" + rel + "',))", "(0,(0,))", "('dominican republic',(0,))"} {
		o := filepath.Join(dir, fmt.Sprintf("a%d.arrow", i))
		r := askRun(t, append(base, "--ask", q, "-o", o)...)
		r.Expect(t, 0)
		_, rows := readAnswers(t, o)
		checkKnown(t, q, rows, known, true)
		if len(rows) != 14505 {
			t.Fatalf("%s: %d rows", q, len(rows))
		}
		for _, r := range rows {
			if r.Entity == 1 && (r.Name != "/m/06cx9" || r.Label != "Republic" || !r.Known) {
				t.Errorf("%s: Republic's row %+v", q, r)
			}
		}
		if !strings.Contains(r.Stdout, "Republic") || !strings.Contains(r.Stdout, "1p (0,(0,)) = ('/m/027rn',('+"+rel+"',))") {
			t.Errorf("%s: stdout lacks Republic or the resolved query:\n%.600s", q, r.Stdout)
		}
		if i == 0 {
			first = rows
		} else if rows[0].Entity != first[0].Entity || rows[100].Score != first[100].Score {
			t.Errorf("%s: answers differ from the first spelling's", q)
		}
	}
	// The inverse: the countries whose form of government is Republic.
	o := filepath.Join(dir, "inverse.arrow")
	askRun(t, append(base, "--ask", "(Republic,(-"+rel+",))", "-o", o)...).Expect(t, 0)
	_, rows := readAnswers(t, o)
	inv := tails(tr, 1, 1)
	if !inv[0] {
		t.Fatal("train lacks the inverse edge")
	}
	checkKnown(t, "inverse", rows, inv, true)

	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"(Washington_County,(" + rel + ",))", []string{`entity "Washington_County" is ambiguous: 7 entities match it: id `, `label "Washington_County"`}},
		{"('Dominican Repblic',(" + rel + ",))", []string{`unknown entity "Dominican Repblic"; the closest: id 0 name "/m/027rn" label "Dominican_Republic"`}},
		{"(Dominican_Republic,(/location/country/form_of_govermnent,))", []string{`unknown relation "/location/country/form_of_govermnent"; the closest: id 0 name "+` + rel + `"`}},
	} {
		askRun(t, append(base, "--ask", tc.q)...).Expect(t, 1, tc.want...)
	}
}
