package kg

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestLookupIDRange: ids are checked against [0, n) at both ends.
func TestLookupIDRange(t *testing.T) {
	d, err := Load("../../testdata/tiny", FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLookup(d)
	for _, tc := range []struct {
		id     int32
		rel    bool
		wantOK bool
	}{
		{0, false, true}, {81, false, true}, {-1, false, false}, {82, false, false},
		{0, true, true}, {9, true, true}, {-1, true, false}, {10, true, false},
	} {
		var got int32
		var err error
		if tc.rel {
			got, err = l.RelationID(tc.id)
		} else {
			got, err = l.EntityID(tc.id)
		}
		if ok := err == nil; ok != tc.wantOK || ok && got != tc.id {
			t.Errorf("id %d (relation %v): %d, %v; want ok=%v", tc.id, tc.rel, got, err, tc.wantOK)
		}
	}
}

// TestLookupEdges: lookups at the edges of the rules: labels without a name table,
// entity 0's exact name that is another entity's label, more ambiguous matches than an
// error lists, a name held by a long name ranked before a short one a few edits away,
// and an unknown name with no close candidate at all.
func TestLookupEdges(t *testing.T) {
	var names, same strings.Builder
	for i := range 14 {
		fmt.Fprintf(&names, "%d\te%d\n", i, i)
		fmt.Fprintf(&same, "%d\tTwin\n", i)
	}
	twins := map[string]string{"entities.tsv": names.String(), "entity_labels.tsv": same.String()}
	for _, tc := range []struct {
		name  string
		files map[string]string
		look  string
		want  int32  // with err "": the id found
		err   string // a substring of the error
	}{
		{"a label, no entities.tsv", map[string]string{"entity_labels.tsv": "0\tAlpha\n2\tGamma\n"}, "gamma", 2, ""},
		{"entity 0's name, another's label", map[string]string{"entities.tsv": "0\tm0\n1\tm1\n2\tm2\n", "entity_labels.tsv": "1\tm0\n"}, "m0", 0, ""},
		{"14 matches, 12 listed", twins, "twin", 0,
			`entity "twin" is ambiguous: 14 entities match it: id 0 name "e0" label "Twin"; id 1 name "e1" label "Twin"`},
		{"14 matches: how many more", twins, "twin", 0, `id 11 name "e11" label "Twin"; and 2 more (write`},
		{"held by a long name first", map[string]string{"entities.tsv": "0\tDominica\n1\tDominican_Republic_of_the_Caribbean\n2\tx\n"}, "Dominican", 0,
			`unknown entity "Dominican"; the closest: id 1 name "Dominican_Republic_of_the_Caribbean"; id 0 name "Dominica"; id 2 name "x"`},
	} {
		d, err := Load(writeDataset(t, tc.files), FormatAuto)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := NewLookup(d).Entity(tc.look)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("%s: %q is %d, %v; want %d", tc.name, tc.look, got, err, tc.want)
			}
			continue
		}
		var le *LookupError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %q: %v\nwant %s", tc.name, tc.look, err, tc.err)
		}
		if le != nil && len(le.Candidates) > maxAmbiguous {
			t.Errorf("%s: %d candidates listed, at most %d", tc.name, len(le.Candidates), maxAmbiguous)
		}
	}
}

// TestLookupErrorText: the error's text for each kind of failure.
func TestLookupErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  LookupError
		want string
	}{
		{LookupError{What: "entity", Name: "x"}, `unknown entity "x"`},
		{LookupError{What: "relation", Name: "x", Candidates: []Candidate{{ID: 3, Name: "+y"}}}, `unknown relation "x"; the closest: id 3 name "+y"`},
		{LookupError{What: "entity", Name: "7", Note: "an id is written without quotes"}, `unknown entity "7" (an id is written without quotes)`},
		{LookupError{What: "relation", Name: "r", Ambiguous: true, Matches: 2, Candidates: []Candidate{{ID: 0, Name: "+r"}, {ID: 2, Name: "+r"}}, SharedName: true},
			`relation "r" is ambiguous: 2 relations match it: id 0 name "+r"; id 2 name "+r" (they have the same name: write the relation by its id)`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// TestClosestMatchesReference: an unknown name's candidates are the entities ranked by
// their best name or label (the better of the two counts, whichever comes first): names
// holding the typed one first, by length difference, then the rest by edit distance,
// ties by id. It checks random small tables against a direct reading of that rule.
func TestClosestMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	word := func(maxLen int) string {
		b := make([]byte, rng.IntN(maxLen+1))
		for i := range b {
			b[i] = "abA_"[rng.IntN(4)]
		}
		return string(b)
	}
	type score struct{ tier, cost, id int }
	checked := 0
	for range 3000 {
		n := 1 + rng.IntN(9)
		d := &Dataset{NumEntities: n, EntityNames: make([]string, n), EntityLabels: make([]string, n)}
		for i := range n {
			d.EntityNames[i], d.EntityLabels[i] = word(6), word(6)
		}
		q := word(4)
		_, err := NewLookup(d).Entity(q)
		var le *LookupError
		if !errors.As(err, &le) || le.Ambiguous {
			continue // found, or ambiguous: no ranking
		}
		lq := loosen(q)
		var all []score
		for i := range n {
			var best *score
			for _, key := range []string{d.EntityNames[i], d.EntityLabels[i]} {
				if key == "" {
					continue
				}
				k := loosen(key)
				s := score{1, referenceEditDistance([]rune(lq), []rune(k)), i}
				if lq != "" && strings.Contains(k, lq) {
					s = score{0, len(k) - len(lq), i}
				}
				if best == nil || s.tier < best.tier || s.tier == best.tier && s.cost < best.cost {
					best = &s
				}
			}
			if best != nil {
				all = append(all, *best)
			}
		}
		slices.SortFunc(all, func(a, b score) int { return cmp.Or(a.tier-b.tier, a.cost-b.cost, a.id-b.id) })
		var want, got []int
		for _, s := range all[:min(len(all), numCandidates)] {
			want = append(want, s.id)
		}
		for _, c := range le.Candidates {
			got = append(got, int(c.ID))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%q among names %q labels %q: candidates %v, want %v", q, d.EntityNames, d.EntityLabels, got, want)
		}
		checked++
	}
	if checked < 500 {
		t.Fatalf("only %d unknown names ranked; the test is too weak", checked)
	}
}

// TestContainsRunes: whether a rune string holds another, anywhere, at its ends too.
func TestContainsRunes(t *testing.T) {
	for _, tc := range []struct {
		s, sub string
		want   bool
	}{
		{"", "", true}, {"abc", "", true}, {"", "a", false}, {"abc", "abc", true}, {"abc", "a", true},
		{"abc", "c", true}, {"abc", "bc", true}, {"abc", "ac", false}, {"ab", "abc", false}, {"zürich", "üri", true},
	} {
		if got := containsRunes([]rune(tc.s), []rune(tc.sub)); got != tc.want {
			t.Errorf("containsRunes(%q, %q) = %v, want %v", tc.s, tc.sub, got, tc.want)
		}
	}
}
