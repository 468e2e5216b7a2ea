package query

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseAsk(t *testing.T) {
	tests := []struct {
		in        string
		structure string
		anchors   []Ref
		relations []Ref
		printed   string
	}{
		{"(Dominican_Republic,(+/location/country/form_of_government,))", "('e',('r',))",
			[]Ref{{Offset: 1, Name: "Dominican_Republic"}}, []Ref{{Offset: 21, Name: "+/location/country/form_of_government"}},
			"('Dominican_Republic',('+/location/country/form_of_government',))"},
		{"(17,(5,))", "('e',('r',))", []Ref{{Offset: 1, ID: 17, IsID: true}}, []Ref{{Offset: 5, ID: 5, IsID: true}}, "(17,(5,))"},
		{`("Peter_O'Toole",('-/film/actor/film', "a \"b\" \\ c"))`, "('e',('r','r'))",
			[]Ref{{Offset: 1, Name: "Peter_O'Toole"}}, []Ref{{Offset: 18, Name: "-/film/actor/film"}, {Offset: 39, Name: `a "b" \ c`}},
			`('Peter_O\'Toole',('-/film/actor/film','a "b" \\ c'))`},
		// Names that start like numbers, and a name with spaces in quotes.
		{"(12_Angry_Men, (-/film/x, 'n'))", "('e',('r','n'))",
			[]Ref{{Offset: 1, Name: "12_Angry_Men"}}, []Ref{{Offset: 16, Name: "-/film/x"}}, "('12_Angry_Men',('-/film/x','n'))"},
		{"((a,(r,)),('New York',(s,n)))", "(('e',('r',)),('e',('r','n')))",
			[]Ref{{Offset: 2, Name: "a"}, {Offset: 11, Name: "New York"}}, []Ref{{Offset: 5, Name: "r"}, {Offset: 23, Name: "s"}},
			"(('a',('r',)),('New York',('s','n')))"},
		// Unions by u and by -1, negation by -2: the id notation is an asked query.
		{"(((a,(r,)),(b,(s,)),(u,)),(t,))", "((('e',('r',)),('e',('r',)),('u',)),('r',))",
			[]Ref{{Offset: 3, Name: "a"}, {Offset: 12, Name: "b"}}, []Ref{{Offset: 6, Name: "r"}, {Offset: 15, Name: "s"}, {Offset: 27, Name: "t"}},
			"((('a',('r',)),('b',('s',)),('u',)),('t',))"},
		{"((1,(2,)),(3,(4,-2)),(-1,))", "(('e',('r',)),('e',('r','n')),('u',))",
			[]Ref{{Offset: 2, ID: 1, IsID: true}, {Offset: 11, ID: 3, IsID: true}}, []Ref{{Offset: 5, ID: 2, IsID: true}, {Offset: 14, ID: 4, IsID: true}},
			"((1,(2,)),(3,(4,'n')),('u',))"},
		// An entity may be named n or u: only operations reserve them.
		{"(n,(u,r))", "('e',('r','r'))", []Ref{{Offset: 1, Name: "n"}}, []Ref{{Offset: 4, Name: "u"}, {Offset: 6, Name: "r"}}, "('n',('u','r'))"},
		{"('',(x,))", "('e',('r',))", []Ref{{Offset: 1, Name: ""}}, []Ref{{Offset: 5, Name: "x"}}, "('',('x',))"},
		// The bounds of the id digits: 0 and 9 are ids, not names.
		{"(0,(9,))", "('e',('r',))", []Ref{{Offset: 1, ID: 0, IsID: true}}, []Ref{{Offset: 4, ID: 9, IsID: true}}, "(0,(9,))"},
	}
	for _, tc := range tests {
		a, err := ParseAsk(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if a.Structure.String() != tc.structure {
			t.Errorf("%s: structure %s, want %s", tc.in, a.Structure, tc.structure)
		}
		if fmt.Sprint(a.Anchors) != fmt.Sprint(tc.anchors) || fmt.Sprint(a.Relations) != fmt.Sprint(tc.relations) {
			t.Errorf("%s: anchors %+v relations %+v, want %+v %+v", tc.in, a.Anchors, a.Relations, tc.anchors, tc.relations)
		}
		for i, r := range tc.anchors {
			if a.Anchors[i] != r {
				t.Errorf("%s: anchor %d is %+v, want %+v", tc.in, i, a.Anchors[i], r)
			}
		}
		for i, r := range tc.relations {
			if a.Relations[i] != r {
				t.Errorf("%s: relation %d is %+v, want %+v", tc.in, i, a.Relations[i], r)
			}
		}
		if a.String() != tc.printed {
			t.Errorf("%s: printed %s, want %s", tc.in, a, tc.printed)
		}
		again, err := ParseAsk(a.String())
		if err != nil || again.String() != a.String() {
			t.Errorf("%s: printed form %s reads back as %v, %v", tc.in, a, again, err)
		}
	}
}

func TestParseAskMalformed(t *testing.T) {
	tests := []struct {
		in     string
		offset int
		msg    string
	}{
		{"(Peter_O'Toole,(r,))", 8, "written in quotes"},
		{"(New York,(r,))", 5, "written in quotes"},
		{"('a,(r,))", 1, "unterminated string"},
		{`('a\n',(r,))`, 3, "unknown escape"},
		{"(a,(r,)", 7, "missing ')'"},
		{"(a,(r))", 5, "trailing comma"},
		{"(0,(0))", 5, "trailing comma"}, // (0) is Python's 0, as ('r') is 'r'
		{"((0),(0,))", 3, "trailing comma"},
		{"(a,(r,-5))", 6, "id -5: an entity or relation id is >= 0"},
		{"(a,(-1,r))", 4, "id -1"},
		{"(-3,(r,))", 1, "base must be an entity"},
		{"((a,(r,)),(u,))", 0, "at least 2 branches"},
		{"((a,(r,)),(u,),(b,(s,)))", 10, "union marker must be the last"},
		{"((a,(r,)),b)", 10, "branch must be a tuple"},
		{"(a,(r,)) x", 9, "trailing text"},
		{"a", 0, "must be a tuple"},
		{"7", 0, "must be a tuple"}, // an id that ends the input
		{"(a,(r,99999999999))", 6, "integer 99999999999 is out of range: ids are 32-bit"},
		{"", 0, "unexpected end of input"},
		{"(\xff,(r,))", 1, "not valid UTF-8"},
	}
	for _, tc := range tests {
		_, err := ParseAsk(tc.in)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: got %v, want a syntax error", tc.in, err)
			continue
		}
		if se.Offset != tc.offset || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("%q: offset %d %q, want offset %d containing %q", tc.in, se.Offset, se.Msg, tc.offset, tc.msg)
		}
	}
}

