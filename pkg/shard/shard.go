// Package shard is the one definition of `--shard i/n`, shared by every stage that can
// split its work (sample generate, embed, rank) and by those that join the pieces
// (sample merge, metrics): how the flag is parsed, how it is written into and read from
// an artifact's schema metadata (key "shard", value "i/n"), and which contiguous part of
// a list of work items shard i of n owns. Keeping the cut in one place is what makes the
// union of the n shards equal the unsharded output.
package shard

import (
	"fmt"
	"strconv"
	"strings"
)

// MetaKey is the schema-metadata key a shard's artifact records its Spec under. An
// unsharded artifact has no such key (and "0/1" means the same: the whole).
const MetaKey = "shard"

// Spec is shard Index of Count (0 <= Index < Count). The zero value, like 0/1, is the
// whole: no sharding.
type Spec struct {
	Index, Count int
}

// Parse reads "i/n" as given to --shard: integers with 0 <= i < n and n >= 1.
func Parse(s string) (Spec, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Spec{}, fmt.Errorf("--shard %q: want i/n, shard i of n with 0 <= i < n (e.g. 0/3)", s)
	}
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	n, err2 := strconv.Atoi(strings.TrimSpace(ns))
	switch {
	case err1 != nil || err2 != nil:
		return Spec{}, fmt.Errorf("--shard %q: i and n must be integers (want i/n with 0 <= i < n, e.g. 0/3)", s)
	case n < 1:
		return Spec{}, fmt.Errorf("--shard %q: the number of shards must be at least 1", s)
	case i < 0 || i >= n:
		return Spec{}, fmt.Errorf("--shard %q: shard index %d out of range: shards are numbered 0 to %d", s, i, n-1)
	}
	return Spec{Index: i, Count: n}, nil
}

// Whole reports whether s is no sharding at all (the zero value or 0/1).
func (s Spec) Whole() bool { return s.Count <= 1 }

