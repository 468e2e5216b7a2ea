package sample

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"

	"github.com/rocone/rocone/pkg/answer"
	"github.com/rocone/rocone/pkg/query"
)

// ImportBetaE reads a BetaE query pickle (a dict from structure tuples to sets of grounded
// query tuples, as in BetaE's {valid,test}-queries.pkl), answers every query on the split's
// graphs (easy: the small graph's answers; hard: the big graph's minus the easy ones) and
// calls emit for each, structures in the order of query.Types and queries sorted by their
// tuple text, so the output does not depend on Python's set order.
//
// The pickle is read by gopickle; BetaE's file is a collections.defaultdict of builtin sets,
// the two classes this reader maps.
func ImportBetaE(path string, g *Graphs, emit func(*Query) error) ([]TypeStats, error) {
	if g.Small == nil {
		return nil, fmt.Errorf("import-betae: split %q has no easy/hard answers; use valid or test", g.Split)
	}
	groups, err := readBetaEPickle(path)
	if err != nil {
		return nil, err
	}
	big, small := answer.NewEngine(g.Big), answer.NewEngine(g.Small)
	var all []TypeStats
	for _, grp := range groups {
		st, start := TypeStats{Type: grp.name}, time.Now()
		var sumEasy, sumHard int
		for _, text := range grp.queries {
			gq, err := query.ParseGrounded(text)
			if err != nil {
				return all, fmt.Errorf("%s: structure %s: %w", path, grp.notation, err)
			}
			if gq.Structure.String() != grp.notation {
				return all, fmt.Errorf("%s: query %s is filed under structure %s but has structure %s", path, text, grp.notation, gq.Structure)
			}
			if err := gq.Validate(g.Big.NumEntities, g.Big.NumRelations); err != nil {
				return all, fmt.Errorf("%s: query %s: %w", path, text, err)
			}
			as := small.Answers(gq)
			ab := big.Answers(gq)
			q := &Query{Grounded: gq, Type: grp.name, Easy: as.IDs(), Hard: answer.Difference(ab, as).IDs()}
			st.Queries++
			st.Attempts++
			if len(q.Hard) == 0 {
				st.Rejected[rejectNoHard]++ // kept, but counted: such a query has nothing to rank
			}
			sumEasy += len(q.Easy)
			sumHard += len(q.Hard)
			if err := emit(q); err != nil {
				return all, err
			}
		}
		if st.Queries > 0 {
			st.MeanEasy, st.MeanHard = float64(sumEasy)/float64(st.Queries), float64(sumHard)/float64(st.Queries)
		}
		st.Elapsed = time.Since(start)
		all = append(all, st)
	}
	return all, nil
}

type pickleGroup struct {
	name, notation string
	queries        []string // grounded tuple texts, sorted
}

// defaultDict and builtinSet are the two Python classes BetaE's pickles construct.
type defaultDict struct{}

func (defaultDict) Call(args ...any) (any, error) { return types.NewDict(), nil }

type builtinSet struct{}

func (builtinSet) Call(args ...any) (any, error) {
	if len(args) == 0 {
		return types.NewSet(), nil
	}
	l, ok := args[0].(*types.List)
	if !ok {
		return nil, fmt.Errorf("set() of %T", args[0])
	}
	return types.NewSetFromSlice(*l), nil
}

func readBetaEPickle(path string) ([]pickleGroup, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u := pickle.NewUnpickler(bufio.NewReaderSize(f, 1<<20))
	u.FindClass = func(module, name string) (any, error) {
		switch module + "." + name {
		case "collections.defaultdict":
			return defaultDict{}, nil
		case "builtins.set", "__builtin__.set":
			return builtinSet{}, nil
		}
		return nil, fmt.Errorf("unexpected class %s.%s", module, name)
	}
	v, err := u.Load()
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable BetaE query pickle: %w", path, err)
	}
	d, ok := v.(*types.Dict)
	if !ok {
		return nil, fmt.Errorf("%s: want a dict of structure -> set of queries, found %T", path, v)
	}
	var groups []pickleGroup
	for _, entry := range *d {
		key, err := tupleText(entry.Key)
		if err != nil {
			return nil, fmt.Errorf("%s: key %v: %w", path, entry.Key, err)
		}
		s, err := query.Parse(key)
		if err != nil {
			return nil, fmt.Errorf("%s: key %s: %w", path, key, err)
		}
		set, ok := entry.Value.(*types.Set)
		if !ok {
			return nil, fmt.Errorf("%s: key %s: want a set of queries, found %T", path, key, entry.Value)
		}
		grp := pickleGroup{name: s.Name(), notation: s.String()}
		for item := range *set {
			text, err := tupleText(item)
			if err != nil {
				return nil, fmt.Errorf("%s: key %s: query %v: %w", path, key, item, err)
			}
			grp.queries = append(grp.queries, text)
		}
		slices.Sort(grp.queries)
		groups = append(groups, grp)
	}
	slices.SortFunc(groups, func(a, b pickleGroup) int {
		if c := query.TypeOrder(a.name) - query.TypeOrder(b.name); c != 0 {
			return c
		}
		return strings.Compare(a.notation, b.notation)
	})
	return groups, nil
}

// tupleText prints a pickled nested tuple of strings and ints in the notation query parses.
func tupleText(v any) (string, error) {
	var b strings.Builder
	var walk func(v any) error
	walk = func(v any) error {
		switch x := v.(type) {
		case *types.Tuple:
			b.WriteByte('(')
			for i, el := range *x {
				if i > 0 {
					b.WriteByte(',')
				}
				if err := walk(el); err != nil {
					return err
				}
			}
			if len(*x) == 1 {
				b.WriteByte(',')
			}
			b.WriteByte(')')
		case string:
			b.WriteString("'" + x + "'")
		case int:
			b.WriteString(strconv.Itoa(x))
		default:
			return fmt.Errorf("unexpected %T in a query tuple", v)
		}
		return nil
	}
	if err := walk(v); err != nil {
		return "", err
	}
	return b.String(), nil
}
