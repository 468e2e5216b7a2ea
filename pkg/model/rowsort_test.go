package model

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortRows compares SortRows with slices.Sort on lists short (insertion sort) and long
// (radix sort, one to three passes by the largest id), with repeats, sorted and reversed
// input; and checks that sortRows carries its values along, stably.
func TestSortRows(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	random := func(n int, hi int32) []int32 {
		x := make([]int32, n)
		for i := range x {
			x[i] = r.Int32N(hi)
		}
		return x
	}
	ascending := make([]int32, 500)
	for i := range ascending {
		ascending[i] = int32(3 * i)
	}
	descending := slices.Clone(ascending)
	slices.Reverse(descending)
	for _, tc := range []struct {
		name string
		ids  []int32
	}{
		{"empty", nil},
		{"one", []int32{5}},
		{"short with repeats", []int32{9, 3, 3, 0, 7, 9, 1}},
		{"63 ids", random(63, 1000)},
		{"64 ids", random(64, 1000)},
		{"one pass (ids < 2^11)", random(5000, 1<<11)},
		{"two passes", random(5000, 1_500_000)},
		{"three passes", random(5000, 1<<31-1)},
		{"all equal", make([]int32, 300)},
		{"sorted", ascending},
		{"reversed", descending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, want := slices.Clone(tc.ids), slices.Clone(tc.ids)
			SortRows(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			// With values: each value is its id's original position, so a stable sort
			// gives ascending values among equal ids.
			ids := slices.Clone(tc.ids)
			vals := make([]int32, len(ids))
			for i := range vals {
				vals[i] = int32(i)
			}
			sortRows(ids, vals)
			if !slices.Equal(ids, want) {
				t.Fatalf("with values: ids %v, want %v", ids, want)
			}
			for i, v := range vals {
				if tc.ids[v] != ids[i] {
					t.Fatalf("value %d went with id %d, its id is %d", v, ids[i], tc.ids[v])
				}
				if i > 0 && ids[i] == ids[i-1] && vals[i] < vals[i-1] {
					t.Fatalf("not stable at %d: values %d then %d for id %d", i, vals[i-1], v, ids[i])
				}
			}
		})
	}
}

// TestSortRowsRefusesNegative: a negative id is a caller's bug, not a silent misorder.
func TestSortRowsRefusesNegative(t *testing.T) {
	ids := make([]int32, 100)
	ids[42] = -1
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	SortRows(ids)
}

// BenchmarkSortRows sorts the rows of a batch at 1.5M entities (65,000 distinct ids).
func BenchmarkSortRows(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	ids := make([]int32, 65_000)
	for i := range ids {
		ids[i] = r.Int32N(1_500_000)
	}
	for _, kind := range []string{"radix", "pdqsort"} {
		b.Run(kind, func(b *testing.B) {
			x := make([]int32, len(ids))
			for b.Loop() {
				copy(x, ids)
				if kind == "radix" {
					SortRows(x)
				} else {
					slices.Sort(x)
				}
			}
		})
	}
}
