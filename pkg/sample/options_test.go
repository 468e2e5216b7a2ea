package sample

import (
	"context"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/kg"
)

// TestFlagValues: each flag value that used to be ignored or silently changed is either a
// clear error or its documented meaning.
func TestFlagValues(t *testing.T) {
	tests := []struct {
		name string
		f    FlagValues
		want string // error substring; "" for none
	}{
		{"defaults", FlagValues{}, ""},
		{"types and counts", FlagValues{Types: "1p,2p", TypesSet: true, Count: "2p=5", CountSet: true}, ""},
		{"empty types", FlagValues{Types: "", TypesSet: true}, `--types "": no types`},
		{"blank types", FlagValues{Types: "  ", TypesSet: true}, "no types"},
		{"empty item", FlagValues{Types: "1p,,2p", TypesSet: true}, "item 2 is empty"},
		{"trailing comma", FlagValues{Types: "1p,", TypesSet: true}, "item 2 is empty"},
		{"type twice", FlagValues{Types: "1p,1p", TypesSet: true}, "1p is given twice"},
		{"type twice by notation", FlagValues{Types: "2p,('e',('r','r'))", TypesSet: true}, `2p is given twice (as "2p" and "('e',('r','r'))")`},
		{"unknown type", FlagValues{Types: "1p,7p", TypesSet: true}, `unknown query type "7p"`},
		{"max-answers 0", FlagValues{MaxAnswers: 0, MaxAnswersSet: true}, "--max-answers 0: the answer cap must be at least 1"},
		{"max-answers -1", FlagValues{MaxAnswers: -1, MaxAnswersSet: true}, "--max-answers -1"},
		{"max-answers 1", FlagValues{MaxAnswers: 1, MaxAnswersSet: true}, ""},
		{"negative workers", FlagValues{Workers: -2}, "--workers -2"},
		{"empty count", FlagValues{Count: "", CountSet: true}, "no counts"},
		{"count twice", FlagValues{Count: "2p=3,2p=4", CountSet: true}, "2p is given twice"},
		{"count of 10^30", FlagValues{Count: "2p=1000000000000000000000000000000", CountSet: true}, "is too large"},
		{"negative count", FlagValues{Count: "2p=-3", CountSet: true}, "not a non-negative integer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.f.Options()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestGenerateRefuses: options Generate refuses before sampling anything, and empty
// results nobody asked for; an explicit count of 0 is allowed.
func TestGenerateRefuses(t *testing.T) {
	d := loadTiny(t)
	tests := []struct {
		name  string
		split string
		opts  Options
		want  string // error substring; "" for success
		n     int    // queries expected on success; -1: any positive number
	}{
		{"count for a type not sampled", "valid", Options{Types: []string{"1p"}, Counts: map[string]int{"2p": 5}}, "--count 2p=5: 2p is not among the types to sample (1p)", 0},
		{"two counts for one type", "valid", Options{Types: []string{"2p"}, Counts: map[string]int{"2p": 5, "('e',('r','r'))": 6}}, "two counts for 2p", 0},
		{"types twice", "valid", Options{Types: []string{"1p", "('e',('r',))"}}, "1p is given twice", 0},
		{"negative cap", "valid", Options{Types: []string{"2p"}, MaxAnswers: -1}, "answer cap -1", 0},
		{"1p count above the pairs: all of them", "valid", Options{Types: []string{"1p"}, Counts: map[string]int{"1p": 1_000_000}}, "", -1},
		{"explicit 1p=0", "test", Options{Types: []string{"1p", "2p"}, Counts: map[string]int{"1p": 0, "2p": 3}}, "", 3},
		{"count by notation", "test", Options{Types: []string{"2p"}, Counts: map[string]int{"('e',('r','r'))": 4}}, "", 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGraphs(d, tc.split)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			_, err = Generate(context.Background(), g, tc.opts, func(*Query) error { n++; return nil })
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one containing %q", err, tc.want)
				}
				if n != 0 {
					t.Errorf("%d queries emitted before the error", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (tc.n < 0 && n == 0) || (tc.n >= 0 && n != tc.n) {
				t.Errorf("%d queries, want %d", n, tc.n)
			}
		})
	}
}

// TestEmptyTypeIsAnError: a type that yields no query without being asked for 0 is an
// error naming the type and the way to allow it; the same run with --count TYPE=0 passes.
func TestEmptyTypeIsAnError(t *testing.T) {
	d := loadTiny(t)
	g, err := NewGraphs(d, "test")
	if err != nil {
		t.Fatal(err)
	}
	// A split whose own links are all gone: no 1p query can exist.
	empty := *g
	empty.Own = emptyGraph(g)
	_, err = Generate(context.Background(), &empty, Options{Types: []string{"1p"}}, func(*Query) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "sampling 1p: no query found") || !strings.Contains(err.Error(), "--count 1p=0") {
		t.Fatalf("error %v", err)
	}
	if _, err := Generate(context.Background(), &empty, Options{Types: []string{"1p"}, Counts: map[string]int{"1p": 0}}, func(*Query) error { return nil }); err != nil {
		t.Fatalf("--count 1p=0: %v", err)
	}
}

func emptyGraph(g *Graphs) *kg.Graph {
	return kg.NewGraph(g.Big.NumEntities, g.Big.NumRelations)
}
