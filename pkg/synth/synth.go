// Package synth makes synthetic knowledge graphs for scaling measurements (sample synth,
// make bench-scale): graphs of any size with a power-law degree distribution, written in
// the dataset layout every stage reads (README "Datasets"), so that the whole pipeline
// can be timed on 15 thousand, 1.5 million or more entities without a real KG of that
// size.
//
// The graph: every entity i is the head of one "covering" fact (i, r, t), r = i mod R,
// which keeps every entity in train (the ids are then dense, as the loader requires
// without an entity table, and every held-out fact's entities occur in train, as BetaE's
// splits guarantee) and every relation used. The other facts draw their head and tail
// independently from a power law over the entities and their relation from one over the
// relations: the entity of popularity rank k (a seeded permutation decides which entity
// that is) is drawn with probability ∝ k^(−s), s = Options.Skew. The number of facts an
// entity is in then follows a power law P(deg ≥ x) ∝ x^(−1/s), the shape of real KGs'
// degree distributions (s = 0.6: exponent 1 + 1/s ≈ 2.7). Facts are distinct, without
// self-loops; duplicates drawn are redrawn. The non-covering facts go to valid and test
// with probabilities ValidFrac and TestFrac, the rest to train.
//
// Each fact (h, r, t), r a forward relation 0..R−1, is written in both directions in
// BetaE's ids: "h 2r t" and "t 2r+1 h", so the files are what `sample --format ids`
// reads. Everything is drawn from one PCG generator seeded with Options.Seed: the same
// options give byte-identical files.
package synth

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/sysmem"
)

// Options are a synthetic graph's parameters.
type Options struct {
	Entities  int     // N, entity ids 0..N−1
	Relations int     // R forward relations; relation ids 0..2R−1 (2k forward, 2k+1 inverse)
	Edges     int     // facts in all three splits, each listed in both directions (2·Edges rows)
	Seed      uint64  // the generator's seed
	Skew      float64 // power-law exponent s of the popularity ranks, in (0, 1); 0: DefaultSkew
	ValidFrac float64 // share of the non-covering facts held out for valid
	TestFrac  float64 // and for test
}

// Defaults: the skew of the bench graphs, and held-out shares near FB15k-237's (5.6% of
// its facts are valid, 6.6% test).
const (
	DefaultSkew      = 0.6
	DefaultValidFrac = 0.05
	DefaultTestFrac  = 0.05
)

// Graph is a generated graph: its facts by split, each a key (h·R + r)·N + t, sorted.
type Graph struct {
	Options
	Train, Valid, Test []uint64
}

// Fact decodes a key into head, forward relation and tail.
func (g *Graph) Fact(key uint64) (h, r, t int32) {
	n, nr := uint64(g.Entities), uint64(g.Relations)
	t = int32(key % n)
	hr := key / n
	return int32(hr / nr), int32(hr % nr), t
}

func (o *Options) check() error {
	if o.Skew == 0 {
		o.Skew = DefaultSkew
	}
	switch {
	case o.Entities < 2:
		return fmt.Errorf("synth: --entities %d: want at least 2", o.Entities)
	case o.Entities > math.MaxInt32:
		return fmt.Errorf("synth: --entities %d: ids are 32-bit, at most %d", o.Entities, math.MaxInt32)
	case o.Relations < 1:
		return fmt.Errorf("synth: --relations %d: want at least 1", o.Relations)
	case o.Relations > math.MaxInt32/2:
		return fmt.Errorf("synth: --relations %d: relation ids 2R must fit 32 bits", o.Relations)
	case o.Edges < o.Entities:
		return fmt.Errorf("synth: --edges %d is below --entities %d: every entity needs a fact in train", o.Edges, o.Entities)
	case o.Relations > o.Edges:
		return fmt.Errorf("synth: --relations %d is above --edges %d: at most %d relations can have a fact", o.Relations, o.Edges, o.Edges)
	case !(o.Skew > 0 && o.Skew < 1):
		return fmt.Errorf("synth: --skew %g: want a number in (0, 1)", o.Skew)
	case !(o.ValidFrac >= 0 && o.TestFrac >= 0 && o.ValidFrac+o.TestFrac < 1):
		return fmt.Errorf("synth: valid and test shares %g and %g: want shares ≥ 0 summing to less than 1", o.ValidFrac, o.TestFrac)
	}
	n, r := float64(o.Entities), float64(o.Relations)
	if n*n*r >= 1<<62 {
		return fmt.Errorf("synth: %d entities × %d relations × %d entities do not fit the 62-bit fact keys", o.Entities, o.Relations, o.Entities)
	}
	// Distinct facts without self-loops: at most N·(N−1)·R. Far below it duplicates make
	// drawing slow; require a quarter of the space free.
	if space := n * (n - 1) * r; float64(o.Edges) > space/4 {
		return fmt.Errorf("synth: --edges %d: %d entities and %d relations hold %.0f distinct facts; ask for at most a quarter of that", o.Edges, o.Entities, o.Relations, space)
	}
	if need, have := o.memoryNeed(), sysmem.Physical(); need > have {
		return fmt.Errorf("synth: %d facts on %d entities and %d relations need about %.1f GiB, more than this machine's %.1f GiB; lower --edges",
			o.Edges, o.Entities, o.Relations, need/(1<<30), have/(1<<30))
	}
	return nil
}

