package eval

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// rankKey maps entity (s, id) to an integer that orders entities the way the ranking does:
// a smaller key is ranked higher, by score descending, then entity id ascending. Scores that
// compare equal get the same high half (−0 and +0 included), and distinct ids give distinct
// keys. s must not be NaN.
func rankKey(s float32, id int32) uint64 {
	b := math.Float32bits(s + 0) // −0 + 0 = +0
	// b ^ mask is the usual order-preserving map of float bits to uint32 (flip everything
	// of a negative number, only the sign bit of a positive one); ^ of it reverses the order.
	mask := uint32(int32(b)>>31) | 1<<31
	return uint64(^(b^mask))<<32 | uint64(uint32(id))
}

// hardKey is a hard answer's rank key and its position in the caller's hard list.
type hardKey struct {
	key uint64
	pos int32
}

// Ranker computes filtered ranks (docs/queries.md §5, steps 1–3). It keeps scratch space
// between calls, so after the first few queries ranking does not allocate. The zero value is
// ready to use. A Ranker must not be used by several goroutines at once; give each worker its
// own.
type Ranker struct {
	keys   []hardKey // hard answers sorted by rank key, best first
	sorted []uint64  // their keys alone, for the search
	cnt    []int     // cnt[b]: entities ranked strictly above exactly the hard answers keys[b:]
	seen   []uint8   // one zero per entity, for checkAnswers
}

// FilteredRanks returns the filtered rank of every hard answer, using a fresh [Ranker]. It
// allocates scratch space on every call; for many queries use a Ranker.
func FilteredRanks(scores []float32, easy, hard []int32, out []int32) ([]int32, error) {
	var r Ranker
	return r.FilteredRanks(scores, easy, hard, out)
}

// FilteredRanks returns the filtered 1-based rank of each hard answer, in the order of hard,
// following docs/queries.md §5: scores[v] is the model's score of entity v (higher is
// better), easy and hard are the query's easy and hard answer sets, and the rank of a hard
// answer h is
//
//	1 + #{v ∉ easy ∪ hard : scores[v] > scores[h] or (scores[v] == scores[h] and v < h)}.
//
// This equals the reference's ρ_j − j + 1 rule when entities are sorted by (score
// descending, id ascending); see the package comment on ties.
//
// The ranks are written into out's storage (grown if its capacity is less than len(hard)) and
// the resulting slice of length len(hard) is returned.
//
// An error is returned, and no ranks, if any score is NaN, if an id is outside
// [0, len(scores)), if hard or easy holds an id twice, or if an id is in both (the protocol's
// easy and hard sets are disjoint). With no hard answers there is nothing to rank: the result
// is empty and nothing is checked.
//
// Cost: the entities are not sorted. Each (score, id) is mapped to a 64-bit integer key with
// the same order, and the hard answers are sorted by key. One pass over all entities then
// counts, for each entity, how many hard answers it is ranked above (a bucket histogram; an
// entity ranked below every hard answer costs one key comparison, others a branch-free
// binary search over the hard answers' keys), and the buckets of the answers themselves are
// subtracted afterwards. A prefix sum over the buckets gives every rank. In total
// O(N·log|H| + |E|·log|H| + |H|·log|H|) time in the worst case, O(N) when few entities score
// above the worst hard answer, and O(N + |H|) bytes of scratch space kept in the Ranker (the
// answer lists are checked with a mark per entity: checkAnswers, which the device path
// shares).
func (r *Ranker) FilteredRanks(scores []float32, easy, hard []int32, out []int32) ([]int32, error) {
	n := len(scores)
	m := len(hard)
	if int64(n) > math.MaxInt32 {
		return nil, fmt.Errorf("eval: %d entities do not fit int32 ids", n)
	}
	out = slices.Grow(out[:0], m)[:m]
	if m == 0 {
		return out, nil
	}

	if len(r.seen) < n {
		r.seen = make([]uint8, n)
	}
	if err := checkAnswers(easy, hard, r.seen[:n]); err != nil {
		return nil, err
	}

	// Hard answers, sorted best first.
	keys := slices.Grow(r.keys[:0], m)[:m]
	r.keys = keys
	for i, h := range hard {
		s := scores[h]
		if s != s {
			return nil, fmt.Errorf("eval: score of entity %d is NaN", h)
		}
		keys[i] = hardKey{key: rankKey(s, h), pos: int32(i)}
	}
	slices.SortFunc(keys, func(a, b hardKey) int { return cmp.Compare(a.key, b.key) })
	sorted := slices.Grow(r.sorted[:0], m)[:m]
	r.sorted = sorted
	for i, k := range keys {
		sorted[i] = k.key
	}

	cnt := slices.Grow(r.cnt[:0], m+1)[:m+1]
	r.cnt = cnt
	clear(cnt)

	// One pass over every entity. Its bucket b is the number of hard answers it is not
	// ranked strictly above, so it is ranked strictly above exactly keys[b:]. (A hard answer
	// keys[j] lands in bucket j+1.) Fast path: an entity ranked below every hard answer.
	worst := sorted[m-1]
	below := 0 // bucket m, kept in a register
	for v, s := range scores {
		if s != s {
			return nil, fmt.Errorf("eval: score of entity %d is NaN", v)
		}
		k := rankKey(s, int32(v))
		if k > worst {
			below++
			continue
		}
		cnt[bucket(sorted, k)]++
	}
	cnt[m] += below

	// Remove the answers from the competition: a hard answer keys[j] sits in bucket j+1, an
	// easy answer in the bucket found by search.
	for j := range keys {
		cnt[j+1]--
	}
	for _, e := range easy {
		cnt[bucket(sorted, rankKey(scores[e], e))]--
	}

	// Non-answers ranked above keys[j] are those in buckets 0..j.
	above := 0
	for j, k := range keys {
		above += cnt[j]
		out[k.pos] = int32(above + 1)
	}
	return out, nil
}

// bucket returns the number of keys in sorted (ascending, non-empty) that are ≤ k: the
// hard answers that entity k is not ranked strictly above. The search is branch-free.
func bucket(sorted []uint64, k uint64) int {
	base, n := 0, len(sorted)
	for n > 1 {
		half := n >> 1
		// borrow is 1 when k < sorted[base+half-1]; then base stays, else it moves.
		_, borrow := bits.Sub64(k, sorted[base+half-1], 0)
		base += half & (int(borrow) - 1)
		n -= half
	}
	_, borrow := bits.Sub64(k, sorted[base], 0)
	return base + 1 - int(borrow)
}
