package sample

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rocone/rocone/pkg/query"
)

// FlagValues are the command line's sampling flags as given, with whether each was set, so
// that a value the user typed is checked as such (an explicit `--max-answers 0` is an
// error, a flag left out means the default).
type FlagValues struct {
	Types, Count       string
	TypesSet, CountSet bool
	MaxAnswers         int
	MaxAnswersSet      bool
	Seed               uint64
	Workers            int
}

// Options turns the flags into Generate's options, refusing values that would otherwise
// be ignored or silently changed: an empty or repeated --types item, a --count for a type
// not sampled, a --max-answers below 1, a negative --workers.
func (f FlagValues) Options() (Options, error) {
	opts := Options{Seed: f.Seed, Workers: f.Workers}
	if f.Workers < 0 {
		return opts, fmt.Errorf("--workers %d: want a positive number of goroutines (leave it out for every core)", f.Workers)
	}
	if f.MaxAnswersSet {
		if f.MaxAnswers < 1 {
			return opts, fmt.Errorf("--max-answers %d: the answer cap must be at least 1 (leave the flag out for the default: %d on valid/test, none on train)",
				f.MaxAnswers, DefaultMaxAnswers)
		}
		opts.MaxAnswers = f.MaxAnswers
	}
	if f.TypesSet {
		types, err := ParseTypes(f.Types)
		if err != nil {
			return opts, err
		}
		opts.Types = types
	}
	if f.CountSet {
		counts, err := ParseCounts(f.Count)
		if err != nil {
			return opts, err
		}
		opts.Counts = counts
	}
	return opts, nil
}

// ParseTypes reads a --types list: type names or structure notations, separated by commas
// at the top level. An empty list, an empty item, an unknown type or a type given twice
// (by name or by notation: "1p" and "('e',('r',))" are the same type) is an error.
func ParseTypes(s string) ([]string, error) {
	items := SplitList(s)
	if len(items) == 0 {
		return nil, fmt.Errorf("--types %q: no types; give type names or structure notations (e.g. 1p,2p), or leave the flag out for the split's BetaE types", s)
	}
	if _, err := resolveTypes(items); err != nil {
		return nil, fmt.Errorf("--types %q: %w", s, err)
	}
	return items, nil
}

// resolveTypes parses each type and checks that none is empty and none repeats.
func resolveTypes(types []string) ([]*query.Structure, error) {
	out := make([]*query.Structure, len(types))
	first := map[string]string{} // notation -> the item that named it first
	for i, t := range types {
		if strings.TrimSpace(t) == "" {
			return nil, fmt.Errorf("item %d is empty", i+1)
		}
		s, err := resolveType(t)
		if err != nil {
			return nil, err
		}
		if prev, dup := first[s.String()]; dup {
			if prev == t {
				return nil, fmt.Errorf("%s is given twice", t)
			}
			return nil, fmt.Errorf("%s is given twice (as %q and %q)", s.Name(), prev, t)
		}
		first[s.String()] = t
		out[i] = s
	}
	return out, nil
}

// countsFor matches the counts to the structures to sample: the count of structure i is
// counts[i] when given[i]. A count for a type that is not sampled, or two counts for one
// type (by name and by notation), is an error.
func countsFor(structs []*query.Structure, counts map[string]int) (n []int, given []bool, err error) {
	n, given = make([]int, len(structs)), make([]bool, len(structs))
	idx := map[string]int{}
	var names []string
	for i, s := range structs {
		idx[s.String()] = i
		names = append(names, s.Name())
	}
	from := map[int]string{}
	keys := slices.Sorted(maps.Keys(counts)) // a deterministic first error
	for _, key := range keys {
		c := counts[key]
		s, err := resolveType(key)
		if err != nil {
			return nil, nil, fmt.Errorf("--count %s=%d: %w", key, c, err)
		}
		i, ok := idx[s.String()]
		if !ok {
			return nil, nil, fmt.Errorf("--count %s=%d: %s is not among the types to sample (%s); add it to --types or drop the count",
				key, c, s.Name(), strings.Join(names, " "))
		}
		if prev, dup := from[i]; dup {
			return nil, nil, fmt.Errorf("--count: two counts for %s (%q and %q)", s.Name(), prev, key)
		}
		from[i] = key
		n[i], given[i] = c, true
	}
	return n, given, nil
}