// memoryNeed is a lower bound on Generate's memory in bytes: the fact keys while drawing
// (8 bytes each, and as much again while the slice grows), the splits' copy of them, and
// the entity and relation tables.
func (o *Options) memoryNeed() float64 {
	return 24*float64(o.Edges) + 12*float64(o.Entities) + 4*float64(o.Relations)
}

// powerLaw draws popularity ranks 0..n−1 with P(k) ∝ (k+1)^(−s), through the inverse of
// the continuous distribution's CDF on [1, n+1).
type powerLaw struct {
	n       int
	a, invE float64 // (n+1)^(1−s) − 1 and 1/(1−s)
}

func newPowerLaw(n int, s float64) powerLaw {
	return powerLaw{n: n, a: math.Pow(float64(n+1), 1-s) - 1, invE: 1 / (1 - s)}
}

func (p powerLaw) draw(rng *rand.Rand) int {
	k := int(math.Pow(1+rng.Float64()*p.a, p.invE)) - 1
	return min(max(k, 0), p.n-1)
}

// maxRounds bounds the redraws of duplicate facts; check's bound on the edge count keeps
// the duplicates of a round a small share, so a few rounds suffice.
const maxRounds = 50

// Generate draws the graph.
func Generate(o Options) (*Graph, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	n, nr := o.Entities, o.Relations
	rng := rand.New(rand.NewPCG(o.Seed, 0x5e7_6a4f))
	perm := make([]int32, n) // popularity rank → entity
	for i := range perm {
		perm[i] = int32(i)
	}
	rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	ents, rels := newPowerLaw(n, o.Skew), newPowerLaw(nr, o.Skew)
	relPerm := make([]int32, nr)
	for i := range relPerm {
		relPerm[i] = int32(i)
	}
	rng.Shuffle(nr, func(i, j int) { relPerm[i], relPerm[j] = relPerm[j], relPerm[i] })
	key := func(h, r, t int32) uint64 { return (uint64(h)*uint64(nr)+uint64(r))*uint64(n) + uint64(t) }

	facts := make([]uint64, 0, o.Edges)
	cover := make([]uint64, n) // entity i's covering fact
	for i := range n {
		t := perm[ents.draw(rng)]
		if t == int32(i) {
			t = int32((i + 1) % n)
		}
		cover[i] = key(int32(i), int32(i%nr), t)
		facts = append(facts, cover[i])
	}
	for round := 0; ; round++ {
		for len(facts) < o.Edges {
			h, t := perm[ents.draw(rng)], perm[ents.draw(rng)]
			if h == t {
				continue
			}
			facts = append(facts, key(h, relPerm[rels.draw(rng)], t))
		}
		slices.Sort(facts)
		facts = slices.Compact(facts)
		if len(facts) == o.Edges {
			break
		}
		if round == maxRounds {
			return nil, fmt.Errorf("synth: %d distinct facts not reached in %d rounds of redrawing duplicates (have %d); lower --edges or --skew", o.Edges, maxRounds, len(facts))
		}
	}

	// The splits, in key order: a covering fact stays in train.
	g := &Graph{Options: o}
	for _, k := range facts {
		h := k / uint64(n) / uint64(nr)
		u := rng.Float64()
		switch {
		case cover[h] == k || u >= o.ValidFrac+o.TestFrac:
			g.Train = append(g.Train, k)
		case u < o.ValidFrac:
			g.Valid = append(g.Valid, k)
		default:
			g.Test = append(g.Test, k)
		}
	}
	return g, nil
}

