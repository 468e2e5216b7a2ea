package query

import (
	"fmt"
	"strconv"
	"strings"
)

// SyntaxError is a malformed structure or grounded query, with the byte offset of the fault.
type SyntaxError struct {
	Input  string
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	in := e.Input
	if len(in) > maxQuoted {
		// A long input is quoted around the fault, not whole.
		from := max(0, min(e.Offset-maxQuoted/2, len(in)-maxQuoted))
		in = in[from : from+maxQuoted]
		return fmt.Sprintf("query of %d bytes, from offset %d: %q...: at offset %d: %s", len(e.Input), from, in, e.Offset, e.Msg)
	}
	return fmt.Sprintf("query %q: at offset %d: %s", in, e.Offset, e.Msg)
}

// maxQuoted bounds how much of a malformed input an error quotes.
const maxQuoted = 200

// clip shortens a piece of the input quoted in an error.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// maxDepth bounds the nesting of tuples: the deepest structure BetaE or this repository
// uses nests 5 deep. Without a bound, a long run of '(' recurses once per byte.
const maxDepth = 64

// value is a parsed nested tuple: a tuple of values, or an atom (a quoted symbol or an integer).
type value struct {
	offset int
	tuple  []value
	isTup  bool
	sym    string // 'e', 'r', 'n', 'u' (quotes removed)
	num    int64
	isNum  bool
}

type parser struct {
	in  string
	pos int
}

