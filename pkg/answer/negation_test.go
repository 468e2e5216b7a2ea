package answer

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/query"
	"github.com/rocone/rocone/pkg/synth"
)

// BenchmarkNegation answers 2in queries on synthetic graphs of growing entity count and
// a fixed 2 million facts: "subtract" is the engine (the negated branch subtracted),
// "complement" the former evaluation, the intersection with the complement over every
// entity, which grows with the entity count.
func BenchmarkNegation(b *testing.B) {
	s := query.MustParse("(('e',('r',)),('e',('r','n')))")
	for _, n := range []int{15_000, 1_500_000} {
		g, err := synth.Generate(synth.Options{Entities: n, Relations: 20, Edges: 2_000_000, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		var ts []kg.Triple
		for _, k := range g.Train {
			h, r, t := g.Fact(k)
			ts = append(ts, kg.Triple{Head: h, Relation: 2 * r, Tail: t}, kg.Triple{Head: t, Relation: 2*r + 1, Tail: h})
		}
		graph := kg.NewGraph(n, 40, ts)
		eng := NewEngine(graph)
		rng := rand.New(rand.NewPCG(1, 2))
		var qs []*query.Grounded
		for len(qs) < 200 {
			q := randomGrounded(rng, s, graph)
			qs = append(qs, q)
		}
		b.Run(fmt.Sprintf("subtract/entities=%d", n), func(b *testing.B) {
			for b.Loop() {
				for _, q := range qs {
					eng.Answers(q)
				}
			}
		})
		b.Run(fmt.Sprintf("complement/entities=%d", n), func(b *testing.B) {
			for b.Loop() {
				for _, q := range qs {
					pos := eng.Project(Single(n, q.Anchors[0]), q.Relations[0])
					neg := eng.Project(Single(n, q.Anchors[1]), q.Relations[1])
					Intersect(pos, Complement(neg))
				}
			}
		})
	}
}

// TestNegationSubtracted checks the engine's subtraction against the complement on a
// graph where the negated sets are large (dense) and small (sparse).
func TestNegationSubtracted(t *testing.T) {
	g, err := synth.Generate(synth.Options{Entities: 3000, Relations: 3, Edges: 60000, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var ts []kg.Triple
	for _, k := range g.Train {
		h, r, tt := g.Fact(k)
		ts = append(ts, kg.Triple{Head: h, Relation: 2 * r, Tail: tt}, kg.Triple{Head: tt, Relation: 2*r + 1, Tail: h})
	}
	graph := kg.NewGraph(3000, 6, ts)
	eng := NewEngine(graph)
	rng := rand.New(rand.NewPCG(4, 5))
	for _, notation := range []string{"(('e',('r',)),('e',('r','n')))", "(('e',('r','r')),('e',('r','n')))", "(('e',('r','n')),('e',('r','n')))"} {
		s := query.MustParse(notation)
		dense := 0
		for range 300 {
			q := randomGrounded(rng, s, graph)
			got := eng.Answers(q)
			var want *Set
			for i, br := range s.Root.Branches {
				var x *Set
				x = Single(3000, q.Anchors[br.Base.Slot])
				for _, op := range br.Ops {
					if op.Kind == query.Negate {
						x = Complement(x)
					} else {
						x = eng.Project(x, q.Relations[op.Slot])
					}
				}
				if x.Dense() && br.Ops[len(br.Ops)-1].Kind != query.Negate {
					dense++ // a positive branch held as a bitset: Difference's dense path
				}
				if i == 0 {
					want = x
				} else {
					want = Intersect(want, x)
				}
			}
			if fmt.Sprint(got.IDs()) != fmt.Sprint(want.IDs()) {
				t.Fatalf("%s %s: got %v, want %v", notation, q, got.IDs(), want.IDs())
			}
		}
		if dense == 0 && notation != "(('e',('r','n')),('e',('r','n')))" {
			t.Errorf("%s: no dense branch set; the test misses the bitset path", notation)
		}
	}
}
