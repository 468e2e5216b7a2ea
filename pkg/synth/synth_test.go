package synth

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/sysmem"
)

func write(t *testing.T, o Options) string {
	t.Helper()
	g, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "kg")
	if err := g.Write(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readAll(t *testing.T, dir string) []byte {
	t.Helper()
	var all []byte
	for _, f := range Files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// TestSynthDataset writes graphs and reads them back with the dataset loader: every
// entity and relation present, the requested number of facts in both directions, valid
// and test facts all kept (their entities occur in train), distinct facts without
// self-loops, held-out shares near the options', and a heavy-tailed degree distribution.
func TestSynthDataset(t *testing.T) {
	for _, o := range []Options{
		{Entities: 2000, Relations: 20, Edges: 40000, Seed: 1, ValidFrac: 0.05, TestFrac: 0.05},
		{Entities: 500, Relations: 3, Edges: 10000, Seed: 9, Skew: 0.8, ValidFrac: 0.1, TestFrac: 0.02},
		{Entities: 50, Relations: 1, Edges: 50, Seed: 2}, // covering facts only: all in train
	} {
		dir := write(t, o)
		d, err := kg.Load(dir, kg.FormatIDs)
		if err != nil {
			t.Fatal(err)
		}
		if d.NumEntities != o.Entities || d.NumRelations != 2*o.Relations {
			t.Fatalf("%+v: loaded %d entities, %d relations", o, d.NumEntities, d.NumRelations)
		}
		rows := len(d.Train) + len(d.Valid) + len(d.Test)
		if rows != 2*o.Edges {
			t.Fatalf("%+v: %d rows, want %d (every fact in both directions, none dropped)", o, rows, 2*o.Edges)
		}
		seen := map[kg.Triple]bool{}
		degree := make([]int, o.Entities)
		for _, s := range [][]kg.Triple{d.Train, d.Valid, d.Test} {
			for _, tr := range s {
				if seen[tr] {
					t.Fatalf("%+v: fact %v repeated", o, tr)
				}
				seen[tr] = true
				if tr.Head == tr.Tail {
					t.Fatalf("%+v: self-loop %v", o, tr)
				}
				degree[tr.Head]++
			}
		}
		held := float64(len(d.Valid)+len(d.Test)) / float64(rows)
		want := (o.ValidFrac + o.TestFrac) * float64(o.Edges-o.Entities) / float64(o.Edges)
		if held < want-0.02 || held > want+0.02 {
			t.Fatalf("%+v: %.3f of the rows held out, want about %.3f", o, held, want)
		}
		if o.Edges >= 20*o.Entities {
			slices.Sort(degree)
			mean := float64(rows) / float64(o.Entities)
			maxDeg := degree[len(degree)-1]
			top := 0
			for _, x := range degree[len(degree)-len(degree)/100:] {
				top += x
			}
			// A Poisson graph of this mean has a maximum near 2·mean and its top 1%
			// holds about 2% of the edges.
			if float64(maxDeg) < 10*mean || float64(top) < 0.08*float64(rows) {
				t.Fatalf("%+v: max degree %d (mean %.1f), top 1%% hold %d of %d rows: not heavy-tailed", o, maxDeg, mean, top, rows)
			}
		}
	}
}

// TestSynthDeterministic: the same options give byte-identical files, another seed others.
func TestSynthDeterministic(t *testing.T) {
	o := Options{Entities: 1000, Relations: 7, Edges: 15000, Seed: 4, ValidFrac: 0.05, TestFrac: 0.05}
	a, b := readAll(t, write(t, o)), readAll(t, write(t, o))
	if !bytes.Equal(a, b) {
		t.Fatal("the same options gave different files")
	}
	o.Seed = 5
	if bytes.Equal(a, readAll(t, write(t, o))) {
		t.Fatal("another seed gave the same files")
	}
}

// TestPowerLaw: popularity ranks are drawn within [0, n) with P(k) ∝ (k+1)^(−s), from
// the most popular rank to the last, each within five standard deviations of its share.
func TestPowerLaw(t *testing.T) {
	const n, draws = 1000, 400000
	for _, s := range []float64{0.3, 0.6, 0.9} {
		p := newPowerLaw(n, s)
		rng := rand.New(rand.NewPCG(7, 11))
		count := make([]int, n)
		for range draws {
			k := p.draw(rng)
			if k < 0 || k >= n {
				t.Fatalf("s=%g: rank %d outside [0, %d)", s, k, n)
			}
			count[k]++
		}
		// The continuous inverse CDF puts rank k's mass on [k+1, k+2): its weight is
		// ∫ x^(−s) over it, which (k+1)^(−s) approaches as k grows; rank 0 is compared with
		// its integral, the others with their neighbours' at the same accuracy.
		w := func(k int) float64 { return (math.Pow(float64(k+2), 1-s) - math.Pow(float64(k+1), 1-s)) / (1 - s) }
		total := (math.Pow(n+1, 1-s) - 1) / (1 - s)
		for _, k := range []int{0, 1, 3, 9, 99, n - 1} {
			want := draws * w(k) / total
			if got := float64(count[k]); !(math.Abs(got-want) <= 5*math.Sqrt(want)) {
				t.Errorf("s=%g: rank %d drawn %.0f times, want %.0f ± %.0f", s, k, got, want, 5*math.Sqrt(want))
			}
		}
	}
}

func TestSynthErrors(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Entities: 1, Relations: 1, Edges: 5}, "--entities 1"},
		{Options{Entities: 10, Relations: 0, Edges: 20}, "--relations 0"},
		{Options{Entities: 10, Relations: 1, Edges: 5}, "below --entities"},
		{Options{Entities: 10, Relations: 1, Edges: 30}, "quarter"},
		{Options{Entities: 10, Relations: 2, Edges: 20, Skew: 1.5}, "--skew"},
		{Options{Entities: 10, Relations: 2, Edges: 20, ValidFrac: 0.6, TestFrac: 0.5}, "shares"},
		{Options{Entities: 100, Relations: 1000000000, Edges: 1000}, "--relations 1000000000 is above --edges 1000"},
		{Options{Entities: 2000000000, Relations: 1, Edges: 1 << 50}, "need about"}, // petabytes: refused before any allocation
		// 10·9·1 = 90 distinct facts: a quarter is 22.5.
		{Options{Entities: 10, Relations: 1, Edges: 23}, "hold 90 distinct facts"},
		{Options{Entities: 1 << 21, Relations: 1 << 20, Edges: 1 << 21}, "do not fit the 62-bit fact keys"},
	} {
		if _, err := Generate(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error containing %q", c.o, err, c.want)
		}
	}
	// At the bounds: a quarter of the distinct facts exactly (9·8·1 / 4 = 18), keys just
	// within 62 bits (2^20 · 2^20 · 2^21 = 2^61; refused for its memory, after the key check).
	if _, err := Generate(Options{Entities: 9, Relations: 1, Edges: 18, Seed: 1}); err != nil {
		t.Errorf("a quarter of the distinct facts: %v", err)
	}
	if have := sysmem.Physical(); have != sysmem.Unknown {
		// Just above this machine's memory by the estimate (24 bytes a fact and then some):
		// refused before any allocation.
		o := Options{Entities: 1 << 20, Relations: 1 << 21, Edges: int(have/24) + 1}
		if _, err := Generate(o); err == nil || !strings.Contains(err.Error(), "need about") {
			t.Errorf("%+v, on a machine of %.0f bytes: got %v, want a refusal for memory", o, have, err)
		}
	}
	g, err := Generate(Options{Entities: 20, Relations: 2, Edges: 40, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{"": "-o is empty", "-": "not a stream to stdout"} {
		if err := g.Write(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Write(%q): got %v, want an error containing %q", dir, err, want)
		}
	}
	if _, err := os.Stat("-"); err == nil {
		t.Error(`Write("-") made a folder named -`)
	}
	// Another dataset's files, written or only read by the loader, are neither overwritten
	// nor mixed into the new graph.
	for _, stale := range []string{"entities.tsv", "entity_labels.tsv.gz", "relations.txt", "test.txt"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, stale), []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := g.Write(dir); err == nil || !strings.Contains(err.Error(), stale+" already exists") {
			t.Errorf("beside a stale %s: got %v", stale, err)
		}
		if es, _ := os.ReadDir(dir); len(es) != 1 {
			t.Errorf("the refused Write beside %s left %d files", stale, len(es))
		}
	}
	// An existing dataset is not overwritten.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "train.tsv"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := g.Write(dir); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("got %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "train.tsv")); string(b) != "keep" {
		t.Fatal("train.tsv was overwritten")
	}
	if _, err := os.Stat(filepath.Join(dir, "valid.tsv")); err == nil {
		t.Fatal("a refused write left valid.tsv")
	}
}

// TestSynthWriteClaimed: while another run holds one of the dataset's files (its claim,
// outfile.Claim), Write fails at once, saying so, and leaves the folder as it was; once
// released, Write writes the dataset and leaves no lock file.
func TestSynthWriteClaimed(t *testing.T) {
	g, err := Generate(Options{Entities: 20, Relations: 2, Edges: 40, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	release, err := outfile.Claim(nil, []outfile.Path{{Flag: "-o", Path: filepath.Join(dir, "valid.tsv")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Write(dir); err == nil || !strings.Contains(err.Error(), "valid.tsv: another run is writing it") {
		t.Fatalf("Write beside a held claim: %v", err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 || es[0].Name() != ".valid.tsv.lock" {
		t.Fatalf("the refused Write left %v", es)
	}
	release()
	if err := g.Write(dir); err != nil {
		t.Fatal(err)
	}
	var names []string
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		names = append(names, e.Name())
	}
	if want := slices.Sorted(slices.Values(Files)); !slices.Equal(names, want) {
		t.Fatalf("folder holds %v, want %v", names, want)
	}
}
