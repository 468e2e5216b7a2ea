// Package answer evaluates grounded queries on a graph with exact set semantics:
// projection follows a relation, intersection and union combine branches, and negation
// is the complement over all entities (ids 0..N-1), as BetaE's generator does.
//
// A set is held sparse (a sorted id list) while it is small and as a bitset once it
// holds more than N/32 entities, where the bitset becomes the smaller of the two.
package answer

import (
	"math/bits"
)

// Set is a set of entity ids over the universe [0, n): sparse (sorted ids) or dense (bits).
type Set struct {
	n      int
	sparse []int32
	bits   []uint64 // non-nil when dense
	count  int
}

// Len is the number of entities in the set.
func (s *Set) Len() int { return s.count }

// Dense reports whether the set is held as a bitset.
func (s *Set) Dense() bool { return s.bits != nil }

// Contains reports whether e is in the set.
func (s *Set) Contains(e int32) bool {
	if s.bits != nil {
		return s.bits[e>>6]&(1<<(uint(e)&63)) != 0
	}
	lo, hi := 0, len(s.sparse)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s.sparse[mid] < e {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo < len(s.sparse) && s.sparse[lo] == e
}

// AppendTo appends the ids in ascending order to dst.
func (s *Set) AppendTo(dst []int32) []int32 {
	if s.bits == nil {
		return append(dst, s.sparse...)
	}
	return appendBits(s.bits, dst)
}

// IDs returns the ids in ascending order.
func (s *Set) IDs() []int32 { return s.AppendTo(make([]int32, 0, s.count)) }

// Single is the set {e}.
func Single(n int, e int32) *Set { return &Set{n: n, sparse: []int32{e}, count: 1} }

// FromSorted wraps sorted, distinct ids (not copied).
func FromSorted(n int, ids []int32) *Set {
	return normalise(&Set{n: n, sparse: ids, count: len(ids)})
}

func words(n int) int { return (n + 63) >> 6 }

// sparseLimit is the size above which a bitset takes less memory than an id list.
func sparseLimit(n int) int { return n / 32 }

// normalise picks the cheaper representation for the set's size.
func normalise(s *Set) *Set {
	switch {
	case s.bits == nil && s.count > sparseLimit(s.n):
		b := make([]uint64, words(s.n))
		for _, e := range s.sparse {
			b[e>>6] |= 1 << (uint(e) & 63)
		}
		return &Set{n: s.n, bits: b, count: s.count}
	case s.bits != nil && s.count <= sparseLimit(s.n):
		return &Set{n: s.n, sparse: s.AppendTo(make([]int32, 0, s.count)), count: s.count}
	}
	return s
}

func (s *Set) toBits() []uint64 {
	if s.bits != nil {
		return s.bits
	}
	b := make([]uint64, words(s.n))
	for _, e := range s.sparse {
		b[e>>6] |= 1 << (uint(e) & 63)
	}
	return b
}

func popcount(b []uint64) int {
	c := 0
	for _, w := range b {
		c += bits.OnesCount64(w)
	}
	return c
}

// Intersect returns a ∩ b.
func Intersect(a, b *Set) *Set {
	if a.bits == nil && b.bits == nil {
		out := make([]int32, 0, min(len(a.sparse), len(b.sparse)))
		i, j := 0, 0
		for i < len(a.sparse) && j < len(b.sparse) {
			switch {
			case a.sparse[i] < b.sparse[j]:
				i++
			case a.sparse[i] > b.sparse[j]:
				j++
			default:
				out = append(out, a.sparse[i])
				i++
				j++
			}
		}
		return &Set{n: a.n, sparse: out, count: len(out)}
	}
	if a.bits != nil && b.bits != nil {
		out := make([]uint64, len(a.bits))
		for i := range out {
			out[i] = a.bits[i] & b.bits[i]
		}
		return normalise(&Set{n: a.n, bits: out, count: popcount(out)})
	}
	if a.bits != nil {
		a, b = b, a
	}
	out := make([]int32, 0, len(a.sparse))
	for _, e := range a.sparse {
		if b.bits[e>>6]&(1<<(uint(e)&63)) != 0 {
			out = append(out, e)
		}
	}
	return &Set{n: a.n, sparse: out, count: len(out)}
}

// Union returns a ∪ b.
func Union(a, b *Set) *Set {
	if a.bits == nil && b.bits == nil {
		out := make([]int32, 0, len(a.sparse)+len(b.sparse))
		i, j := 0, 0
		for i < len(a.sparse) || j < len(b.sparse) {
			switch {
			case j == len(b.sparse) || (i < len(a.sparse) && a.sparse[i] < b.sparse[j]):
				out = append(out, a.sparse[i])
				i++
			case i == len(a.sparse) || a.sparse[i] > b.sparse[j]:
				out = append(out, b.sparse[j])
				j++
			default:
				out = append(out, a.sparse[i])
				i++
				j++
			}
		}
		return normalise(&Set{n: a.n, sparse: out, count: len(out)})
	}
	ab, bb := a.toBits(), b.toBits()
	out := make([]uint64, len(ab))
	for i := range out {
		out[i] = ab[i] | bb[i]
	}
	return normalise(&Set{n: a.n, bits: out, count: popcount(out)})
}

// Complement returns {0..n-1} \ a.
func Complement(a *Set) *Set {
	ab := a.toBits()
	out := make([]uint64, len(ab))
	for i := range out {
		out[i] = ^ab[i]
	}
	if r := a.n & 63; r != 0 {
		out[len(out)-1] &= 1<<uint(r) - 1
	}
	return normalise(&Set{n: a.n, bits: out, count: a.n - a.count})
}

// Difference returns a \ b.
func Difference(a, b *Set) *Set {
	if a.bits == nil {
		out := make([]int32, 0, len(a.sparse))
		for _, e := range a.sparse {
			if !b.Contains(e) {
				out = append(out, e)
			}
		}
		return &Set{n: a.n, sparse: out, count: len(out)}
	}
	bb := b.toBits()
	out := make([]uint64, len(a.bits))
	for i := range out {
		out[i] = a.bits[i] &^ bb[i]
	}
	return normalise(&Set{n: a.n, bits: out, count: popcount(out)})
}

// appendBits appends the ids set in b, ascending, to dst.
func appendBits(b []uint64, dst []int32) []int32 {
	for w, word := range b {
		for word != 0 {
			dst = append(dst, int32(w<<6+bits.TrailingZeros64(word)))
			word &= word - 1
		}
	}
	return dst
}
