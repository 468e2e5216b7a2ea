package eval

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// referenceTop sorts every entity not skipped by (score descending, id ascending).
func referenceTop(scores []float32, k int, skip func(int32) bool) []int32 {
	var ids []int32
	for e := range scores {
		if skip == nil || !skip(int32(e)) {
			ids = append(ids, int32(e))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int { return cmp.Or(cmp.Compare(scores[b], scores[a]), cmp.Compare(a, b)) })
	return ids[:min(k, len(ids))]
}

func TestTopEntities(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 500 {
		n := 1 + rng.IntN(40)
		scores := make([]float32, n)
		for i := range scores {
			scores[i] = float32(rng.IntN(6)) - 2 // many ties
		}
		k := rng.IntN(n + 3)
		var skip func(int32) bool
		if trial%2 == 1 {
			mask := make([]bool, n)
			for i := range mask {
				mask[i] = rng.IntN(3) == 0
			}
			skip = func(e int32) bool { return mask[e] }
		}
		got, vals, err := TopEntities(scores, k, skip)
		if err != nil {
			t.Fatal(err)
		}
		want := referenceTop(scores, k, skip)
		if !slices.Equal(got, want) {
			t.Fatalf("scores %v k %d: %v, want %v", scores, k, got, want)
		}
		for i, e := range got {
			if vals[i] != scores[e] {
				t.Fatalf("score of %d: %v, want %v", e, vals[i], scores[e])
			}
		}
	}
}

// TestTopEntitiesNaN: a NaN score is an error wherever it is, even skipped or with k = 0;
// the comparisons alone passed it over ([1 2 NaN 5 4] gave [3 4] for k = 2).
func TestTopEntitiesNaN(t *testing.T) {
	nan := float32(math.NaN())
	for _, c := range []struct {
		scores []float32
		k      int
		skip   func(int32) bool
		at     int
	}{
		{[]float32{1, 2, nan, 5, 4}, 2, nil, 2},
		{[]float32{nan, 2, 3}, 1, nil, 0},
		{[]float32{1, 2, nan}, 3, nil, 2},
		{[]float32{1, nan, 3}, 0, nil, 1},
		{[]float32{1, nan, 3}, 2, func(e int32) bool { return e == 1 }, 1},
	} {
		top, _, err := TopEntities(c.scores, c.k, c.skip)
		want := fmt.Sprintf("score of entity %d is NaN", c.at)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v k %d: %v, %v; want an error %q", c.scores, c.k, top, err, want)
		}
	}
}

// TestTopEntitiesK: k is clamped to [0, len(scores)]; a negative k asks for nothing, and
// fewer than k come back when skip leaves fewer.
func TestTopEntitiesK(t *testing.T) {
	scores := []float32{3, 1, 4, 1, 5}
	odd := func(e int32) bool { return e%2 == 1 }
	for _, c := range []struct {
		k    int
		skip func(int32) bool
		want []int32
	}{
		{-1, nil, []int32{}},
		{0, nil, []int32{}},
		{1, nil, []int32{4}},
		{3, nil, []int32{4, 2, 0}},
		{5, nil, []int32{4, 2, 0, 1, 3}},
		{9, nil, []int32{4, 2, 0, 1, 3}},
		{9, odd, []int32{4, 2, 0}},
		{-3, odd, []int32{}},
	} {
		got, vals, err := TopEntities(scores, c.k, c.skip)
		if err != nil {
			t.Fatalf("k %d: %v", c.k, err)
		}
		if !slices.Equal(got, c.want) || len(vals) != len(got) {
			t.Errorf("k %d: %v %v, want %v", c.k, got, vals, c.want)
		}
	}
}
