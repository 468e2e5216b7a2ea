package query

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestNamedTypesRoundTrip(t *testing.T) {
	for _, typ := range Types {
		s, err := Parse(typ.Notation)
		if err != nil {
			t.Fatalf("%s: %v", typ.Name, err)
		}
		if s.String() != typ.Notation || s.Name() != typ.Name {
			t.Errorf("%s: printed %s named %s", typ.Name, s, s.Name())
		}
		// Python's repr, with spaces and double quotes, parses to the same structure.
		py := strings.NewReplacer(",", ", ", "'", `"`).Replace(typ.Notation)
		s2, err := Parse(py)
		if err != nil || s2.String() != typ.Notation {
			t.Errorf("%s: python form %s gave %v, %v", typ.Name, py, s2, err)
		}
	}
}

func TestSizes(t *testing.T) {
	tests := []struct {
		name          string
		anchors, rels int
		neg, union    bool
	}{
		{"1p", 1, 1, false, false}, {"3p", 1, 3, false, false}, {"3i", 3, 3, false, false},
		{"ip", 2, 3, false, false}, {"pi", 2, 3, false, false}, {"2in", 2, 2, true, false},
		{"pni", 2, 3, true, false}, {"up", 2, 3, false, true}, {"up-DM", 2, 3, true, false},
	}
	for _, tc := range tests {
		s, _ := ByName(tc.name)
		if s.NumAnchors != tc.anchors || s.NumRelations != tc.rels || s.HasNegation() != tc.neg || s.HasUnion() != tc.union {
			t.Errorf("%s: anchors %d rels %d neg %v union %v", tc.name, s.NumAnchors, s.NumRelations, s.HasNegation(), s.HasUnion())
		}
	}
}

func TestCustomStructures(t *testing.T) {
	for _, n := range []string{
		"('e',('r','r','r','r'))",
		"(('e',('r',)),('e',('r',)),('e',('r',)),('e',('r',)))",
		"((('e',('r',)),('e',('r',)),('e',('r','n'))),('r',))",
		"((('e',('r','r')),('e',('r',)),('u',)),('r','r'))",
	} {
		s, err := Parse(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if s.String() != n || s.Name() != Custom {
			t.Errorf("%s: printed %s named %s", n, s, s.Name())
		}
	}
}

func TestMalformed(t *testing.T) {
	tests := []struct {
		in     string
		offset int
		msg    string
	}{
		{"('e',('r',)", 11, "missing ')'"},
		{"('e',('x',))", 6, "unknown symbol"},
		{"('e',('r'))", 9, "trailing comma"},
		{"(('e',('r',)),('u',))", 0, "at least 2 branches"},
		{"(('e',('r',)),('u',),('e',('r',)))", 14, "union marker must be the last"},
		{"('e',('r',)) x", 13, "trailing text"},
		{"'e'", 0, "must be a tuple"},
		{"(('e',('r',)),'e')", 14, "branch must be a tuple"},
		{"()", 0, "empty tuple"},
		{"(('r',('r',)),('e',('r',)))", 2, "base must be 'e'"},
		{"('',('r',))", 1, "unknown symbol"}, // an empty string is terminated
		{strings.Repeat("(", 1000), 65, "tuples nested more than 64 deep"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.in)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%s: want a SyntaxError, got %v", tc.in, err)
			continue
		}
		if se.Offset != tc.offset || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("%s: got offset %d %q, want offset %d containing %q", tc.in, se.Offset, se.Msg, tc.offset, tc.msg)
		}
	}
}

func TestGroundedRoundTrip(t *testing.T) {
	tests := []struct {
		text, typ string
		anchors   []int32
		rels      []int32
	}{
		{"((17,(5,)),(903,(12,-2)))", "2in", []int32{17, 903}, []int32{5, 12}},
		{"(((1,(2,)),(3,(4,)),(-1,)),(5,))", "up", []int32{1, 3}, []int32{2, 4, 5}},
		{"((1,(2,3,-2)),(4,(5,)))", "pni", []int32{1, 4}, []int32{2, 3, 5}},
		{"(((1,(2,-2)),(3,(4,-2))),(-2,6))", "up-DM", []int32{1, 3}, []int32{2, 4, 6}},
		{"((0,(0,)),(99,(19,-2)))", "2in", []int32{0, 99}, []int32{0, 19}}, // ids 0 and digits 9
	}
	for _, tc := range tests {
		g, err := ParseGrounded(tc.text)
		if err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		if g.String() != tc.text || g.Structure.Name() != tc.typ ||
			!equal(g.Anchors, tc.anchors) || !equal(g.Relations, tc.rels) {
			t.Errorf("%s: got %s %s %v %v", tc.text, g, g.Structure.Name(), g.Anchors, g.Relations)
		}
		if err := g.Validate(1000, 20); err != nil {
			t.Errorf("%s: %v", tc.text, err)
		}
		if err := g.Validate(10, 10); err == nil && tc.typ == "2in" {
			t.Errorf("%s: anchor 903 accepted with 10 entities", tc.text)
		}
	}
}

