package eval

import (
	"cmp"
	"math/rand/v2"
	"slices"
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
		got, vals := TopEntities(scores, k, skip)
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
