package eval

import (
	"fmt"
	"math"
	"slices"
)

// hardKey is a hard answer with its score and its position in the caller's hard list.
type hardKey struct {
	score float32
	id    int32
	pos   int32
}

// beatenBy reports whether entity (s, id) is ranked strictly above k in the total order used
// for ranking: score descending, then entity id ascending. No score may be NaN.
func (k hardKey) beatenBy(s float32, id int32) bool {
	return s > k.score || (s == k.score && id < k.id)
}

func compareKeys(a, b hardKey) int {
	switch {
	case a.score > b.score:
		return -1
	case a.score < b.score:
		return 1
	case a.id < b.id:
		return -1
	case a.id > b.id:
		return 1
	}
	return 0
}

// Ranker computes filtered ranks (queries.md section 5, steps 1–3). It keeps scratch space
// between calls, so after the first few queries ranking does not allocate. The zero value is
// ready to use. A Ranker must not be used by several goroutines at once; give each worker its
// own.
type Ranker struct {
	keys []hardKey // hard answers sorted by (score desc, id asc)
	cnt  []int     // cnt[b]: entities with exactly b hard answers ranked above them
	easy []int32   // sorted copy of the easy answers, to detect duplicates
}

// FilteredRanks returns the filtered rank of every hard answer, using a fresh [Ranker]. It
// allocates scratch space on every call; for many queries use a Ranker.
func FilteredRanks(scores []float32, easy, hard []int32, out []int32) ([]int32, error) {
	var r Ranker
	return r.FilteredRanks(scores, easy, hard, out)
}

// FilteredRanks returns the filtered 1-based rank of each hard answer, in the order of hard,
// following queries.md section 5: scores[v] is the model's score of entity v (higher is
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
// easy and hard sets are disjoint).
//
// Cost: the entities are not sorted. The hard answers are sorted by (score desc, id asc);
// one pass over all entities then counts, for each entity, how many hard answers rank above
// it (a bucket histogram; an entity ranked below every hard answer costs two comparisons,
// others a binary search over the hard answers), and the buckets of the answers themselves
// are subtracted afterwards. A prefix sum over the buckets gives every rank. In total
// O(N·log|H| + |E|·log|E| + |H|·log|H|) time in the worst case, O(N) when few entities score
// above the worst hard answer, and O(|E| + |H|) scratch space kept in the Ranker.
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

	// Hard answers, sorted best first.
	keys := slices.Grow(r.keys[:0], m)[:m]
	r.keys = keys
	for i, h := range hard {
		if h < 0 || int(h) >= n {
			return nil, fmt.Errorf("eval: hard answer %d out of range [0,%d)", h, n)
		}
		s := scores[h]
		if s != s {
			return nil, fmt.Errorf("eval: score of entity %d is NaN", h)
		}
		keys[i] = hardKey{score: s, id: h, pos: int32(i)}
	}
	slices.SortFunc(keys, compareKeys)
	for i := 1; i < m; i++ {
		if keys[i].id == keys[i-1].id {
			return nil, fmt.Errorf("eval: hard answer %d listed twice", keys[i].id)
		}
	}

	// Easy answers: range and duplicate checks on a sorted copy.
	ez := append(r.easy[:0], easy...)
	r.easy = ez
	slices.Sort(ez)
	for i, e := range ez {
		if e < 0 || int(e) >= n {
			return nil, fmt.Errorf("eval: easy answer %d out of range [0,%d)", e, n)
		}
		if i > 0 && e == ez[i-1] {
			return nil, fmt.Errorf("eval: easy answer %d listed twice", e)
		}
	}

	cnt := slices.Grow(r.cnt[:0], m+1)[:m+1]
	r.cnt = cnt
	clear(cnt)

	// One pass over every entity: bucket b = number of hard answers ranked above it or equal
	// to it. The entity is then ranked strictly above exactly the hard answers keys[b:].
	// (A hard answer keys[j] lands in bucket j+1.)
	worst := keys[m-1]
	for v, s := range scores {
		id := int32(v)
		// Fast path: below the worst hard answer. NaN fails both comparisons and takes the
		// slow path, where it is reported.
		if s < worst.score || (s == worst.score && id > worst.id) {
			cnt[m]++
			continue
		}
		if s != s {
			return nil, fmt.Errorf("eval: score of entity %d is NaN", v)
		}
		cnt[bucket(keys, s, id)]++
	}

	// Remove the answers from the competition. A hard answer keys[j] sits in bucket j+1; an
	// easy answer in the bucket found by search. An easy answer equal to a hard answer has
	// the same key, so the search lands just past it.
	for j := range keys {
		cnt[j+1]--
	}
	for _, e := range ez {
		b := bucket(keys, scores[e], e)
		if b > 0 && keys[b-1].id == e {
			return nil, fmt.Errorf("eval: entity %d is both an easy and a hard answer", e)
		}
		cnt[b]--
	}

	// Non-answers ranked above keys[j] are those in buckets 0..j.
	above := 0
	for j, k := range keys {
		above += cnt[j]
		out[k.pos] = int32(above + 1)
	}
	return out, nil
}

// bucket returns the number of hard answers in keys (sorted best first) that entity (s, id)
// is not ranked strictly above: the index of the first key it beats.
func bucket(keys []hardKey, s float32, id int32) int {
	lo, hi := 0, len(keys)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if keys[mid].beatenBy(s, id) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}
