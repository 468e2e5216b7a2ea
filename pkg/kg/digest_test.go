package kg

import "testing"

func TestEntityDigest(t *testing.T) {
	base := &Dataset{EntityNames: []string{"a", "bc", "d"}}
	tests := []struct {
		name  string
		d     *Dataset
		same  bool // the same digest as base
		empty bool
	}{
		{"same names", &Dataset{EntityNames: []string{"a", "bc", "d"}, Name: "other name"}, true, false},
		{"one renamed", &Dataset{EntityNames: []string{"a", "bx", "d"}}, false, false},
		{"reordered", &Dataset{EntityNames: []string{"bc", "a", "d"}}, false, false},
		{"boundary moved", &Dataset{EntityNames: []string{"ab", "c", "d"}}, false, false},
		{"one more", &Dataset{EntityNames: []string{"a", "bc", "d", ""}}, false, false},
		{"no names", &Dataset{NumEntities: 3}, false, true},
	}
	want := base.EntityDigest()
	if len(want) != 64 {
		t.Fatalf("digest %q: want 64 hex digits", want)
	}
	for _, tc := range tests {
		got := tc.d.EntityDigest()
		switch {
		case tc.empty && got != "":
			t.Errorf("%s: digest %q, want none", tc.name, got)
		case !tc.empty && (got == want) != tc.same:
			t.Errorf("%s: digest %.12s, base %.12s, same=%v", tc.name, got, want, tc.same)
		}
	}
}

// TestDigest: the KG digest covers the counts, both name tables and every split's facts
// as sets; an id-only KG has one too; labels and the folder's name are not part of it.
func TestDigest(t *testing.T) {
	base := func() *Dataset {
		return &Dataset{Name: "x", NumEntities: 4, NumRelations: 2,
			Train: []Triple{{0, 0, 1}, {1, 1, 0}, {2, 0, 3}, {3, 1, 2}}, Valid: []Triple{{0, 0, 2}}, Test: []Triple{{1, 0, 3}}}
	}
	want := base().Digest()
	if len(want) != 64 {
		t.Fatalf("digest %q: want 64 hex digits", want)
	}
	for _, tc := range []struct {
		name string
		edit func(d *Dataset)
		same bool
	}{
		{"another folder name", func(d *Dataset) { d.Name = "y" }, true},
		{"train lines reordered", func(d *Dataset) { d.Train[0], d.Train[3] = d.Train[3], d.Train[0] }, true},
		{"labels", func(d *Dataset) { d.EntityLabels = []string{"a", "b", "c", "d"} }, true},
		{"one edge's tail", func(d *Dataset) { d.Train[2].Tail = 1 }, false},
		{"one edge moved from valid to test", func(d *Dataset) { d.Test = append(d.Test, d.Valid[0]); d.Valid = nil }, false},
		{"one edge fewer", func(d *Dataset) { d.Train = d.Train[:3] }, false},
		{"an entity more", func(d *Dataset) { d.NumEntities++ }, false},
		{"entity names", func(d *Dataset) { d.EntityNames = []string{"a", "b", "c", "d"} }, false},
		{"relation names", func(d *Dataset) { d.RelationNames = []string{"r", "r-inv"} }, false},
		{"empty name tables", func(d *Dataset) { d.EntityNames = []string{} }, false},
	} {
		d := base()
		tc.edit(d)
		if got := d.Digest(); (got == want) != tc.same {
			t.Errorf("%s: digest %.12s, base %.12s; want same=%v", tc.name, got, want, tc.same)
		}
	}
}

// TestDigestNames: the digest covers the name tables' contents, not only whether there
// are any: two KGs with the same facts and counts but other names (another KG's ids
// lined up with ours) must not be taken for each other.
func TestDigestNames(t *testing.T) {
	base := func() *Dataset {
		return &Dataset{NumEntities: 3, NumRelations: 2, EntityNames: []string{"a", "bc", "d"}, RelationNames: []string{"+r", "-r"},
			Train: []Triple{{0, 0, 1}, {1, 1, 0}}}
	}
	want := base().Digest()
	for _, tc := range []struct {
		name string
		edit func(d *Dataset)
		same bool
	}{
		{"the same names", func(d *Dataset) {}, true},
		{"an entity renamed", func(d *Dataset) { d.EntityNames[1] = "bx" }, false},
		{"entity names swapped", func(d *Dataset) { d.EntityNames[0], d.EntityNames[2] = d.EntityNames[2], d.EntityNames[0] }, false},
		{"a name boundary moved", func(d *Dataset) { d.EntityNames = []string{"ab", "c", "d"} }, false},
		{"a relation renamed", func(d *Dataset) { d.RelationNames[0] = "+s" }, false},
		{"no entity names", func(d *Dataset) { d.EntityNames = nil }, false},
		{"no relation names", func(d *Dataset) { d.RelationNames = nil }, false},
	} {
		d := base()
		tc.edit(d)
		if got := d.Digest(); (got == want) != tc.same {
			t.Errorf("%s: digest %.12s, base %.12s; want same=%v", tc.name, got, want, tc.same)
		}
	}
}