// writeFacts writes the facts of one split, both directions of each, as "head<TAB>relation
// <TAB>tail" lines in BetaE's ids.
func (g *Graph) writeFacts(w io.Writer, facts []uint64) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	var line []byte
	for _, k := range facts {
		h, r, t := g.Fact(k)
		line = line[:0]
		for _, tr := range [2][3]int64{{int64(h), 2 * int64(r), int64(t)}, {int64(t), 2*int64(r) + 1, int64(h)}} {
			line = strconv.AppendInt(line, tr[0], 10)
			line = append(line, '\t')
			line = strconv.AppendInt(line, tr[1], 10)
			line = append(line, '\t')
			line = strconv.AppendInt(line, tr[2], 10)
			line = append(line, '\n')
		}
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// CheckOutput refuses a folder Write would refuse, so that a run can be refused before it
// generates the graph (half a minute at 30M facts): no folder ("") or stdout ("-"), and a
// folder already holding any file a dataset is read from, not only those Write makes: a
// stale entities.tsv or entity_labels.tsv would silently join the new graph.
func CheckOutput(dir string) error {
	switch dir {
	case "":
		return fmt.Errorf("synth: -o is empty: want the dataset folder to write")
	case "-":
		return fmt.Errorf("synth: -o -: sample synth writes a dataset folder of several files, not a stream to stdout; give a folder")
	}
	for _, name := range append(kg.DatasetFiles(), Files...) {
		p := filepath.Join(dir, name)
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("synth: %s already exists; sample synth writes a new dataset folder and overwrites none, nor mixes its files with another dataset's (remove it or choose another -o)", p)
		}
	}
	return nil
}

// Files are the files Write makes in its folder.
var Files = []string{"train.tsv", "valid.tsv", "test.tsv", "relations.tsv", "synth.json"}

// Write writes the graph into dir in the dataset layout: train.tsv, valid.tsv and
// test.tsv (BetaE ids, both directions), relations.tsv (2R names, +rK and -rK, so that the
// relation count is 2R whatever was drawn) and synth.json (the options and fact counts,
// for the record). dir is created if missing; a file of these names, or any other file a
// dataset is read from (kg.DatasetFiles), already in it is an error, so that no dataset is
// overwritten or mixed into the new one. Each file is written to a temporary file and
// renamed when all are complete; on an error none is left. The files are claimed for the
// run (outfile.Claim), so that a second run into the same folder fails at once rather
// than both passing the check above and the later replacing the other's files.
func (g *Graph) Write(dir string) error {
	if err := CheckOutput(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	var outs []outfile.Path
	for _, name := range Files {
		outs = append(outs, outfile.Path{Flag: "-o", Path: filepath.Join(dir, name), File: true})
	}
	release, err := outfile.Claim(nil, outs)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	defer release()
	if err := CheckOutput(dir); err != nil { // again, now that the files are claimed
		return err
	}
	var files []*outfile.File
	abort := func(err error) error {
		for _, f := range files {
			f.Abort()
		}
		return err
	}
	write := func(name string, body func(io.Writer) error) error {
		f, err := outfile.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		files = append(files, f)
		if err := body(f); err != nil {
			return fmt.Errorf("%s: %w", f.Name(), err)
		}
		return nil
	}
	for _, s := range []struct {
		name  string
		facts []uint64
	}{{"train.tsv", g.Train}, {"valid.tsv", g.Valid}, {"test.tsv", g.Test}} {
		if err := write(s.name, func(w io.Writer) error { return g.writeFacts(w, s.facts) }); err != nil {
			return abort(err)
		}
	}
	err = write("relations.tsv", func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		for r := range g.Relations {
			fmt.Fprintf(bw, "%d\t+r%d\n%d\t-r%d\n", 2*r, r, 2*r+1, r)
		}
		return bw.Flush()
	})
	if err != nil {
		return abort(err)
	}
	err = write("synth.json", func(w io.Writer) error {
		b, err := json.MarshalIndent(map[string]any{
			"entities": g.Entities, "relations": g.Relations, "edges": g.Edges, "seed": g.Seed, "skew": g.Skew,
			"valid_frac": g.ValidFrac, "test_frac": g.TestFrac,
			"train_facts": len(g.Train), "valid_facts": len(g.Valid), "test_facts": len(g.Test),
		}, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	})
	if err != nil {
		return abort(err)
	}
	for i, f := range files {
		if err := f.Commit(); err != nil {
			for _, done := range files[:i] {
				os.Remove(filepath.Join(dir, filepath.Base(done.Name())))
			}
			return abort(errors.Join(err, fmt.Errorf("synth: the files of %s written before it were removed", dir)))
		}
	}
	return nil
}