// String is "i/n", the flag's and the metadata's form; "" for the whole.
func (s Spec) String() string {
	if s.Whole() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Range is the part [lo, hi) of total items that shard s owns: contiguous, in order, and
// the n shards' ranges tile [0, total) exactly (sizes differ by at most one).
func (s Spec) Range(total int) (lo, hi int) {
	if s.Whole() {
		return 0, total
	}
	return s.Index * total / s.Count, (s.Index + 1) * total / s.Count
}

// BlockRange is Range over whole blocks of size block: shard s owns items [lo, hi), which
// begin and end on a block boundary (the last shard's hi is total). Stages whose results
// depend on how items are batched (rank scores block of queries together) cut here, so a
// shard's batches are the unsharded run's.
func (s Spec) BlockRange(total, block int) (lo, hi int) {
	if block < 1 {
		block = 1
	}
	blocks := (total + block - 1) / block
	bl, bh := s.Range(blocks)
	return min(bl*block, total), min(bh*block, total)
}

// Meta returns the metadata entries that record s: none for the whole.
func (s Spec) Meta() map[string]string {
	if s.Whole() {
		return nil
	}
	return map[string]string{MetaKey: s.String()}
}

// FromMeta reads the shard an artifact records (value of MetaKey; ok false when absent,
// which is the whole). name is the file, for the message.
func FromMeta(name, value string, ok bool) (Spec, error) {
	if !ok || value == "" {
		return Spec{}, nil
	}
	s, err := Parse(value)
	if err != nil {
		return Spec{}, fmt.Errorf("%s: schema metadata %s=%q is not a shard i/n", name, MetaKey, value)
	}
	if s.Whole() {
		return Spec{}, nil
	}
	return s, nil
}

// CheckSet checks that specs are the n shards of one run, each exactly once: all of the
// same count, no index missing or repeated. names[k] names specs[k] in messages, and what
// describes the run ("ranks of checkpoint m.arrow").
func CheckSet(what string, names []string, specs []Spec) error {
	if len(specs) == 0 {
		return fmt.Errorf("%s: no shards", what)
	}
	n := specs[0].Count
	at := make([]int, max(n, 1))
	for i := range at {
		at[i] = -1
	}
	for k, s := range specs {
		if s.Count != n {
			return fmt.Errorf("%s: %s is shard %s but %s is shard %s: shards of one run are all cut in the same number of parts",
				what, names[0], specs[0], names[k], s)
		}
		if s.Whole() {
			if len(specs) > 1 {
				return fmt.Errorf("%s: %s and %s are both the whole run (no shard metadata): one run counted twice", what, names[0], names[max(k, 1)])
			}
			return nil
		}
		if prev := at[s.Index]; prev >= 0 {
			return fmt.Errorf("%s: %s and %s are both shard %s: a shard given twice", what, names[prev], names[k], s)
		}
		at[s.Index] = k
	}
	var missing []string
	for i, k := range at {
		if k < 0 {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: shard %s missing (given %d of %d: %s)", what, strings.Join(missing, ", "), len(specs), n, strings.Join(names, " "))
	}
	return nil
}

// RangeKey is the schema-metadata key under which a shard's artifact records the items it
// holds (Span), so that the joining stage checks the shards tile the whole exactly: shards
// cut with different block sizes (rank --batch) would otherwise leave a gap or an overlap
// that nothing notices.
const RangeKey = "shard_range"

// Span is the items [First, End) of Total that a shard holds. The zero value is unknown
// (an artifact written before spans were recorded).
type Span struct{ First, End, Total int }

// Known reports whether the span was recorded.
func (s Span) Known() bool { return s.Total > 0 }

func (s Span) String() string { return fmt.Sprintf("%d-%d/%d", s.First, s.End, s.Total) }

// ParseSpan reads what Span.String writes; name is the file, for the message.
func ParseSpan(name, v string) (Span, error) {
	var s Span
	if _, err := fmt.Sscanf(v, "%d-%d/%d", &s.First, &s.End, &s.Total); err != nil || s.String() != v ||
		s.First < 0 || s.First >= s.End || s.End > s.Total {
		return Span{}, fmt.Errorf("%s: schema metadata %s=%q is not a range first-end/total of items", name, RangeKey, v)
	}
	return s, nil
}

// CheckTiling checks that spans, the shards of one run in shard order (names[k] names
// spans[k]), hold every item of the whole exactly once: the first begins at 0, each
// begins where the one before ends, the last ends at the total. It names the gap or the
// overlap and the two files around it.
func CheckTiling(what string, names []string, spans []Span) error {
	for k, s := range spans {
		if s.Total != spans[0].Total {
			return fmt.Errorf("%s: %s holds items of %d, %s of %d: not shards of one file", what, names[0], spans[0].Total, names[k], s.Total)
		}
		prev := 0
		if k > 0 {
			prev = spans[k-1].End
		}
		switch {
		case s.First > prev && k == 0:
			return fmt.Errorf("%s: items 0-%d are in no shard (%s begins at %d)", what, s.First, names[k], s.First)
		case s.First > prev:
			return fmt.Errorf("%s: items %d-%d are in no shard (%s ends at %d, %s begins at %d): shards cut with different batch sizes? cut them all with the same --batch",
				what, prev, s.First, names[k-1], prev, names[k], s.First)
		case s.First < prev:
			return fmt.Errorf("%s: items %d-%d are in two shards (%s ends at %d, %s begins at %d): shards cut with different batch sizes? cut them all with the same --batch",
				what, s.First, prev, names[k-1], prev, names[k], s.First)
		}
	}
	if last := spans[len(spans)-1]; last.End != last.Total {
		return fmt.Errorf("%s: items %d-%d are in no shard (%s, the last, ends at %d)", what, last.End, last.Total, names[len(names)-1], last.End)
	}
	return nil
}
