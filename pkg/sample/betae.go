package sample

import (
	"bytes"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"

	"github.com/rocone/rocone/pkg/answer"
	"github.com/rocone/rocone/pkg/picklescan"
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
		st, start := TypeStats{Type: grp.name, Imported: true}, time.Now()
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
		return nil, fmt.Errorf("set() of a %s, want a list", picklescan.PyType(args[0]))
	}
	return types.NewSetFromSlice(*l), nil
}

func readBetaEPickle(path string) (groups []pickleGroup, err error) {
	// A pickle is read whole: it is bounded by the file's size, and picklescan.Scan must see
	// every declared length before gopickle allocates it.
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := picklescan.Scan(data); err != nil {
		return nil, fmt.Errorf("%s: not a readable BetaE query pickle: %w", path, err)
	}
	// gopickle panics on some malformed inputs (a wrong type on its stack); a corrupt file
	// is an input error.
	defer func() {
		if p := recover(); p != nil {
			groups, err = nil, fmt.Errorf("%s: not a readable BetaE query pickle: corrupt data: %v", path, p)
		}
	}()
	u := pickle.NewUnpickler(bytes.NewReader(data))
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
		return nil, fmt.Errorf("%s: want a dict of structure -> set of queries, found a %s", path, picklescan.PyType(v))
	}
	// The text of the tuples, which memo references may share, is bounded by a multiple of
	// the file's size: a pickle of nested shared tuples would otherwise print as
	// exponentially long text.
	budget := &textBudget{left: 64*len(data) + 1<<20}

	// gopickle's dict keeps every SETITEM and its set every distinct object, where Python
	// keeps a key's last value and one of equal elements: the file is read as Python
	// reads it (equal tuples print the same text).
	groupOf := map[string]int{} // key text -> index in groups
	k := 0
	for _, entry := range *d {
		k++
		key, err := tupleText(entry.Key, budget)
		if err != nil {
			return nil, fmt.Errorf("%s: key %d of the dict: %w", path, k, err)
		}
		if _, ok := entry.Key.(*types.Tuple); !ok {
			return nil, fmt.Errorf("%s: key %s is of type %s, not a query structure such as ('e',('r',)): not a BetaE queries pickle ({valid,test}-queries.pkl)", path, key, picklescan.PyType(entry.Key))
		}
		s, err := query.Parse(key)
		if _, gerr := query.ParseGrounded(key); err != nil && gerr == nil {
			// BetaE's answer files map each grounded query to its answers.
			return nil, fmt.Errorf("%s: key %s is a query of ids, not a structure: an answers pickle (BetaE's *-answers.pkl), not a queries pickle; --pickle takes {valid,test}-queries.pkl, and the answers are computed from --data", path, key)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: key %s: %w", path, key, err)
		}
		set, ok := entry.Value.(*types.Set)
		if !ok {
			return nil, fmt.Errorf("%s: key %s: want a set of queries, found a %s", path, key, picklescan.PyType(entry.Value))
		}
		grp := pickleGroup{name: s.Name(), notation: s.String()}
		for item := range *set {
			text, err := tupleText(item, budget)
			if err != nil {
				return nil, fmt.Errorf("%s: key %s: a query: %w", path, key, err)
			}
			grp.queries = append(grp.queries, text)
		}
		slices.Sort(grp.queries)
		grp.queries = slices.Compact(grp.queries)
		if i, seen := groupOf[key]; seen {
			groups[i] = grp
			continue
		}
		groupOf[key] = len(groups)
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

// maxTupleDepth bounds the nesting of a query tuple: BetaE's nest at most 4 deep.
const maxTupleDepth = 32

// textBudget is what tupleText may still print, in bytes.
type textBudget struct{ left int }

// tupleText prints a pickled nested tuple of strings and ints in the notation query parses.
func tupleText(v any, budget *textBudget) (string, error) {
	var b strings.Builder
	var walk func(v any, depth int) error
	walk = func(v any, depth int) error {
		if depth > maxTupleDepth {
			return fmt.Errorf("tuples nested more than %d deep", maxTupleDepth)
		}
		if b.Len() > budget.left {
			return fmt.Errorf("query tuples longer than the file could hold (shared references nested too deep)")
		}
		switch x := v.(type) {
		case *types.Tuple:
			b.WriteByte('(')
			for i, el := range *x {
				if i > 0 {
					b.WriteByte(',')
				}
				if err := walk(el, depth+1); err != nil {
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
		case *big.Int:
			return fmt.Errorf("an int of %d bits in a query tuple is out of range: ids are 32-bit", x.BitLen())
		default:
			return fmt.Errorf("a %s in a query tuple, want tuples of str and int", picklescan.PyType(v))
		}
		return nil
	}
	if err := walk(v, 0); err != nil {
		return "", err
	}
	budget.left -= b.Len()
	return b.String(), nil
}