func (p *parser) errf(off int, format string, args ...any) *SyntaxError {
	return &SyntaxError{Input: p.in, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) skip() {
	for p.pos < len(p.in) && strings.IndexByte(" \t\r\n", p.in[p.pos]) >= 0 {
		p.pos++
	}
}

func (p *parser) parseValue(depth int) (value, error) {
	p.skip()
	start := p.pos
	if p.pos >= len(p.in) {
		return value{}, p.errf(start, "unexpected end of input")
	}
	if depth > maxDepth {
		return value{}, p.errf(start, "tuples nested more than %d deep", maxDepth)
	}
	switch c := p.in[p.pos]; {
	case c == '(':
		p.pos++
		v := value{offset: start, isTup: true}
		for {
			p.skip()
			if p.pos < len(p.in) && p.in[p.pos] == ')' {
				p.pos++
				if len(v.tuple) == 0 {
					return value{}, p.errf(start, "empty tuple")
				}
				return v, nil
			}
			el, err := p.parseValue(depth + 1)
			if err != nil {
				return value{}, err
			}
			v.tuple = append(v.tuple, el)
			p.skip()
			if p.pos >= len(p.in) {
				return value{}, p.errf(p.pos, "unexpected end of input: missing ')'")
			}
			switch p.in[p.pos] {
			case ',':
				p.pos++
			case ')':
				p.pos++
				if len(v.tuple) == 1 && !v.tuple[0].isNum {
					// ('r') is a parenthesised string in Python, not a tuple.
					return value{}, p.errf(p.pos-1, "one-element tuple needs a trailing comma")
				}
				return v, nil
			default:
				return value{}, p.errf(p.pos, "expected ',' or ')', found %q", p.in[p.pos])
			}
		}
	case c == '\'' || c == '"':
		end := strings.IndexByte(p.in[p.pos+1:], c)
		if end < 0 {
			return value{}, p.errf(start, "unterminated string")
		}
		sym := p.in[p.pos+1 : p.pos+1+end]
		p.pos += end + 2
		switch sym {
		case "e", "r", "n", "u":
		default:
			return value{}, p.errf(start, "unknown symbol %q (want 'e', 'r', 'n' or 'u')", clip(sym))
		}
		return value{offset: start, sym: sym}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		p.pos++
		for p.pos < len(p.in) && p.in[p.pos] >= '0' && p.in[p.pos] <= '9' {
			p.pos++
		}
		n, err := strconv.ParseInt(p.in[start:p.pos], 10, 32)
		if err != nil {
			return value{}, p.errf(start, "bad integer %q", clip(p.in[start:p.pos]))
		}
		return value{offset: start, num: n, isNum: true}, nil
	default:
		return value{}, p.errf(start, "unexpected character %q", c)
	}
}

func parseTop(in string) (value, error) {
	p := &parser{in: in}
	v, err := p.parseValue(0)
	if err != nil {
		return value{}, err
	}
	p.skip()
	if p.pos != len(p.in) {
		return value{}, p.errf(p.pos, "trailing text after the structure")
	}
	if !v.isTup {
		return value{}, p.errf(v.offset, "a structure must be a tuple")
	}
	return v, nil
}

// Parse reads a structure in BetaE's nested-tuple notation. Whitespace and either quote
// style are accepted, so Python's repr parses too.
func Parse(notation string) (*Structure, error) {
	v, err := parseTop(notation)
	if err != nil {
		return nil, err
	}
	b := &builder{in: notation}
	root, err := b.node(v)
	if err != nil {
		return nil, err
	}
	s, err := New(root)
	if err != nil {
		return nil, &SyntaxError{Input: notation, Offset: 0, Msg: err.Error()}
	}
	return s, nil
}

// MustParse is Parse for notations known to be valid; it panics otherwise.
func MustParse(notation string) *Structure {
	s, err := Parse(notation)
	if err != nil {
		panic(err)
	}
	return s
}

// ParseGrounded reads a grounded query such as ((17,(5,)),(903,(12,-2))): entity ids in
// place of 'e', relation ids in place of 'r', -2 for 'n' and (-1,) for the union marker.
func ParseGrounded(text string) (*Grounded, error) {
	v, err := parseTop(text)
	if err != nil {
		return nil, err
	}
	return groundedFromValue(text, v)
}

func groundedFromValue(text string, v value) (*Grounded, error) {
	b := &builder{in: text, grounded: true}
	root, err := b.node(v)
	if err != nil {
		return nil, err
	}
	s, err := New(root)
	if err != nil {
		return nil, &SyntaxError{Input: text, Offset: 0, Msg: err.Error()}
	}
	return &Grounded{Structure: s, Anchors: b.anchors, Relations: b.relations}, nil
}

// builder turns a parsed value into a tree. In grounded mode it also collects the ids in
// depth-first order, which is the order New assigns slots in.
type builder struct {
	in        string
	grounded  bool
	anchors   []int32
	relations []int32
}

func (b *builder) errf(v value, format string, args ...any) error {
	return &SyntaxError{Input: b.in, Offset: v.offset, Msg: fmt.Sprintf(format, args...)}
}

func (b *builder) isOp(v value) bool {
	if b.grounded {
		return v.isNum && (v.num >= 0 || v.num == -2)
	}
	return v.sym == "r" || v.sym == "n"
}

func (b *builder) isUnionMarker(v value) bool {
	if !v.isTup || len(v.tuple) != 1 {
		return false
	}
	if b.grounded {
		return v.tuple[0].isNum && v.tuple[0].num == -1
	}
	return v.tuple[0].sym == "u"
}

func (b *builder) isOpList(v value) bool {
	if !v.isTup || b.isUnionMarker(v) {
		return false
	}
	for _, el := range v.tuple {
		if !b.isOp(el) {
			return false
		}
	}
	return true
}

func (b *builder) node(v value) (*Node, error) {
	if len(v.tuple) == 2 && b.isOpList(v.tuple[1]) {
		base, err := b.base(v.tuple[0])
		if err != nil {
			return nil, err
		}
		n := &Node{Kind: Chain, Base: base}
		for _, op := range v.tuple[1].tuple {
			if (b.grounded && op.num == -2) || op.sym == "n" {
				n.Ops = append(n.Ops, Op{Kind: Negate})
				continue
			}
			n.Ops = append(n.Ops, Op{Kind: Project})
			if b.grounded {
				b.relations = append(b.relations, int32(op.num))
			}
		}
		return n, nil
	}
	kind, branches := And, v.tuple
	if last := v.tuple[len(v.tuple)-1]; b.isUnionMarker(last) {
		kind, branches = Or, v.tuple[:len(v.tuple)-1]
	}
	if len(branches) < 2 {
		return nil, b.errf(v, "a chain needs an operation tuple of 'r'/'n' as its second element, and a conjunction or union needs at least 2 branches")
	}
	n := &Node{Kind: kind}
	for _, br := range branches {
		if !br.isTup {
			return nil, b.errf(br, "a branch must be a tuple, not an atom")
		}
		if b.isUnionMarker(br) {
			return nil, b.errf(br, "the union marker must be the last element")
		}
		child, err := b.node(br)
		if err != nil {
			return nil, err
		}
		n.Branches = append(n.Branches, child)
	}
	return n, nil
}

func (b *builder) base(v value) (*Node, error) {
	switch {
	case v.isTup:
		return b.node(v)
	case b.grounded && v.isNum && v.num >= 0:
		b.anchors = append(b.anchors, int32(v.num))
		return &Node{Kind: Anchor}, nil
	case !b.grounded && v.sym == "e":
		return &Node{Kind: Anchor}, nil
	}
	if b.grounded {
		return nil, b.errf(v, "a chain's base must be an entity id (>= 0) or a tuple")
	}
	return nil, b.errf(v, "a chain's base must be 'e' or a tuple, found '%s'", v.sym)
}

// Cache parses each distinct notation once: the rows of a queries file name a handful of
// structures many thousands of times. Structures are never modified after parsing, so the
// queries of one structure share it. The zero value is ready; a Cache is not safe for
// concurrent use.
type Cache struct{ parsed map[string]*Structure }

// Parse is Parse, remembered.
func (c *Cache) Parse(notation string) (*Structure, error) {
	if s, ok := c.parsed[notation]; ok {
		return s, nil
	}
	s, err := Parse(notation)
	if err != nil {
		return nil, err
	}
	if c.parsed == nil {
		c.parsed = map[string]*Structure{}
	}
	c.parsed[notation] = s
	return s, nil
}
