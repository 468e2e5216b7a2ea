package answer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/query"
)

// referenceAnswers is a deliberately simple evaluator sharing no code with the engine: it
// parses the grounded tuple text itself and follows BetaE's achieve_answer with maps.
func referenceAnswers(text string, triples []kg.Triple, numEntities int) map[int32]bool {
	out := map[int32]map[int32][]int32{}
	for _, t := range triples {
		if out[t.Head] == nil {
			out[t.Head] = map[int32][]int32{}
		}
		out[t.Head][t.Relation] = append(out[t.Head][t.Relation], t.Tail)
	}
	v, rest := parseTuple(text)
	if rest != "" {
		panic("trailing " + rest)
	}
	return achieve(v.([]any), out, numEntities)
}

// parseTuple reads "(a,(b,c),...)" into nested []any of ints.
func parseTuple(s string) (any, string) {
	if s[0] == '(' {
		var items []any
		s = s[1:]
		for s[0] != ')' {
			var item any
			item, s = parseTuple(s)
			items = append(items, item)
			if s[0] == ',' {
				s = s[1:]
			}
		}
		return items, s[1:]
	}
	i := 0
	for i < len(s) && (s[i] == '-' || (s[i] >= '0' && s[i] <= '9')) {
		i++
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil {
		panic(err)
	}
	return n, s[i:]
}

func achieve(q []any, out map[int32]map[int32][]int32, n int) map[int32]bool {
	last := q[len(q)-1].([]any)
	allRelations := true
	for _, el := range last {
		if x, ok := el.(int); !ok || x == -1 {
			allRelations = false
		}
	}
	if allRelations {
		var set map[int32]bool
		if e, ok := q[0].(int); ok {
			set = map[int32]bool{int32(e): true}
		} else {
			set = achieve(q[0].([]any), out, n)
		}
		for _, el := range last {
			r := el.(int)
			next := map[int32]bool{}
			if r == -2 {
				for e := 0; e < n; e++ {
					if !set[int32(e)] {
						next[int32(e)] = true
					}
				}
			} else {
				for e := range set {
					for _, t := range out[e][int32(r)] {
						next[t] = true
					}
				}
			}
			set = next
		}
		return set
	}
	union := len(last) == 1 && last[0] == -1
	set := achieve(q[0].([]any), out, n)
	for i := 1; i < len(q); i++ {
		if union {
			if i == len(q)-1 {
				continue
			}
			for e := range achieve(q[i].([]any), out, n) {
				set[e] = true
			}
		} else {
			other := achieve(q[i].([]any), out, n)
			for e := range set {
				if !other[e] {
					delete(set, e)
				}
			}
		}
	}
	return set
}

func loadTiny(t testing.TB) *kg.Dataset {
	t.Helper()
	d, err := kg.Load("../../testdata/tiny", kg.FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// randomGrounded grounds s with random ids: half of the time uniformly, half of the time
// by walking edges backwards from a random entity, so that many queries have answers.
func randomGrounded(rng *rand.Rand, s *query.Structure, g *kg.Graph) *query.Grounded {
	q := &query.Grounded{Structure: s, Anchors: make([]int32, s.NumAnchors), Relations: make([]int32, s.NumRelations)}
	for i := range q.Anchors {
		q.Anchors[i] = int32(rng.IntN(g.NumEntities))
	}
	for i := range q.Relations {
		q.Relations[i] = int32(rng.IntN(g.NumRelations))
	}
	if rng.IntN(2) == 0 {
		walkBack(rng, g, q, s.Root, int32(rng.IntN(g.NumEntities)))
	}
	return q
}

func walkBack(rng *rand.Rand, g *kg.Graph, q *query.Grounded, n *query.Node, at int32) {
	switch n.Kind {
	case query.Anchor:
		q.Anchors[n.Slot] = at
	case query.Chain:
		for i := len(n.Ops) - 1; i >= 0; i-- {
			lo, hi := g.Runs(at)
			if n.Ops[i].Kind == query.Negate || hi == lo {
				continue
			}
			rel, tails := g.Run(lo + rng.IntN(hi-lo))
			q.Relations[n.Ops[i].Slot] = rel ^ 1
			at = tails[rng.IntN(len(tails))]
		}
		walkBack(rng, g, q, n.Base, at)
	default:
		for _, b := range n.Branches {
			walkBack(rng, g, q, b, at)
		}
	}
}

func TestEngineMatchesReference(t *testing.T) {
	d := loadTiny(t)
	all := slices.Concat(d.Train, d.Valid, d.Test)
	g := kg.NewGraph(d.NumEntities, d.NumRelations, all)
	eng := NewEngine(g)
	rng := rand.New(rand.NewPCG(1, 2))
	structures := []*query.Structure{query.MustParse("((('e',('r',)),('e',('r',)),('e',('r','n'))),('r',))"),
		query.MustParse("((('e',('r','r')),('e',('r',)),('u',)),('r','n','r'))")}
	for _, typ := range query.Types {
		structures = append(structures, query.MustParse(typ.Notation))
	}
	for _, s := range structures {
		nonEmpty, dense := 0, 0
		for i := 0; i < 600; i++ {
			q := randomGrounded(rng, s, g)
			got := eng.Answers(q)
			want := referenceAnswers(q.String(), all, d.NumEntities)
			ids := got.IDs()
			if len(ids) != len(want) || got.Len() != len(want) || !slices.IsSorted(ids) {
				t.Fatalf("%s %s: got %d answers %v, want %d", s.Name(), q, got.Len(), ids, len(want))
			}
			for _, e := range ids {
				if !want[e] || !got.Contains(e) {
					t.Fatalf("%s %s: %d is not an answer", s.Name(), q, e)
				}
			}
			if len(ids) > 0 {
				nonEmpty++
			}
			if got.Dense() {
				dense++
			}
		}
		if nonEmpty < 30 {
			t.Errorf("%s: only %d of 600 random queries have answers; the test is too weak", s, nonEmpty)
		}
		t.Logf("%-6s non-empty %3d dense %3d", s.Name(), nonEmpty, dense)
	}
}

func TestSetAlgebra(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 63, 64, 65, 200, 1000} {
		for trial := 0; trial < 50; trial++ {
			a, am := randomSet(rng, n)
			b, bm := randomSet(rng, n)
			check := func(name string, s *Set, want func(e int32) bool) {
				cnt := 0
				for e := int32(0); int(e) < n; e++ {
					if s.Contains(e) != want(e) {
						t.Fatalf("n=%d %s: entity %d", n, name, e)
					}
					if want(e) {
						cnt++
					}
				}
				if s.Len() != cnt || len(s.IDs()) != cnt {
					t.Fatalf("n=%d %s: len %d want %d", n, name, s.Len(), cnt)
				}
				if s.Dense() != (cnt > sparseLimit(n)) && name != "intersect" && name != "difference" {
					t.Fatalf("n=%d %s: dense=%v with %d of %d", n, name, s.Dense(), cnt, n)
				}
			}
			check("intersect", Intersect(a, b), func(e int32) bool { return am[e] && bm[e] })
			check("union", Union(a, b), func(e int32) bool { return am[e] || bm[e] })
			check("complement", Complement(a), func(e int32) bool { return !am[e] })
			check("difference", Difference(a, b), func(e int32) bool { return am[e] && !bm[e] })
		}
	}
}

func randomSet(rng *rand.Rand, n int) (*Set, map[int32]bool) {
	m := map[int32]bool{}
	density := rng.Float64()
	if rng.IntN(2) == 0 {
		density /= 40
	}
	var ids []int32
	for e := int32(0); int(e) < n; e++ {
		if rng.Float64() < density {
			m[e] = true
			ids = append(ids, e)
		}
	}
	return FromSorted(n, ids), m
}

func ExampleEngine_Answers() {
	// Three facts and their inverses: 0 -r0-> 1, 0 -r0-> 2, 1 -r2-> 3.
	fact := func(h, r, t int32) kg.Triple { return kg.Triple{Head: h, Relation: r, Tail: t} }
	triples := []kg.Triple{fact(0, 0, 1), fact(1, 1, 0), fact(0, 0, 2), fact(2, 1, 0), fact(1, 2, 3), fact(3, 3, 1)}
	g := kg.NewGraph(4, 4, triples)
	q, _ := query.ParseGrounded("(0,(0,2))") // 2p: 0 -r0-> ? -r2-> ?
	fmt.Println(NewEngine(g).Answers(q).IDs())
	q, _ = query.ParseGrounded("((0,(0,)),(1,(2,-2)))") // 2in: r0-successors of 0 that are not r2-successors of 1
	fmt.Println(NewEngine(g).Answers(q).IDs())
	// Output:
	// [3]
	// [1 2]
}
