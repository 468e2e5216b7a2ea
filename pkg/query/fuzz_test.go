package query

import (
	"strings"
	"testing"
)

// structureSeeds are every named structure's notation and some near misses.
func structureSeeds(f *testing.F) {
	for _, name := range []string{"1p", "2p", "3p", "2i", "3i", "ip", "pi", "2u", "up", "2in", "3in", "inp", "pin", "pni"} {
		s, err := ByName(name)
		if err == nil {
			f.Add(s.String())
		}
	}
	for _, s := range []string{"('e',('r',))", "(('e',('r',)),('e',('r','n')))", "((('e',('r',)),('e',('r',)),('u',)),('r',))",
		"(('e', ('r', 'r', 'r', 'r')), ('e', ('r',)))", "(", "()", "('e')", "('x',('r',))", strings.Repeat("(", 100)} {
		f.Add(s)
	}
}

// FuzzParse: any text parses to a structure whose notation parses back to itself, or
// gives a syntax error; never a panic.
func FuzzParse(f *testing.F) {
	structureSeeds(f)
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if len(err.Error()) > 4*maxQuoted+4*40+300 { // a quoted excerpt and a clipped symbol, escaped
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		again, err := Parse(s.String())
		if err != nil || again.String() != s.String() {
			t.Fatalf("%q parsed as %s, which reads back as %v (%v)", in, s, again, err)
		}
	})
}

// FuzzParseGrounded: any text is a grounded query whose ids match its structure's slots,
// or a syntax error.
func FuzzParseGrounded(f *testing.F) {
	for _, s := range []string{"(17,(5,))", "((17,(5,)),(903,(12,-2)))", "(((1,(2,)),(3,(4,)),(-1,)),(5,))",
		"((1,(2,3,4)),(5,(6,)))", "(1,(-2,))", "((1,(2,)),(-1,))", "(99999999999,(1,))"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		g, err := ParseGrounded(in)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		for _, a := range g.Anchors {
			if a < 0 {
				t.Fatalf("%q: negative anchor %d", in, a)
			}
		}
		for _, r := range g.Relations {
			if r < 0 {
				t.Fatalf("%q: negative relation %d", in, r)
			}
		}
		again, err := ParseGrounded(g.String())
		if err != nil || again.String() != g.String() {
			t.Fatalf("%q parsed as %s, which reads back as %v (%v)", in, g, again, err)
		}
	})
}

// FuzzParseAsk: any text is an asked query that prints to a form reading back as itself
// and resolves to a valid grounded query (or fails to resolve at a reference's offset),
// or a syntax error of bounded length; never a panic.
func FuzzParseAsk(f *testing.F) {
	for _, s := range []string{"(Dominican_Republic,(+/location/country/form_of_government,))", "(17,(5,))",
		`("Peter_O'Toole",('-/film/actor/film', "a \"b\" \\ c"))`, "(((a,(r,)),(b,(s,)),(u,)),(t,))",
		"((1,(2,)),(3,(4,-2)),(-1,))", "(n,(u,r))", "(12_Angry_Men,(-/x,n))", "((a,(r,)),('zz',(s,n)))", "(a,(r,-5))",
		"('a\\", strings.Repeat("((", 60)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		a, err := ParseAsk(in)
		if err != nil {
			se, ok := err.(*SyntaxError)
			if !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if se.Offset < 0 || se.Offset > len(in) {
				t.Fatalf("%q: offset %d outside the input", in, se.Offset)
			}
			if len(err.Error()) > 4*maxQuoted+4*40+400 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if len(a.Anchors) != a.Structure.NumAnchors || len(a.Relations) != a.Structure.NumRelations {
			t.Fatalf("%q: %d anchors and %d relations for %s", in, len(a.Anchors), len(a.Relations), a.Structure)
		}
		again, err := ParseAsk(a.String())
		if err != nil || again.String() != a.String() || again.Structure.String() != a.Structure.String() {
			t.Fatalf("%q parsed as %s, which reads back as %v (%v)", in, a, again, err)
		}
		g, err := a.Resolve(testResolver)
		if err != nil {
			se, ok := err.(*SyntaxError)
			if !ok || se.Err == nil || se.Offset < 0 || se.Offset >= len(in) {
				t.Fatalf("%q: resolve error %T %v", in, err, err)
			}
			return
		}
		if err := g.Validate(int(testResolver.n), int(testResolver.r)); err != nil {
			t.Fatalf("%q resolved to an invalid query %s: %v", in, g, err)
		}
	})
}