// TestValidate: ids are in [0, n): 0 and n-1 are accepted, n is not.
func TestValidate(t *testing.T) {
	g, err := ParseGrounded("((0,(0,)),(9,(4,-2)))")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		entities, relations int
		err                 string
	}{
		{10, 5, ""},
		{9, 5, "anchor entity id 9 out of range [0,9)"},
		{10, 4, "relation id 4 out of range [0,4)"},
	} {
		err := g.Validate(tc.entities, tc.relations)
		if (tc.err == "") != (err == nil) || err != nil && err.Error() != tc.err {
			t.Errorf("Validate(%d, %d) = %v, want %q", tc.entities, tc.relations, err, tc.err)
		}
	}
}

// TestNestingBound: a value nested maxDepth deep parses; one deeper is refused.
func TestNestingBound(t *testing.T) {
	nest := func(k int) string { return strings.Repeat("(", k) + "0" + strings.Repeat(",)", k) }
	p := &parser{in: nest(maxDepth)}
	if _, err := p.parseValue(0); err != nil {
		t.Errorf("%d tuples deep: %v", maxDepth, err)
	}
	p = &parser{in: nest(maxDepth + 1)}
	if _, err := p.parseValue(0); err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("%d tuples deep: %v, want an error", maxDepth+1, err)
	}
}

// TestErrorQuoting: an error quotes an input of up to maxQuoted bytes whole, a longer one
// by maxQuoted bytes around the fault, kept within the input, with "..." where the input
// goes on; clip cuts a piece past 40.
func TestErrorQuoting(t *testing.T) {
	long := strings.Repeat("abcdefghijklmnopqrstuvwxy", 40) // 1000 bytes
	for _, tc := range []struct {
		in     string
		offset int
		want   string
	}{
		{long[:maxQuoted], 7, fmt.Sprintf("query %q: at offset 7: bad", long[:maxQuoted])},
		{long, 500, fmt.Sprintf("query of 1000 bytes, from offset 400: %q...: at offset 500: bad", long[400:600])},
		{long, 30, fmt.Sprintf("query of 1000 bytes, from offset 0: %q...: at offset 30: bad", long[:200])},
		{long, 990, fmt.Sprintf("query of 1000 bytes, from offset 800: %q: at offset 990: bad", long[800:])}, // nothing follows: no "..."
	} {
		e := &SyntaxError{Input: tc.in, Offset: tc.offset, Msg: "bad"}
		if got := e.Error(); got != tc.want {
			t.Errorf("%d bytes, offset %d: %s\nwant %s", len(tc.in), tc.offset, got, tc.want)
		}
	}
	if s := strings.Repeat("x", 40); clip(s) != s {
		t.Errorf("clip of 40 bytes: %q", clip(s))
	}
	if s := strings.Repeat("x", 41); clip(s) != s[:40]+"..." {
		t.Errorf("clip of 41 bytes: %q", clip(s))
	}
}

func TestDNF(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		{"2u", []string{"('e',('r',))", "('e',('r',))"}},
		{"up", []string{"('e',('r','r'))", "('e',('r','r'))"}},
		{"2i", []string{"(('e',('r',)),('e',('r',)))"}},
		{"up-DM", []string{"((('e',('r','n')),('e',('r','n'))),('n','r'))"}},
	}
	for _, tc := range tests {
		s, _ := ByName(tc.name)
		bs, err := s.DNF()
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) != len(tc.want) {
			t.Fatalf("%s: %d branches", tc.name, len(bs))
		}
		for i, b := range bs {
			got, err := New(cloneTree(b))
			if err != nil || got.String() != tc.want[i] {
				t.Errorf("%s branch %d: %v %v", tc.name, i, got, err)
			}
		}
	}
	// up's branches keep the original slots: (e0,(r0,r2)) and (e1,(r1,r2)).
	up, _ := ByName("up")
	bs, _ := up.DNF()
	if bs[0].Base.Slot != 0 || bs[1].Base.Slot != 1 || bs[0].Ops[0].Slot != 0 || bs[0].Ops[1].Slot != 2 ||
		bs[1].Ops[0].Slot != 1 || bs[1].Ops[1].Slot != 2 {
		t.Errorf("up branches lost their slots")
	}
	// An intersection of unions expands to every combination.
	s := MustParse("((('e',('r',)),('e',('r',)),('u',)),(('e',('r',)),('e',('r',)),('u',)))")
	if bs, _ := s.DNF(); len(bs) != 4 {
		t.Errorf("want 4 branches, got %d", len(bs))
	}
	if _, err := MustParse("((('e',('r',)),('e',('r',)),('u',)),('n',))").DNF(); err == nil {
		t.Errorf("negated union accepted")
	}
	// A structure without a union gives itself, not a copy.
	for _, name := range []string{"1p", "3p", "2i", "ip", "pi", "2in", "pni", "up-DM"} {
		s, _ := ByName(name)
		if bs, err := s.DNF(); err != nil || len(bs) != 1 || bs[0] != s.Root {
			t.Errorf("%s: DNF %v, %v; want its own root", name, bs, err)
		}
	}
}

