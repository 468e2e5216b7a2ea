package kg

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// referenceEditDistance is the textbook full-table Levenshtein distance.
func referenceEditDistance(a, b []rune) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+c)
		}
	}
	return d[len(a)][len(b)]
}

func TestEditDistance(t *testing.T) {
	var scratch []int
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"Dominican_Repblic", "Dominican_Republic", 1}, {"été", "ete", 2}} {
		if got := editDistance([]rune(tc.a), []rune(tc.b), &scratch); got != tc.want {
			t.Errorf("%q %q: %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() []rune {
		r := make([]rune, rng.IntN(9))
		for i := range r {
			r[i] = rune('a' + rng.IntN(3))
		}
		return r
	}
	for range 2000 {
		a, b := word(), word()
		if got, want := editDistance(a, b, &scratch), referenceEditDistance(a, b); got != want {
			t.Fatalf("%q %q: %d, want %d", string(a), string(b), got, want)
		}
	}
}

func TestLookupTiny(t *testing.T) {
	d, err := Load("../../testdata/tiny", FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	if d.EntityLabels != nil {
		t.Fatalf("tiny has no labels, got %d", len(d.EntityLabels))
	}
	l := NewLookup(d)
	checkLookups(t, l, []lookupCase{{"ent0", false, 0}, {"ent81", false, 81}, {"ENT5", false, 5}, {"+rel0", true, 0}, {"-rel0", true, 1}, {"rel2", true, 4}, {"-REL4", true, 9}})
	_, err = l.Entity("ent99")
	var le *LookupError
	if !errors.As(err, &le) || le.Ambiguous || len(le.Candidates) != numCandidates || !strings.Contains(err.Error(), `unknown entity "ent99"; the closest: id 9 name "ent9"`) {
		t.Errorf("ent99: %v", err)
	}
	_, err = l.Relation("rel7")
	if !errors.As(err, &le) || !strings.Contains(err.Error(), `unknown relation "rel7"`) || len(le.Candidates) == 0 {
		t.Errorf("rel7: %v", err)
	}
	_, err = l.Entity("12")
	if err == nil || !strings.Contains(err.Error(), "an id is written without quotes") {
		t.Errorf("12: %v", err)
	}
	if _, err := l.EntityID(82); err == nil || !strings.Contains(err.Error(), "entity id 82 out of range [0,82)") {
		t.Errorf("id 82: %v", err)
	}
	if _, err := l.RelationID(10); err == nil || !strings.Contains(err.Error(), "relation id 10 out of range [0,10)") {
		t.Errorf("relation id 10: %v", err)
	}
}

func TestLabels(t *testing.T) {
	ids := writeDataset(t, map[string]string{
		"entities.tsv":      "0\tm0\n1\tm1\n2\tm2\n",
		"relations.tsv":     "0\t+r\n1\t-r\n2\t+s\n3\t-s\n",
		"entity_labels.tsv": "0\tAlpha\n2\tGamma ray\n",
	})
	d, err := Load(ids, FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(d.EntityLabels, "|") != "Alpha||Gamma ray" {
		t.Fatalf("labels %q", d.EntityLabels)
	}
	l := NewLookup(d)
	for name, want := range map[string]int32{"Alpha": 0, "m0": 0, "alpha": 0, "gamma_ray": 2, "GAMMA RAY": 2, "m1": 1} {
		if got, err := l.Entity(name); err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", name, got, err, want)
		}
	}
	// The exact name of one entity that is the label of another is the first (as the
	// ambiguity's hint, "its exact name", says); matched loosely, it is ambiguous.
	amb := writeDataset(t, map[string]string{"entities.tsv": "0\tm0\n1\tm1\n2\tm2\n", "entity_labels.tsv": "0\tm1\n1\tOne\n2\tOne\n"})
	d, err = Load(amb, FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	l = NewLookup(d)
	if got, err := l.Entity("m1"); err != nil || got != 1 {
		t.Errorf("m1, the exact name of entity 1 and the label of entity 0: %d, %v", got, err)
	}
	for name, want := range map[string]string{
		"M1":  `entity "M1" is ambiguous: 2 entities match it: id 0 name "m0" label "m1"; id 1 name "m1" label "One" (write the entity by its id or its exact name)`,
		"one": `entity "one" is ambiguous: 2 entities match it: id 1 name "m1" label "One"; id 2 name "m2" label "One"`,
	} {
		_, err := l.Entity(name)
		var le *LookupError
		if !errors.As(err, &le) || !le.Ambiguous || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", name, err, want)
		}
	}
	// A dataset of names keys its labels by name.
	names := writeDataset(t, map[string]string{
		"train.tsv": "a\tr\tb\nb\ts\tc\n", "valid.tsv": "a\tr\tc\n", "test.tsv": "c\ts\ta\n",
		"entity_labels.tsv": "c\tSee\nzz\tnobody\na\tAy\n",
	})
	d, err = Load(names, FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(d.EntityLabels, "|") != "Ay||See" || len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "skipped 1 labels") {
		t.Errorf("labels %q, warnings %q", d.EntityLabels, d.Warnings)
	}
	if got, err := NewLookup(d).Relation("s"); err != nil || got != 2 {
		t.Errorf("relation s: %d, %v", got, err)
	}
	// No names at all: ids only.
	bare := writeDataset(t, nil)
	d, err = Load(bare, FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewLookup(d).Entity("x"); err == nil || !strings.Contains(err.Error(), "names no entities") {
		t.Errorf("no names: %v", err)
	}
	if _, err := NewLookup(d).Relation("x"); err == nil || !strings.Contains(err.Error(), "names no relations") {
		t.Errorf("no names: %v", err)
	}
}

func TestLabelErrors(t *testing.T) {
	for _, tc := range []struct {
		labels, want string
	}{
		{"0\ta\n0\tb\n", "entity_labels.tsv:2: id 0 after id 0"},
		{"1\ta\n0\tb\n", "entity_labels.tsv:2: id 0 after id 1"},
		{"x\ta\n", `entity_labels.tsv:1: id "x" is not a non-negative integer`},
		{"3\ta\n", "entity_labels.tsv:1: entity id 3 out of range [0,3)"},
		{"0\ta\tb\n", "entity_labels.tsv:1: want 2 tab-separated fields, got 3"},
	} {
		dir := writeDataset(t, map[string]string{"entity_labels.tsv": tc.labels})
		if _, err := Load(dir, FormatAuto); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %s", tc.labels, err, tc.want)
		}
	}
	dir := writeDataset(t, map[string]string{"train.tsv": "a\tr\tb\n", "valid.tsv": "", "test.tsv": "", "entity_labels.tsv": "a\tx\na\ty\n"})
	if _, err := Load(dir, FormatAuto); err == nil || !strings.Contains(err.Error(), `entity_labels.tsv:2: a second label for entity "a"`) {
		t.Errorf("names: %v", err)
	}
}

func TestLookupShipped(t *testing.T) {
	if testing.Short() {
		t.Skip("loads FB15k-237")
	}
	d, err := Load("../../data/fb15k-237", FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.EntityLabels) != d.NumEntities || d.EntityLabels[0] != "Dominican_Republic" {
		t.Fatalf("%d labels, first %q", len(d.EntityLabels), d.EntityLabels[0])
	}
	l := NewLookup(d)
	checkLookups(t, l, []lookupCase{
		{"Dominican_Republic", false, 0}, {"dominican republic", false, 0}, {"/m/027rn", false, 0}, {"Peter_O'Toole", false, 193},
		{"/location/country/form_of_government", true, 0}, {"+/location/country/form_of_government", true, 0}, {"-/location/country/form_of_government", true, 1},
	})
	_, err = l.Entity("Washington_County")
	var le *LookupError
	if !errors.As(err, &le) || !le.Ambiguous || le.Matches != 7 || len(le.Candidates) != 7 {
		t.Errorf("Washington_County: %v", err)
	}
	_, err = l.Entity("Dominican Repblic")
	if !errors.As(err, &le) || le.Ambiguous || len(le.Candidates) == 0 || le.Candidates[0].ID != 0 {
		t.Errorf("Dominican Repblic: %v", err)
	}
	_, err = l.Relation("/film/film/genres")
	if !errors.As(err, &le) || len(le.Candidates) == 0 || le.Candidates[0].Name != "+/film/film/genre" {
		t.Errorf("/film/film/genres: %v", err)
	}
	t.Log(err)
}

// TestLookupNFC: a name typed with decomposed accents (u and a combining diaeresis, as
// macOS file names and some keyboards give it) finds the entity whose label has the
// composed character, and the other way round. It used to be "unknown entity "Zürich";
// the closest: ... label "Zürich"", two spellings that print alike.
func TestLookupNFC(t *testing.T) {
	const nfc, nfd = "Z\u00fcrich", "Zu\u0308rich"
	dir := writeDataset(t, map[string]string{
		"entities.tsv":      "0\tm0\n1\tm1\n2\tm2\n",
		"relations.tsv":     "0\t+r\u00e9l\n1\t-r\u00e9l\n2\t+s\n3\t-s\n",
		"entity_labels.tsv": "0\t" + nfc + "\n1\tCafe\u0301_de_Flore\n",
	})
	d, err := Load(dir, FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLookup(d)
	checkLookups(t, l, []lookupCase{
		{nfc, false, 0}, {nfd, false, 0}, {"zu\u0308rich", false, 0}, {"ZU\u0308RICH", false, 0},
		{"Caf\u00e9 de Flore", false, 1}, {"Cafe\u0301_de_Flore", false, 1},
		{"-re\u0301l", true, 1}, {"re\u0301l", true, 0}, {"r\u00e9l", true, 0},
	})
}

// lookupCase is a name to look up, as an entity or (rel) a relation, and the id it must
// find.
type lookupCase struct {
	name string
	rel  bool
	want int32
}

func checkLookups(t *testing.T, l *Lookup, cases []lookupCase) {
	t.Helper()
	for _, tc := range cases {
		var got int32
		var err error
		if tc.rel {
			got, err = l.Relation(tc.name)
		} else {
			got, err = l.Entity(tc.name)
		}
		if err != nil || got != tc.want {
			t.Errorf("%+q: %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}

// TestAmbiguousHint: an ambiguity's hint says what tells the matches apart. Where a name
// table gives several ids the same name, only the id does (the hint used to offer "its
// exact name", the very name typed); where labels or a loose match collide, the exact
// name does too.
func TestAmbiguousHint(t *testing.T) {
	dir := writeDataset(t, map[string]string{
		"entities.tsv":      "0\tm0\n1\tm0\n2\tm2\n",
		"relations.tsv":     "0\t+r\n1\t-r\n2\t+r\n3\t-r\n",
		"entity_labels.tsv": "0\tOne\n2\tOne\n",
	})
	d, err := Load(dir, FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLookup(d)
	for _, tc := range []struct {
		name string
		rel  bool
		want string
	}{
		{"m0", false, `entity "m0" is ambiguous: 2 entities match it: id 0 name "m0" label "One"; id 1 name "m0" (they have the same name: write the entity by its id)`},
		{"M0", false, `entity "M0" is ambiguous: 2 entities match it: id 0 name "m0" label "One"; id 1 name "m0" (write the entity by its id or its exact name)`},
		{"One", false, `entity "One" is ambiguous: 2 entities match it: id 0 name "m0" label "One"; id 2 name "m2" label "One" (write the entity by its id or its exact name)`},
		{"-r", true, `relation "-r" is ambiguous: 2 relations match it: id 1 name "-r"; id 3 name "-r" (they have the same name: write the relation by its id)`},
		{"r", true, `relation "r" is ambiguous: 2 relations match it: id 0 name "+r"; id 2 name "+r" (they have the same name: write the relation by its id)`},
	} {
		var err error
		if tc.rel {
			_, err = l.Relation(tc.name)
		} else {
			_, err = l.Entity(tc.name)
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v\nwant %s", tc.name, err, tc.want)
		}
	}
}
