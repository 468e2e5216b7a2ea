package query

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// An asked query is a grounded query written by names or ids: BetaE's nested-tuple
// notation with an entity in place of each 'e' and a relation in place of each 'r', so
// that a person can type one (rank --ask). Its grammar:
//
//	query  = tuple
//	tuple  = "(" item { "," item } [ "," ] ")"      a one-item tuple needs its comma
//	item   = tuple | atom
//	atom   = quoted | word | integer
//	quoted = "'" { char | "\\'" | "\\\\" } "'"      or the same between double quotes
//	word   = a run of characters other than whitespace, quotes, commas and parentheses
//
// An integer (optionally negative, fitting int32) is an id; a quoted string or a word is a
// name, resolved by a Resolver (a dataset's names, labels and so on). The shapes are the
// structures': (X,(op,...)) is a chain applied to X, an entity or a sub-query; a tuple of
// two or more sub-queries is their intersection, and with a last item (u,) their union.
// In an operation tuple the atom n (bare or quoted) is a negation and every other atom a
// relation; -2 and (-1,) are accepted for n and (u,), so every ParseGrounded query is an
// asked query of ids. A relation literally named n, or the lone relation of (X,(u,)), is
// therefore written by its id.

// Ref is one entity or relation of an asked query as written: an id, or a name.
type Ref struct {
	Offset int    // byte offset in the query text
	Name   string // the name, unquoted and unescaped; "" for an id
	ID     int32  // the id, when IsID
	IsID   bool
}

// String writes the reference back in the notation: an id bare, a name quoted.
func (r Ref) String() string {
	if r.IsID {
		return strconv.Itoa(int(r.ID))
	}
	return quoteName(r.Name)
}

// quoteName quotes a name in single quotes, escaping backslashes and single quotes.
func quoteName(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' || s[i] == '\'' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('\'')
	return b.String()
}

// Ask is a parsed asked query: its structure and its entity and relation references in
// depth-first order (the order of a Grounded query's ids).
type Ask struct {
	Text      string
	Structure *Structure
	Anchors   []Ref
	Relations []Ref
}

// ParseAsk reads an asked query. A malformed one is a *SyntaxError with the byte offset
// of the fault; names are not looked up (Resolve does).
func ParseAsk(text string) (*Ask, error) {
	p := &parser{in: text, names: true}
	v, err := p.top()
	if err != nil {
		return nil, err
	}
	s, b, err := build(text, v, askMode)
	if err != nil {
		return nil, err
	}
	return &Ask{Text: text, Structure: s, Anchors: b.anchorRefs, Relations: b.relationRefs}, nil
}

// String prints the query in the notation: ids bare, names quoted, 'n' and ('u',) for
// negation and union. It parses back to the same query.
func (a *Ask) String() string {
	var b strings.Builder
	a.write(&b, a.Structure.Root)
	return b.String()
}

func (a *Ask) write(b *strings.Builder, n *Node) {
	writeTuple(b, n, tupleSpelling{
		anchor:   func(slot int) string { return a.Anchors[slot].String() },
		relation: func(slot int) string { return a.Relations[slot].String() },
		negation: "'n'", union: "('u',)",
	})
}

// A Resolver finds the id of an entity or relation reference, or says why it cannot.
type Resolver interface {
	Entity(r Ref) (int32, error)
	Relation(r Ref) (int32, error)
}

// Resolve looks every reference up and returns the grounded query. An unresolved
// reference is a *SyntaxError at its offset wrapping the resolver's error; of several,
// the first in the text.
func (a *Ask) Resolve(r Resolver) (*Grounded, error) {
	g := &Grounded{Structure: a.Structure, Anchors: make([]int32, len(a.Anchors)), Relations: make([]int32, len(a.Relations))}
	var first *SyntaxError
	note := func(ref Ref, err error) {
		if first == nil || ref.Offset < first.Offset {
			first = &SyntaxError{Input: a.Text, Offset: ref.Offset, Msg: err.Error(), Err: err}
		}
	}
	for i, ref := range a.Anchors {
		id, err := r.Entity(ref)
		if err != nil {
			note(ref, err)
		}
		g.Anchors[i] = id
	}
	for i, ref := range a.Relations {
		id, err := r.Relation(ref)
		if err != nil {
			note(ref, err)
		}
		g.Relations[i] = id
	}
	if first != nil {
		return nil, first
	}
	return g, nil
}

// isNumber reports whether s starts like an integer: an optional '-', then a digit.
func isNumber(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	return s != "" && s[0] >= '0' && s[0] <= '9'
}

// isDelimiter reports whether c ends a bare word.
func isDelimiter(c byte) bool { return strings.IndexByte(" \t\r\n,()'\"", c) >= 0 }

// word reads a bare word (a name).
func (p *parser) word() (value, error) {
	start := p.pos
	for p.pos < len(p.in) && !isDelimiter(p.in[p.pos]) {
		p.pos++
	}
	if !utf8.ValidString(p.in[start:p.pos]) {
		return value{}, p.errf(start, "name %q is not valid UTF-8", clip(p.in[start:p.pos]))
	}
	return value{offset: start, sym: p.in[start:p.pos], isName: true}, nil
}

// quoted reads a quoted name whose quote is q: a backslash escapes a backslash or
// either quote.
func (p *parser) quoted(q byte) (value, error) {
	start := p.pos
	var b strings.Builder
	for i := start + 1; i < len(p.in); i++ {
		switch c := p.in[i]; c {
		case q:
			p.pos = i + 1
			if !utf8.ValidString(b.String()) {
				return value{}, p.errf(start, "name %q is not valid UTF-8", clip(b.String()))
			}
			return value{offset: start, sym: b.String(), isName: true}, nil
		case '\\':
			if i+1 < len(p.in) && (p.in[i+1] == '\\' || p.in[i+1] == '\'' || p.in[i+1] == '"') {
				i++
				b.WriteByte(p.in[i])
				continue
			}
			return value{}, p.errf(i, "unknown escape in a name (a backslash escapes only \\, ' and \")")
		default:
			b.WriteByte(c)
		}
	}
	return value{}, p.errf(start, "unterminated string")
}

// The atoms of an asked query, for the builder.

func askNegation(v value) bool { return (v.isNum && v.num == -2) || (v.isName && v.sym == "n") }
func askUnion(v value) bool    { return (v.isNum && v.num == -1) || (v.isName && v.sym == "u") }
func askRef(v value) bool      { return (v.isNum && v.num >= 0) || v.isName }

func refOf(v value) Ref {
	if v.isNum {
		return Ref{Offset: v.offset, ID: int32(v.num), IsID: true}
	}
	return Ref{Offset: v.offset, Name: v.sym}
}

// errNegativeID explains a negative id where an entity or relation is expected.
func errNegativeID(v value) string {
	return fmt.Sprintf("id %d: an entity or relation id is >= 0 (-2 is a negation, (-1,) the union marker)", v.num)
}