// TestDNFBound: an intersection of k unions has 2^k DNF branches; more than MaxBranches
// is an error, before any is built (30 unions asked for 2^30 trees, and the process died
// of an out-of-memory).
func TestDNFBound(t *testing.T) {
	const u2 = "(('e',('r',)),('e',('r',)),('u',))"
	unions := func(k int) string { return "(" + strings.Repeat(u2+",", k-1) + u2 + ")" }
	wide := func(k int) string { return "(" + strings.Repeat("('e',('r',)),", k) + "('u',))" }
	for _, tc := range []struct {
		name, notation string
		branches       int // 0: refused
	}{
		{"7 unions", unions(7), 128},
		{"8 unions", unions(8), 0},
		{"30 unions", unions(30), 0},
		{"8 unions under a projection", "(" + unions(8) + ",('r',))", 0},
		{"a union of 128", wide(128), 128},
		{"a union of 129", wide(129), 0},
		{"a union of 2 unions of 64", "(" + wide(64) + "," + wide(64) + ",('u',))", 128},
		{"a union of 2 unions of 65", "(" + wide(65) + "," + wide(64) + ",('u',))", 0},
	} {
		s, err := Parse(tc.notation)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		bs, err := s.DNF()
		switch {
		case tc.branches == 0 && (err == nil || !strings.Contains(err.Error(), "more than 128 branches")):
			t.Errorf("%s: %d branches, %v; want an error", tc.name, len(bs), err)
		case tc.branches > 0 && (err != nil || len(bs) != tc.branches):
			t.Errorf("%s: %d branches, %v; want %d", tc.name, len(bs), err, tc.branches)
		}
	}
}

func cloneTree(n *Node) *Node {
	c := *n
	if n.Base != nil {
		c.Base = cloneTree(n.Base)
	}
	c.Ops = append([]Op(nil), n.Ops...)
	c.Branches = nil
	for _, b := range n.Branches {
		c.Branches = append(c.Branches, cloneTree(b))
	}
	return &c
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTypeOrder: the named types sort in the order of Types, anything else after them.
func TestTypeOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int
	}{
		{"1p", 0}, {"2p", 1}, {"pni", 13}, {"2u-DM", 14}, {"up-DM", 15},
		{Custom, len(Types)}, {"4p", len(Types)}, {"", len(Types)},
	} {
		if got := TypeOrder(tc.name); got != tc.want {
			t.Errorf("TypeOrder(%q) = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestCacheParse: a Cache gives the structure Parse gives, the same one for the same
// notation, and Parse's error for a malformed one (which it does not remember).
func TestCacheParse(t *testing.T) {
	var c Cache
	for _, tc := range []struct {
		notation, name string
		bad            bool
	}{
		{"('e',('r','r'))", "2p", false},
		{"(('e',('r',)),('e',('r','n')))", "2in", false},
		{"(('e',('r',)),('e',('r','r')),('e',('r',)))", Custom, false},
		{"('e',('r',)", "", true},
		{"('e',('r','r'))", "2p", false}, // again, from the cache
	} {
		s, err := c.Parse(tc.notation)
		if tc.bad {
			if err == nil || s != nil {
				t.Errorf("Parse(%s) = %v, %v, want an error", tc.notation, s, err)
			}
			if _, err := c.Parse(tc.notation); err == nil {
				t.Errorf("Parse(%s) a second time: no error", tc.notation)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Parse(%s): %v", tc.notation, err)
		}
		if s.String() != tc.notation || s.Name() != tc.name {
			t.Errorf("Parse(%s) = %s named %s, want %s", tc.notation, s, s.Name(), tc.name)
		}
		if again, err := c.Parse(tc.notation); err != nil || again != s {
			t.Errorf("Parse(%s) a second time gave another structure: %p, %v; first %p", tc.notation, again, err, s)
		}
	}
}

// TestGroundedKey: the key tells apart queries that differ in structure or in any id.
func TestGroundedKey(t *testing.T) {
	texts := []string{
		"((17,(5,)),(903,(12,-2)))",
		"((17,(5,)),(903,(12,)))",
		"((17,(5,)),(903,(13,-2)))",
		"((903,(5,)),(17,(12,-2)))",
		"(17,(5,903,12))",
		"(((17,(5,)),(903,(12,)),(-1,)),(1,))",
	}
	keys := map[string]string{}
	for _, text := range texts {
		g, err := ParseGrounded(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		k := g.Key()
		if prev, ok := keys[k]; ok {
			t.Errorf("%s and %s have the same key %q", prev, text, k)
		}
		keys[k] = text
		g2, err := ParseGrounded(text)
		if err != nil || g2.Key() != k {
			t.Errorf("%s parsed twice: keys %q and %v, %v", text, k, g2, err)
		}
	}
}