// mapResolver resolves names from two maps and ids below a bound.
type mapResolver struct {
	entities, relations map[string]int32
	n, r                int32
}

func (m mapResolver) lookup(ref Ref, names map[string]int32, n int32, what string) (int32, error) {
	if ref.IsID {
		if ref.ID >= n {
			return 0, fmt.Errorf("%s id %d out of range", what, ref.ID)
		}
		return ref.ID, nil
	}
	id, ok := names[ref.Name]
	if !ok {
		return 0, fmt.Errorf("unknown %s %q", what, ref.Name)
	}
	return id, nil
}

func (m mapResolver) Entity(r Ref) (int32, error) { return m.lookup(r, m.entities, m.n, "entity") }
func (m mapResolver) Relation(r Ref) (int32, error) {
	return m.lookup(r, m.relations, m.r, "relation")
}

var testResolver = mapResolver{
	entities:  map[string]int32{"a": 0, "b": 1, "c": 2},
	relations: map[string]int32{"r": 4, "s": 5},
	n:         3, r: 6,
}

func TestAskResolve(t *testing.T) {
	a, err := ParseAsk("(((a,(r,)),(2,(s,n))),(1,))")
	if err != nil {
		t.Fatal(err)
	}
	g, err := a.Resolve(testResolver)
	if err != nil {
		t.Fatal(err)
	}
	if g.String() != "(((0,(4,)),(2,(5,-2))),(1,))" || g.Structure.Name() != "inp" {
		t.Errorf("resolved to %s (%s)", g, g.Structure.Name())
	}
	// The first unresolved reference in the text is reported, at its offset, wrapping
	// the resolver's error.
	for _, tc := range []struct {
		in     string
		offset int
		msg    string
	}{
		{"((a,(x,)),(zz,(r,)))", 5, `unknown relation "x"`},
		{"((a,(r,)),(zz,(x,)))", 11, `unknown entity "zz"`},
		{"(7,(9,))", 1, "entity id 7 out of range"},
	} {
		a, err := ParseAsk(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		_, err = a.Resolve(testResolver)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Offset != tc.offset || !strings.Contains(err.Error(), tc.msg) || se.Err == nil || errors.Unwrap(err) != se.Err {
			t.Errorf("%s: %v, want offset %d %q", tc.in, err, tc.offset, tc.msg)
		}
	}
}

// TestGroundedIsAsk: every grounded query of ids reads as the same asked query.
func TestGroundedIsAsk(t *testing.T) {
	for _, in := range []string{"((17,(5,)),(903,(12,-2)))", "(((1,(2,)),(3,(4,)),(-1,)),(5,))", "(1,(2,3,4))"} {
		g, err := ParseGrounded(in)
		if err != nil {
			t.Fatal(err)
		}
		a, err := ParseAsk(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		r := mapResolver{n: 1 << 30, r: 1 << 30}
		g2, err := a.Resolve(r)
		if err != nil || g2.String() != g.String() {
			t.Errorf("%s: asked query resolves to %v, %v", in, g2, err)
		}
	}
}
