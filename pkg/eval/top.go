package eval

import "fmt"

// TopEntities returns the k highest-scoring entities and their scores, best first, ties
// by the lower id (the ranking's order; raw, not filtered). Entities for which skip
// returns true are passed over (skip may be nil): rank --ask --exclude-known skips the
// known answers. Fewer than k come back when fewer remain. A NaN score, anywhere, is an
// error, as in FilteredRanks: it has no place in the order, and the comparisons would
// pass it over (and every entity after it that it displaced) without a word.
func TopEntities(scores []float32, k int, skip func(int32) bool) ([]int32, []float32, error) {
	k = max(0, min(k, len(scores)))
	top := make([]int32, 0, k+1)
	better := func(a, b int32) bool {
		return scores[a] > scores[b] || (scores[a] == scores[b] && a < b)
	}
	for e, s := range scores {
		if s != s {
			return nil, nil, fmt.Errorf("eval: score of entity %d is NaN", e)
		}
		id := int32(e)
		if k == 0 || (len(top) == k && !better(id, top[k-1])) || (skip != nil && skip(id)) {
			continue
		}
		i := len(top)
		top = append(top, id)
		for i > 0 && better(id, top[i-1]) {
			top[i] = top[i-1]
			i--
		}
		top[i] = id
		if len(top) > k {
			top = top[:k]
		}
	}
	vals := make([]float32, len(top))
	for i, e := range top {
		vals[i] = scores[e]
	}
	return top, vals, nil
}
