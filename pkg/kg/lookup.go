package kg

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Lookup finds a dataset's entities and relations by the names people write: an entity by
// its name (entities.tsv) or its label (entity_labels.tsv), a relation by its name
// (relations.tsv). A name matches exactly, or else loosely: ignoring case and taking
// spaces for underscores ("dominican republic" is Dominican_Republic) and composed and
// decomposed accents for the same text (Unicode NFC). A relation's name
// without its leading '+' is the forward relation ("/film/film/genre" is
// "+/film/film/genre"); its inverse is written with '-'. A name that matches several
// entities, or none, is a *LookupError listing candidates.
//
// It is built once per dataset (NewLookup) and safe for concurrent use.
type Lookup struct {
	d                    *Dataset
	entExact, entLoose   map[string][]int32
	entName              map[string]int32 // an entity's exact name, which wins over labels; -1: several entities have it
	relExact, relLoose   map[string][]int32
	entKeys, relKeys     []lookupKey // every name and label, for the candidates of an unknown name
	numEntities, numRels int
}

// lookupKey is one name or label of an entity or relation, loosened.
type lookupKey struct {
	loose []rune
	id    int32
}

// NewLookup indexes d's names and labels.
func NewLookup(d *Dataset) *Lookup {
	l := &Lookup{d: d, entExact: map[string][]int32{}, entLoose: map[string][]int32{}, relExact: map[string][]int32{}, relLoose: map[string][]int32{},
		entName: map[string]int32{}, numEntities: d.NumEntities, numRels: d.NumRelations}
	add := func(exact, loose map[string][]int32, keys *[]lookupKey, name string, id int32) {
		if name == "" {
			return
		}
		exact[name] = appendOnce(exact[name], id)
		ln := loosen(name)
		loose[ln] = appendOnce(loose[ln], id)
		*keys = append(*keys, lookupKey{loose: clipRunes(ln), id: id})
	}
	for i, n := range d.EntityNames {
		add(l.entExact, l.entLoose, &l.entKeys, n, int32(i))
		if _, twice := l.entName[n]; twice {
			l.entName[n] = -1
		} else if n != "" {
			l.entName[n] = int32(i)
		}
	}
	for i, n := range d.EntityLabels {
		if d.EntityNames == nil || n != d.EntityNames[i] {
			add(l.entExact, l.entLoose, &l.entKeys, n, int32(i))
		}
	}
	for i, n := range d.RelationNames {
		add(l.relExact, l.relLoose, &l.relKeys, n, int32(i))
	}
	return l
}

func appendOnce(ids []int32, id int32) []int32 {
	if slices.Contains(ids, id) {
		return ids
	}
	return append(ids, id)
}

// loosen is the key of loose matching: Unicode's canonical composition (NFC: a "ü" typed
// as u and a combining diaeresis, as macOS file names and some keyboards write it, is the
// one character "ü"), lower case, spaces as underscores.
func loosen(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '_'
		}
		return unicode.ToLower(r)
	}, norm.NFC.String(s))
}

// maxCompared bounds the runes of a name that the edit distance compares.
const maxCompared = 100

func clipRunes(s string) []rune {
	r := []rune(s)
	return r[:min(len(r), maxCompared)]
}

// Candidate is an entity or relation offered in a LookupError.
type Candidate struct {
	ID    int32
	Name  string // "" when the dataset has no names
	Label string // "" when it has no label
}

func (c Candidate) String() string {
	s := fmt.Sprintf("id %d", c.ID)
	if c.Name != "" {
		s += fmt.Sprintf(" name %q", c.Name)
	}
	if c.Label != "" {
		s += fmt.Sprintf(" label %q", c.Label)
	}
	return s
}

// LookupError is a name that matched no entity or relation, or several.
type LookupError struct {
	What       string // "entity" or "relation"
	Name       string
	Ambiguous  bool        // several matched: Candidates are all of them (up to maxAmbiguous)
	Matches    int         // with Ambiguous: how many matched
	Candidates []Candidate // the matches, or the closest names
	Note       string      // a hint, when there is one
	// SharedName, with Ambiguous: every match has the name as its exact name (a name
	// table that names several ids alike), so only an id tells them apart.
	SharedName bool
}

// maxAmbiguous and numCandidates bound the candidates an error lists.
const (
	maxAmbiguous  = 12
	numCandidates = 5
)

func (e *LookupError) Error() string {
	list := make([]string, len(e.Candidates))
	for i, c := range e.Candidates {
		list[i] = c.String()
	}
	var s string
	switch {
	case e.Ambiguous:
		s = fmt.Sprintf("%s %q is ambiguous: %d %s match it: %s", e.What, e.Name, e.Matches, plural(e.What), strings.Join(list, "; "))
		if e.Matches > len(e.Candidates) {
			s += fmt.Sprintf("; and %d more", e.Matches-len(e.Candidates))
		}
		if e.SharedName {
			s += fmt.Sprintf(" (they have the same name: write the %s by its id)", e.What)
		} else {
			s += fmt.Sprintf(" (write the %s by its id or its exact name)", e.What)
		}
	case len(list) > 0:
		s = fmt.Sprintf("unknown %s %q; the closest: %s", e.What, e.Name, strings.Join(list, "; "))
	default:
		s = fmt.Sprintf("unknown %s %q", e.What, e.Name)
	}
	if e.Note != "" {
		s += " (" + e.Note + ")"
	}
	return s
}

func plural(what string) string {
	if what == "entity" {
		return "entities"
	}
	return what + "s"
}

