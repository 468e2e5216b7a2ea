package sample

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/answer"
	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/query"
)

func loadTiny(t testing.TB) *kg.Dataset {
	t.Helper()
	d, err := kg.Load("../../testdata/tiny", kg.FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var allTypes = []string{"1p", "2p", "3p", "2i", "3i", "ip", "pi", "2u", "up", "2in", "3in", "inp", "pin", "pni",
	"((('e',('r',)),('e',('r','n')),('e',('r',))),('r',))"}

func collect(t *testing.T, g *Graphs, opts Options) []*Query {
	t.Helper()
	var qs []*Query
	_, err := Generate(context.Background(), g, opts, func(q *Query) error { qs = append(qs, q); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

func smallCounts() map[string]int {
	c := map[string]int{}
	for _, typ := range allTypes {
		c[typ] = 40
	}
	c["1p"] = -1
	return c
}

func TestDeterministicAcrossWorkers(t *testing.T) {
	d := loadTiny(t)
	for _, split := range []string{"train", "valid", "test"} {
		g, _ := NewGraphs(d, split)
		var runs [][]string
		for _, workers := range []int{1, 2, 5} {
			qs := collect(t, g, Options{Types: allTypes, Counts: smallCounts(), Seed: 7, Workers: workers})
			var lines []string
			for _, q := range qs {
				lines = append(lines, fmt.Sprint(q.Type, q, q.Easy, q.Hard))
			}
			runs = append(runs, lines)
		}
		for i := 1; i < len(runs); i++ {
			if !slices.Equal(runs[0], runs[i]) {
				t.Fatalf("%s: output differs between worker counts", split)
			}
		}
		seven := collect(t, g, Options{Types: []string{"2p"}, Counts: map[string]int{"2p": 40}, Seed: 7})
		eight := collect(t, g, Options{Types: []string{"2p"}, Counts: map[string]int{"2p": 40}, Seed: 8})
		if fmt.Sprint(seven) == fmt.Sprint(eight) {
			t.Errorf("%s: the seed has no effect", split)
		}
	}
}

// TestRules checks every rule of BetaE's generator on what was accepted.
func TestRules(t *testing.T) {
	d := loadTiny(t)
	for _, split := range []string{"train", "valid", "test"} {
		for _, maxAnswers := range []int{0, 3} {
			g, _ := NewGraphs(d, split)
			qs := collect(t, g, Options{Types: allTypes, Counts: smallCounts(), Seed: 1, MaxAnswers: maxAnswers})
			capped := maxAnswers
			if capped == 0 {
				capped = DefaultMaxAnswers
				if split == "train" {
					capped = 1 << 30
				}
			}
			big := answer.NewEngine(g.Big)
			seen := map[string]bool{}
			perType := map[string]int{}
			for _, q := range qs {
				perType[q.Type]++
				key := q.String()
				if seen[key] {
					t.Fatalf("%s: repeated query %s", split, key)
				}
				seen[key] = true
				ab := big.Answers(q.Grounded).IDs()
				if len(ab) == 0 {
					t.Fatalf("%s %s: no answer", split, key)
				}
				if split == "train" {
					if len(q.Easy) != 0 || !slices.Equal(q.Hard, ab) || len(ab) > capped {
						t.Fatalf("train %s: easy %v hard %v, want hard %v", key, q.Easy, q.Hard, ab)
					}
				} else {
					as := answer.NewEngine(g.Small).Answers(q.Grounded).IDs()
					hard := sortedDifference(ab, as)
					extra := sortedDifference(as, ab)
					if q.Type != "1p" && (!slices.Equal(q.Easy, as) || !slices.Equal(q.Hard, hard)) {
						t.Fatalf("%s %s: easy %v hard %v, want %v %v", split, key, q.Easy, q.Hard, as, hard)
					}
					if len(q.Hard) == 0 || len(q.Hard) > capped || len(sortedDifference(q.Hard, q.Easy)) != len(q.Hard) {
						t.Fatalf("%s %s: hard %v easy %v (cap %d)", split, key, q.Hard, q.Easy, capped)
					}
					if hasNegationRule(q.Structure) && len(extra) == 0 {
						t.Fatalf("%s %s: negation query without an extra negative", split, key)
					}
					if len(extra) > capped {
						t.Fatalf("%s %s: %d extra negatives above the cap", split, key, len(extra))
					}
				}
				checkGrounding(t, q)
			}
			for _, typ := range allTypes[1:] {
				s, _ := resolveType(typ)
				if perType[s.Name()] != 40 {
					t.Errorf("%s cap %d: %d queries of %s, want 40", split, maxAnswers, perType[s.Name()], s.Name())
				}
			}
		}
	}
}

// checkGrounding checks BetaE's grounding constraints: along a chain no relation is
// followed by its own inverse, and branches of the same shape differ.
func checkGrounding(t *testing.T, q *Query) {
	var walk func(n *query.Node)
	walk = func(n *query.Node) {
		switch n.Kind {
		case query.Chain:
			prev := int32(-1)
			for _, op := range n.Ops {
				if op.Kind != query.Project {
					continue
				}
				r := q.Relations[op.Slot]
				if prev >= 0 && r != prev && r>>1 == prev>>1 {
					t.Fatalf("%s: relation %d follows its inverse %d", q, r, prev)
				}
				prev = r
			}
			walk(n.Base)
		case query.And, query.Or:
			for i, a := range n.Branches {
				for _, b := range n.Branches[i+1:] {
					if q.NodeString(a) == q.NodeString(b) {
						t.Fatalf("%s: two branches grounded alike", q)
					}
				}
				walk(a)
			}
		}
	}
	walk(q.Structure.Root)
}

func TestLinks(t *testing.T) {
	d := loadTiny(t)
	for _, split := range []string{"train", "valid", "test"} {
		g, _ := NewGraphs(d, split)
		qs := collect(t, g, Options{Types: []string{"1p"}})
		if len(qs) != g.Own.NumRuns() {
			t.Errorf("%s: %d 1p queries for %d pairs", split, len(qs), g.Own.NumRuns())
		}
		for _, q := range qs {
			own := g.Own.Out(q.Anchors[0], q.Relations[0])
			if !slices.Equal(q.Hard, own) {
				t.Fatalf("%s %s: hard %v, want the split's tails %v", split, q, q.Hard, own)
			}
			if g.Small != nil && !slices.Equal(q.Easy, g.Small.Out(q.Anchors[0], q.Relations[0])) {
				t.Fatalf("%s %s: easy %v", split, q, q.Easy)
			}
		}
		some := collect(t, g, Options{Types: []string{"1p"}, Counts: map[string]int{"1p": 5}, Seed: 3})
		if len(some) != 5 {
			t.Errorf("%s: asked 5 1p queries, got %d", split, len(some))
		}
	}
}

func TestImpossibleCount(t *testing.T) {
	defer func(n int) { stallAttempts = n }(stallAttempts)
	stallAttempts = 20_000
	d := loadTiny(t)
	g, _ := NewGraphs(d, "valid")
	_, err := Generate(context.Background(), g, Options{Types: []string{"3in"}, Counts: map[string]int{"3in": 1_000_000}},
		func(*Query) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "3in") || !strings.Contains(err.Error(), "--count") {
		t.Fatalf("want an error naming the type and the flag, got %v", err)
	}
}

func TestUnknownType(t *testing.T) {
	d := loadTiny(t)
	g, _ := NewGraphs(d, "valid")
	for _, typ := range []string{"5p", "(('e',('r',)),('e',('x',)))"} {
		_, err := Generate(context.Background(), g, Options{Types: []string{typ}}, func(*Query) error { return nil })
		if err == nil {
			t.Errorf("%s accepted", typ)
		}
	}
}

func TestDefaultCounts(t *testing.T) {
	d := loadTiny(t)
	train, _ := NewGraphs(d, "train")
	test, _ := NewGraphs(d, "test")
	pairs := train.Own.NumRuns()
	tests := []struct {
		dataset string
		g       *Graphs
		typ     string
		neg     bool
		want    int
	}{
		{"x", train, "2p", false, pairs}, {"x", train, "2in", true, pairs / 10}, {"x", train, "1p", false, -1},
		{"FB15k-237", test, "2p", false, 5000}, {"nell-995", test, "pni", true, 4000}, {"FB15k", test, "ip", false, 8000},
		{"mykg", test, "3in", true, 5000},
	}
	for _, tc := range tests {
		if got := DefaultCount(tc.dataset, tc.g, tc.typ, tc.neg); got != tc.want {
			t.Errorf("%s %s %s: %d, want %d", tc.dataset, tc.g.Split, tc.typ, got, tc.want)
		}
	}
}

func TestImportBetaE(t *testing.T) {
	d := loadTiny(t)
	g, _ := NewGraphs(d, "test")
	var qs []*Query
	st, err := ImportBetaE("../../testdata/tiny-queries.pkl", g, func(q *Query) error { qs = append(qs, q); return nil })
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range st {
		names = append(names, s.Type)
	}
	if want := []string{"1p", "2p", "2i", "2u", "up", "2in", "pni", "2u-DM", "up-DM"}; !slices.Equal(names, want) {
		t.Fatalf("types %v, want %v", names, want)
	}
	// Its progress line says the queries were imported, none rejected, and how many have no
	// hard answer on the split (they are kept).
	if line := st[0].String(); !strings.Contains(line, "6 queries") || !strings.Contains(line, "imported (") ||
		!strings.Contains(line, " without a hard answer)") || strings.Contains(line, "rejected") {
		t.Errorf("progress line %q", line)
	}
	big, small := answer.NewEngine(g.Big), answer.NewEngine(g.Small)
	byKey := map[string]*Query{}
	for _, q := range qs {
		as := small.Answers(q.Grounded)
		if !slices.Equal(q.Easy, as.IDs()) || !slices.Equal(q.Hard, answer.Difference(big.Answers(q.Grounded), as).IDs()) {
			t.Fatalf("%s: wrong answers", q)
		}
		byKey[q.String()] = q
	}
	// The De Morgan forms answer like their DNF twins.
	for _, q := range qs {
		if q.Type != "2u-DM" {
			continue
		}
		a, b := q.Anchors, q.Relations
		twin := byKey[fmt.Sprintf("((%d,(%d,)),(%d,(%d,)),(-1,))", a[0], b[0], a[1], b[1])]
		if twin == nil || !slices.Equal(twin.Hard, q.Hard) || !slices.Equal(twin.Easy, q.Easy) {
			t.Fatalf("%s: differs from its DNF twin", q)
		}
	}
	// Deterministic: importing twice gives the same order.
	var again []*Query
	ImportBetaE("../../testdata/tiny-queries.pkl", g, func(q *Query) error { again = append(again, q); return nil })
	for i := range qs {
		if qs[i].String() != again[i].String() {
			t.Fatal("import order is not deterministic")
		}
	}
}

func TestImportBadInput(t *testing.T) {
	d := loadTiny(t)
	g, _ := NewGraphs(d, "test")
	tests := []struct{ file, want string }{
		{"../../testdata/bad-queries.pkl", "not a readable BetaE query pickle"},
		{"../../testdata/outofrange-queries.pkl", "anchor entity id 999 out of range"},
		{"../../testdata/missing.pkl", "no such file"},
		{"../../testdata/tiny/train.tsv", "not a readable BetaE query pickle"},
	}
	for _, tc := range tests {
		_, err := ImportBetaE(tc.file, g, func(*Query) error { return nil })
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), strings.TrimPrefix(tc.file, "../../")) {
			t.Errorf("%s: got %v, want an error naming the file and %q", tc.file, err, tc.want)
		}
	}
	train, _ := NewGraphs(d, "train")
	if _, err := ImportBetaE("../../testdata/tiny-queries.pkl", train, func(*Query) error { return nil }); err == nil {
		t.Error("import into train accepted")
	}
}

// TestImportEmptyPickle: a pickle without queries is an error naming it, and nothing is
// written (an empty queries file would train or rank on nothing without a word).
func TestImportEmptyPickle(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty-queries.pkl")
	// pickle.dumps({}, protocol=2): an empty dict.
	if err := os.WriteFile(empty, []byte("\x80\x02}q\x00."), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "q.arrow")
	err := ImportToFile(Source{Dir: "../../testdata/tiny"}, "test", empty, out, nil)
	if err == nil || !strings.Contains(err.Error(), empty+": the pickle holds no queries") {
		t.Fatalf("error %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused import left %s", out)
	}
}

func TestDatasetName(t *testing.T) {
	for name, want := range map[string]string{
		"fb15k-237": "", "NELL-995": "", "données ouvertes": "", "tiny": "",
		"": "blank", "  ": "blank", "a\tb": `'\t'`, "x\ny": `'\n'`, "a\x7fb": `'\x7f'`, "a|b": "'|'",
	} {
		err := kg.CheckName(name)
		if (want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", name, err, want)
		}
	}
	// A folder whose name cannot be the dataset's is named, with the flag that fixes it.
	dir := filepath.Join(t.TempDir(), "a|b")
	if err := os.CopyFS(dir, os.DirFS("../../testdata/tiny")); err != nil {
		t.Fatal(err)
	}
	if _, err := (Source{Dir: dir}).Load(nil); err == nil || !strings.Contains(err.Error(), dir+": the folder's name") || !strings.Contains(err.Error(), "--dataset") {
		t.Errorf("a folder named a|b: %v", err)
	}
	if _, err := (Source{Dir: dir, Dataset: "ab"}).Load(nil); err != nil {
		t.Errorf("a folder named a|b, with --dataset ab: %v", err)
	}
}
