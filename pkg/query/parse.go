package query

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SyntaxError is a malformed structure or grounded query, with the byte offset of the fault.
type SyntaxError struct {
	Input  string
	Offset int
	Msg    string
	// Err, when not nil, is the error the message comes from: a name that
	// Ask.Resolve could not resolve (its candidates, for one).
	Err error
}

// Unwrap returns Err.
func (e *SyntaxError) Unwrap() error { return e.Err }

func (e *SyntaxError) Error() string {
	in := e.Input
	if len(in) > maxQuoted {
		// A long input is quoted around the fault, not whole.
		from := max(0, min(e.Offset-maxQuoted/2, len(in)-maxQuoted))
		in = in[from : from+maxQuoted]
		more := "..." // only where the input goes on past the quoted piece
		if from+maxQuoted == len(e.Input) {
			more = ""
		}
		return fmt.Sprintf("query of %d bytes, from offset %d: %q%s: at offset %d: %s", len(e.Input), from, in, more, e.Offset, e.Msg)
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
	sym    string // 'e', 'r', 'n', 'u' (quotes removed); in an asked query, any name
	num    int64
	isNum  bool
	isName bool // an asked query's quoted string or bare word (sym holds its text)
}

type parser struct {
	in  string
	pos int
	// names is the asked-query notation (ParseAsk): quoted strings may hold any text,
	// with backslash escapes, and bare words stand for names.
	names bool
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
				if len(v.tuple) == 1 {
					// ('r') and (0) are a parenthesised string and integer in Python, not
					// tuples.
					return value{}, p.errf(p.pos-1, "one-element tuple needs a trailing comma")
				}
				return v, nil
			default:
				if p.names {
					return value{}, p.errf(p.pos, "expected ',' or ')', found %q (a name holding spaces, quotes, commas or parentheses is written in quotes)", p.in[p.pos])
				}
				return value{}, p.errf(p.pos, "expected ',' or ')', found %q", p.in[p.pos])
			}
		}
	case p.names && (c == '\'' || c == '"'):
		return p.quoted(c)
	case p.names && !isNumber(p.in[p.pos:]):
		return p.word()
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
		if p.names && p.pos < len(p.in) && !isDelimiter(p.in[p.pos]) {
			p.pos = start // a name that starts like a number: 12_Angry_Men, -/film/x
			return p.word()
		}
		n, err := strconv.ParseInt(p.in[start:p.pos], 10, 32)
		if errors.Is(err, strconv.ErrRange) {
			return value{}, p.errf(start, "integer %s is out of range: ids are 32-bit", clip(p.in[start:p.pos]))
		}
		if err != nil {
			return value{}, p.errf(start, "bad integer %q", clip(p.in[start:p.pos]))
		}
		return value{offset: start, num: n, isNum: true}, nil
	default:
		return value{}, p.errf(start, "unexpected character %q", c)
	}
}

func parseTop(in string) (value, error) { return (&parser{in: in}).top() }

func (p *parser) top() (value, error) {
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
	s, _, err := build(notation, v, structureMode)
	return s, err
}

// build turns a parsed value of text into a structure in mode m, and returns the builder
// with the references it collected.
func build(text string, v value, m mode) (*Structure, *builder, error) {
	b := &builder{in: text, mode: m}
	root, err := b.node(v)
	if err != nil {
		return nil, nil, err
	}
	s, err := New(root)
	if err != nil {
		return nil, nil, &SyntaxError{Input: text, Offset: 0, Msg: err.Error()}
	}
	return s, b, nil
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
	s, b, err := build(text, v, groundedMode)
	if err != nil {
		return nil, err
	}
	return &Grounded{Structure: s, Anchors: b.anchors, Relations: b.relations}, nil
}

// mode is the notation a builder reads.
type mode uint8

const (
	structureMode mode = iota // 'e', 'r', 'n', ('u',)
	groundedMode              // ids, -2, (-1,)
	askMode                   // names or ids, n or -2, (u,) or (-1,)
)

// builder turns a parsed value into a tree. In grounded and ask modes it also collects
// the ids (references) in depth-first order, which is the order New assigns slots in.
type builder struct {
	in           string
	mode         mode
	anchors      []int32
	relations    []int32
	anchorRefs   []Ref
	relationRefs []Ref
}

func (b *builder) errf(v value, format string, args ...any) error {
	return &SyntaxError{Input: b.in, Offset: v.offset, Msg: fmt.Sprintf(format, args...)}
}

func (b *builder) isOp(v value) bool {
	switch b.mode {
	case groundedMode:
		return v.isNum && (v.num >= 0 || v.num == -2)
	case askMode:
		return askNegation(v) || askRef(v)
	}
	return v.sym == "r" || v.sym == "n"
}

func (b *builder) isNegation(v value) bool {
	switch b.mode {
	case groundedMode:
		return v.isNum && v.num == -2
	case askMode:
		return askNegation(v)
	}
	return v.sym == "n"
}

func (b *builder) isUnionMarker(v value) bool {
	if !v.isTup || len(v.tuple) != 1 {
		return false
	}
	switch b.mode {
	case groundedMode:
		return v.tuple[0].isNum && v.tuple[0].num == -1
	case askMode:
		return askUnion(v.tuple[0])
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
			if b.isNegation(op) {
				n.Ops = append(n.Ops, Op{Kind: Negate})
				continue
			}
			n.Ops = append(n.Ops, Op{Kind: Project})
			switch b.mode {
			case groundedMode:
				b.relations = append(b.relations, int32(op.num))
			case askMode:
				b.relationRefs = append(b.relationRefs, refOf(op))
			}
		}
		return n, nil
	}
	if b.mode == askMode && len(v.tuple) == 2 && v.tuple[1].isTup && !b.isUnionMarker(v.tuple[1]) {
		// A tuple of atoms after the base is meant as operations: name the bad one.
		for _, op := range v.tuple[1].tuple {
			if op.isTup {
				break
			}
			if !b.isOp(op) {
				return nil, b.errf(op, "%s", errNegativeID(op))
			}
		}
	}
	kind, branches := And, v.tuple
	if last := v.tuple[len(v.tuple)-1]; b.isUnionMarker(last) {
		kind, branches = Or, v.tuple[:len(v.tuple)-1]
	}
	if len(branches) < 2 {
		return nil, b.errf(v, "a chain needs an operation tuple of %s as its second element, and a conjunction or union needs at least 2 branches", b.opWords())
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

// opWords names what an operation tuple holds, for errors.
func (b *builder) opWords() string {
	switch b.mode {
	case groundedMode:
		return "relation ids and -2"
	case askMode:
		return "relations and n"
	}
	return "'r'/'n'"
}

func (b *builder) base(v value) (*Node, error) {
	switch {
	case v.isTup:
		return b.node(v)
	case b.mode == groundedMode && v.isNum && v.num >= 0:
		b.anchors = append(b.anchors, int32(v.num))
		return &Node{Kind: Anchor}, nil
	case b.mode == askMode && askRef(v):
		b.anchorRefs = append(b.anchorRefs, refOf(v))
		return &Node{Kind: Anchor}, nil
	case b.mode == structureMode && v.sym == "e":
		return &Node{Kind: Anchor}, nil
	}
	switch b.mode {
	case groundedMode:
		return nil, b.errf(v, "a chain's base must be an entity id (>= 0) or a tuple")
	case askMode:
		return nil, b.errf(v, "a chain's base must be an entity (a name or an id >= 0) or a tuple, found %d", v.num)
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