// EntityID checks an entity id.
func (l *Lookup) EntityID(id int32) (int32, error) {
	if id < 0 || int(id) >= l.numEntities {
		return 0, fmt.Errorf("entity id %d out of range [0,%d)", id, l.numEntities)
	}
	return id, nil
}

// RelationID checks a relation id.
func (l *Lookup) RelationID(id int32) (int32, error) {
	if id < 0 || int(id) >= l.numRels {
		return 0, fmt.Errorf("relation id %d out of range [0,%d) (2k is a relation, 2k+1 its inverse)", id, l.numRels)
	}
	return id, nil
}

// Entity finds the entity of a name or label.
func (l *Lookup) Entity(name string) (int32, error) {
	if l.d.EntityNames == nil && l.d.EntityLabels == nil {
		return 0, &LookupError{What: "entity", Name: name, Note: l.d.Dir + " names no entities (no entities.tsv): write entities by id"}
	}
	if id, ok := l.entName[name]; ok && id >= 0 {
		return id, nil // an entity's exact name is that entity, whatever another's label
	}
	if id, err := l.find("entity", name, []string{name}, l.entExact, l.entLoose); id >= 0 || err != nil {
		return id, err
	}
	e := &LookupError{What: "entity", Name: name, Candidates: l.closest(name, l.entKeys, l.entity)}
	if isInt(name) {
		e.Note = "an id is written without quotes"
	}
	return 0, e
}

// Relation finds the relation of a name: its name in relations.tsv, or that name
// without the '+' of a forward relation.
func (l *Lookup) Relation(name string) (int32, error) {
	if l.d.RelationNames == nil {
		return 0, &LookupError{What: "relation", Name: name, Note: l.d.Dir + " names no relations (no relations.tsv): write relations by id"}
	}
	if id, err := l.find("relation", name, []string{name, "+" + name}, l.relExact, l.relLoose); id >= 0 || err != nil {
		return id, err
	}
	e := &LookupError{What: "relation", Name: name, Candidates: l.closest(name, l.relKeys, l.relation)}
	if isInt(name) {
		e.Note = "an id is written without quotes"
	}
	return 0, e
}

// find tries the forms of a name exactly, then loosely; -1 and no error when nothing
// matched.
func (l *Lookup) find(what, name string, forms []string, exact, loose map[string][]int32) (int32, error) {
	for pass, index := range []map[string][]int32{exact, loose} {
		for _, f := range forms {
			if pass == 1 {
				f = loosen(f)
			}
			switch ids := index[f]; {
			case len(ids) == 1:
				return ids[0], nil
			case len(ids) > 1:
				ids = slices.Sorted(slices.Values(ids))
				cand := l.relation
				if what == "entity" {
					cand = l.entity
				}
				e := &LookupError{What: what, Name: name, Ambiguous: true, Matches: len(ids), SharedName: pass == 0}
				for _, id := range ids {
					e.SharedName = e.SharedName && cand(id).Name == f
				}
				for _, id := range ids[:min(len(ids), maxAmbiguous)] {
					e.Candidates = append(e.Candidates, cand(id))
				}
				return -1, e
			}
		}
	}
	return -1, nil
}

func (l *Lookup) entity(id int32) Candidate {
	c := Candidate{ID: id}
	if l.d.EntityNames != nil {
		c.Name = l.d.EntityNames[id]
	}
	if l.d.EntityLabels != nil {
		c.Label = l.d.EntityLabels[id]
	}
	return c
}

func (l *Lookup) relation(id int32) Candidate {
	return Candidate{ID: id, Name: l.d.RelationNames[id]}
}

// closest returns the numCandidates entities (relations) whose names or labels are
// closest to name: first those holding it (or held by it), by length difference, then
// the rest by edit distance, ties by id.
func (l *Lookup) closest(name string, keys []lookupKey, cand func(int32) Candidate) []Candidate {
	q := clipRunes(loosen(name))
	type scored struct {
		tier, cost int
		id         int32
	}
	best := map[int32]scored{}
	var scratch []int
	for _, k := range keys {
		var s scored
		if len(q) > 0 && containsRunes(k.loose, q) {
			s = scored{0, abs(len(k.loose) - len(q)), k.id}
		} else {
			s = scored{1, editDistance(q, k.loose, &scratch), k.id}
		}
		if old, ok := best[k.id]; !ok || s.tier < old.tier || (s.tier == old.tier && s.cost < old.cost) {
			best[k.id] = s
		}
	}
	all := make([]scored, 0, len(best))
	for _, s := range best {
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b scored) int {
		return cmp.Or(cmp.Compare(a.tier, b.tier), cmp.Compare(a.cost, b.cost), cmp.Compare(a.id, b.id))
	})
	out := make([]Candidate, 0, numCandidates)
	for _, s := range all[:min(len(all), numCandidates)] {
		out = append(out, cand(s.id))
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func containsRunes(s, sub []rune) bool {
	if len(sub) == 0 || len(sub) > len(s) {
		return len(sub) == 0
	}
	for i := 0; i+len(sub) <= len(s); i++ {
		if slices.Equal(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// editDistance is the Levenshtein distance of a and b (insertions, deletions and
// substitutions of runes, each costing 1), with one row of scratch space.
func editDistance(a, b []rune, scratch *[]int) int {
	row := slices.Grow((*scratch)[:0], len(b)+1)[:len(b)+1]
	*scratch = row
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		diag := row[0]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			sub := diag
			if a[i-1] != b[j-1] {
				sub++
			}
			diag = row[j]
			row[j] = min(row[j]+1, row[j-1]+1, sub)
		}
	}
	return row[len(b)]
}
