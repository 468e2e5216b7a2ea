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
