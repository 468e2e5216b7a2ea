package sample

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/rocone/rocone/pkg/answer"
	"github.com/rocone/rocone/pkg/query"
	"github.com/rocone/rocone/pkg/shard"
)

// Query is a sampled query with its answers. For train, Easy is empty and Hard holds
// every answer on the train graph; for valid and test, Easy holds the answers on the
// smaller graph and Hard the answers that need a held-out edge.
type Query struct {
	*query.Grounded
	Type string
	Easy []int32
	Hard []int32
	// Attempt is the number of the attempt that found the query (each has its own random
	// stream), or for 1p its index among the run's 1p queries: shard files record it so
	// that `sample merge` can replay the shards in the unsharded run's order.
	Attempt int64
}

// Options control Generate. Zero values mean BetaE's defaults.
type Options struct {
	Dataset    string         // names the KG for the default counts
	Types      []string       // type names or structure notations; default: the split's BetaE types
	Counts     map[string]int // per type name or notation; overrides DefaultCount
	MaxAnswers int            // the answer cap; 0 means DefaultMaxAnswers on valid/test, none on train
	Seed       uint64
	Workers    int       // 0 means every core
	Log        io.Writer // progress and per-type statistics; nil for none
	Warnings   io.Writer // warnings (a 1p count not met); nil: Log
	// Shard, unless the whole, makes Generate sample shard i of n: of each type other than
	// 1p, the attempt blocks b with b mod n == i, until the shard holds enough candidates
	// (queries that pass every rule but "repeat", each the first of its kind in the shard)
	// for its share of the type's count (see shardTarget); it emits those candidates with
	// their attempt numbers. `sample merge` replays the n shards' candidates in attempt
	// order, as the unsharded run's merge loop does, and writes the unsharded run's
	// queries. For 1p (every link, cheap) a shard computes all the queries and emits its
	// range (shard.Spec.Range) of them.
	Shard shard.Spec
	// ShardMargin is how much more than its share of a type's queries a shard samples
	// (0.5: 50% more), for candidates that turn out to repeat another shard's; 0 means
	// DefaultShardMargin. A merge that runs past a shard's attempts fails and asks for a
	// larger margin.
	ShardMargin float64
}

// DefaultShardMargin is the default Options.ShardMargin (--shard-margin). The candidates
// a shard loses to other shards' repeats grow with the number of shards and with the
// type's repeat rate: on FB15k-237's test graph, 12,000 2in queries (45% of the run's
// candidates repeat) need a margin of about 0.15 in 3 shards and 0.4 in 7; 0.5 covers both.
const DefaultShardMargin = 0.5

// Rejection reasons, in the order BetaE checks them.
const (
	accepted = iota
	rejectBroken
	rejectEmpty
	rejectNoHard
	rejectNoExtraNegative
	rejectTooMany
	rejectRepeat
	// rejectInShard is `sample merge`'s reason for an attempt its shard did not keep: it
	// failed a rule in the shard, or repeated a query the shard had found before (a shard
	// file holds candidates only; the shards' logs break them down).
	rejectInShard
	numReasons
)

var reasonNames = [numReasons]string{"accepted", "broken", "empty", "no hard answer", "no extra negative", "too many answers", "repeat", "in the shards"}

// TypeStats reports the sampling of one type.
type TypeStats struct {
	Type     string
	Queries  int
	Attempts int
	Rejected [numReasons]int // indexed by reason; Rejected[0] is unused
	MeanEasy float64
	MeanHard float64
	Elapsed  time.Duration
	// Count is the number of queries asked of the type (-1 for 1p: all its links).
	Count int
	// In a shard (Options.Shard): Queries is the candidates the shard holds and the other
	// statistics describe its own attempts; Blocks is how many of its attempt blocks it
	// sampled, Stalled whether it stopped by the stall rule rather than with enough
	// candidates. For 1p, Written is how many of the Queries the shard wrote (its range).
	Blocks  int
	Stalled bool
	Written int
	// Imported: the queries come from a published file (ImportBetaE), which sampled them;
	// none was rejected, and Rejected[rejectNoHard] counts those kept without a hard answer.
	Imported bool
}

func (s TypeStats) String() string {
	if s.Imported {
		return fmt.Sprintf("%-6s %7d queries, mean easy %.1f hard %.1f, imported (%d without a hard answer), %.2fs",
			s.Type, s.Queries, s.MeanEasy, s.MeanHard, s.Rejected[rejectNoHard], s.Elapsed.Seconds())
	}
	return fmt.Sprintf("%-6s %7d queries, mean easy %.1f hard %.1f, %d attempts (rejected: %s), %.2fs",
		s.Type, s.Queries, s.MeanEasy, s.MeanHard, s.Attempts, s.rejections(), s.Elapsed.Seconds())
}

func (s TypeStats) rejections() string {
	var parts []string
	for r := rejectBroken; r < numReasons; r++ {
		if s.Rejected[r] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", reasonNames[r], s.Rejected[r]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// DefaultTypes are the types a split holds in BetaE's files.
func DefaultTypes(split string) []string {
	if split == "train" {
		return query.TrainTypes
	}
	return []string{"1p", "2p", "3p", "2i", "3i", "ip", "pi", "2u", "up", "2in", "3in", "inp", "pin", "pni"}
}

// Generate samples every requested type in turn and calls emit with each accepted query,
// type by type, in a deterministic order: the output depends on the seed and the inputs
// only, never on the number of workers.
func Generate(ctx context.Context, g *Graphs, opts Options, emit func(*Query) error) ([]TypeStats, error) {
	types := opts.Types
	if len(types) == 0 {
		types = DefaultTypes(g.Split)
	}
	structs, err := resolveTypes(types)
	if err != nil {
		return nil, fmt.Errorf("types: %w", err)
	}
	counts, given, err := countsFor(structs, opts.Counts)
	if err != nil {
		return nil, err
	}
	maxAnswers := opts.MaxAnswers
	switch {
	case maxAnswers < 0:
		return nil, fmt.Errorf("answer cap %d: want at least 1 (0 for the default)", maxAnswers)
	case maxAnswers == 0:
		maxAnswers = DefaultMaxAnswers
		if g.Split == "train" {
			maxAnswers = 1 << 30
		}
	}
	var all []TypeStats
	for i, s := range structs {
		name := s.Name()
		negation := hasNegationRule(s)
		count := counts[i]
		if !given[i] {
			count = DefaultCount(opts.Dataset, g, name, negation)
		}
		start := time.Now()
		var st TypeStats
		sm := &sampler{g: g, s: s, name: name, negation: negation, maxAnswers: maxAnswers}
		switch {
		case name == "1p":
			warn := opts.Warnings
			if warn == nil {
				warn = opts.Log
			}
			st, err = writeLinks(g, maxAnswers, count, given[i], opts.Seed, warn, opts.Shard, emit)
		case opts.Shard.Whole():
			st, err = sm.run(ctx, count, opts, emit)
		default:
			st, err = sm.runShard(ctx, count, opts, emit)
		}
		st.Type, st.Count, st.Elapsed = name, count, time.Since(start)
		all = append(all, st)
		if err == nil && st.Queries == 0 && count != 0 {
			// An empty type the user did not ask for (--count TYPE=0) is a mistake, not a
			// result: a 0-query file would pass every later stage unnoticed.
			err = fmt.Errorf("no query found (%d attempts; rejected: %s); give --count %s=0 to allow an empty type",
				st.Attempts, st.rejections(), types[i])
		}
		if err != nil {
			return all, fmt.Errorf("sampling %s: %w", name, err)
		}
		switch {
		case opts.Log == nil:
		case opts.Shard.Whole():
			fmt.Fprintf(opts.Log, "%s %s\n", g.Split, st)
		case name == "1p":
			fmt.Fprintf(opts.Log, "%s shard %s: %s; this shard writes %d of them\n", g.Split, opts.Shard, st, st.Written)
		default:
			stop := "enough for its share"
			if st.Stalled {
				stop = "stalled"
			}
			fmt.Fprintf(opts.Log, "%s shard %s: %s (candidates in %d of the run's attempt blocks, those b with b mod %d = %d: %s)\n",
				g.Split, opts.Shard, st, st.Blocks, opts.Shard.Count, opts.Shard.Index, stop)
		}
	}
	return all, nil
}

func resolveType(t string) (*query.Structure, error) {
	if strings.HasPrefix(strings.TrimSpace(t), "(") {
		return query.Parse(t)
	}
	return query.ByName(t)
}

// hasNegationRule reports whether the "no extra negative" rule applies. BetaE applies it
// when the type's name contains 'n' (2in 3in inp pin pni), which leaves out the De Morgan
// union forms; a custom structure gets it when it has a negation.
func hasNegationRule(s *query.Structure) bool {
	if name := s.Name(); name != query.Custom {
		return strings.Contains(name, "n")
	}
	return s.HasNegation()
}

// writeLinks makes BetaE's 1p queries: one per (head, relation) pair with an edge in the
// split's own links and at most maxAnswers of them. Hard answers are the pair's own tails
// not already on the small graph (BetaE's splits share no facts, so that is all of them);
// easy answers are the small graph's tails. A count below the number of pairs keeps a
// seeded random subset, in pair order; an explicit count (given) above the number of
// pairs keeps them all, with a warning on warn (nil: none).
//
// A shard (sh not the whole) computes the same queries and writes its range of them: 1p
// has no accept loop to share out, and a query costs a set difference.
func writeLinks(g *Graphs, maxAnswers, count int, given bool, seed uint64, warn io.Writer, sh shard.Spec, emit func(*Query) error) (TypeStats, error) {
	s := query.MustParse("('e',('r',))")
	type pair struct {
		head int32
		run  int
	}
	var pairs []pair
	st := TypeStats{}
	for h := int32(0); int(h) < g.Own.NumEntities; h++ {
		lo, hi := g.Own.Runs(h)
		for i := lo; i < hi; i++ {
			st.Attempts++
			_, tails := g.Own.Run(i)
			if len(tails) > maxAnswers {
				st.Rejected[rejectTooMany]++
				continue
			}
			pairs = append(pairs, pair{h, i})
		}
	}
	if given && count > len(pairs) && warn != nil {
		fmt.Fprintf(warn, "warning: %s 1p: %d asked, but the split has only %d (head, relation) link pairs with at most %d answers: all of them are written\n",
			g.Split, count, len(pairs), maxAnswers)
	}
	if count >= 0 && count < len(pairs) {
		rng := rand.New(rand.NewPCG(seed, typeSeed("1p")))
		keep := rng.Perm(len(pairs))[:count]
		slices.Sort(keep)
		kept := make([]pair, count)
		for i, k := range keep {
			kept[i] = pairs[k]
		}
		pairs = kept
	}
	var sumEasy, sumHard int
	lo, hi := 0, len(pairs) // the range of the accepted queries to write
	if !sh.Whole() {
		accepted := 0
		for _, p := range pairs {
			rel, tails := g.Own.Run(p.run)
			if g.Small == nil || len(sortedDifference(tails, g.Small.Out(p.head, rel))) > 0 {
				accepted++
			}
		}
		lo, hi = sh.Range(accepted)
	}
	for _, p := range pairs {
		rel, tails := g.Own.Run(p.run)
		q := &Query{Grounded: &query.Grounded{Structure: s, Anchors: []int32{p.head}, Relations: []int32{rel}}, Type: "1p"}
		if g.Small != nil {
			q.Easy = slices.Clone(g.Small.Out(p.head, rel))
			q.Hard = sortedDifference(tails, q.Easy)
		} else {
			q.Easy = []int32{}
			q.Hard = slices.Clone(tails)
		}
		if len(q.Hard) == 0 {
			st.Rejected[rejectNoHard]++
			continue
		}
		sumEasy += len(q.Easy)
		sumHard += len(q.Hard)
		st.Queries++
		k := st.Queries - 1
		if k < lo || k >= hi {
			continue
		}
		st.Written++
		q.Attempt = int64(k)
		if err := emit(q); err != nil {
			return st, err
		}
	}
	if st.Queries > 0 {
		st.MeanEasy, st.MeanHard = float64(sumEasy)/float64(st.Queries), float64(sumHard)/float64(st.Queries)
	}
	return st, nil
}

func sortedDifference(a, b []int32) []int32 {
	out := make([]int32, 0, len(a))
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) || b[j] != x {
			out = append(out, x)
		}
	}
	return out
}

func typeSeed(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// sampler grounds one structure (BetaE's ground_queries).
type sampler struct {
	g          *Graphs
	s          *query.Structure
	name       string
	negation   bool
	maxAnswers int
	targets    []int32 // entities with an edge in Big: the possible target answers
}

// attemptsPerBlock is the unit of work a worker takes; attempts are numbered, each has
// its own random stream, and blocks are merged in order, so the result is independent of
// how many workers ran them.
const attemptsPerBlock = 256

// Generate gives up on a count the graph cannot supply when fewer than stallMinQueries
// queries were accepted in the last stallAttempts attempts. BetaE's loop would run
// forever; on FB15k-237 the hardest type needs about 25 attempts per query.
var stallAttempts = 200_000

const stallMinQueries = 20

type outcome struct {
	q      *Query
	key    string
	reason int
}

type block struct {
	index    int
	outcomes []outcome
}

// blockStream computes attempt blocks with workers and hands them back in order: the
// k-th block it returns is block at(k), whatever the number of workers.
type blockStream struct {
	ctx     context.Context
	cancel  context.CancelFunc
	todo    chan int
	results chan block
	pending map[int][]outcome
	next    int // the next k to hand out
	k       int // the next k to return
	at      func(k int) int
}

// stream starts the workers on the blocks at(0), at(1), ...; the caller must call stop.
func (sm *sampler) stream(ctx context.Context, opts Options, at func(k int) int) *blockStream {
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	bs := &blockStream{ctx: ctx, cancel: cancel, todo: make(chan int, 4*workers), results: make(chan block, 4*workers),
		pending: map[int][]outcome{}, at: at}
	for w := 0; w < workers; w++ {
		go func() {
			big := answer.NewEngine(sm.g.Big)
			var small *answer.Engine
			if sm.g.Small != nil {
				small = answer.NewEngine(sm.g.Small)
			}
			src := rand.NewPCG(0, 0)
			rng := rand.New(src)
			for k := range bs.todo {
				b := at(k)
				out := make([]outcome, attemptsPerBlock)
				for i := range out {
					attempt := uint64(b*attemptsPerBlock + i)
					src.Seed(opts.Seed, typeSeed(sm.name)^(attempt*0x9e3779b97f4a7c15))
					out[i] = sm.attempt(rng, big, small)
				}
				select {
				case bs.results <- block{k, out}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	for ; bs.next < 4*workers; bs.next++ {
		bs.todo <- bs.next
	}
	return bs
}

// take returns the next block in order: its number (at(k)) and its outcomes, in attempt
// order.
func (bs *blockStream) take() (int, []outcome, error) {
	for {
		if outs, ok := bs.pending[bs.k]; ok {
			delete(bs.pending, bs.k)
			b := bs.at(bs.k)
			bs.k++
			bs.todo <- bs.next
			bs.next++
			return b, outs, nil
		}
		select {
		case b := <-bs.results:
			bs.pending[b.index] = b.outcomes
		case <-bs.ctx.Done():
			return 0, nil, bs.ctx.Err()
		}
	}
}

// stop ends the workers.
func (bs *blockStream) stop() {
	bs.cancel()
	close(bs.todo)
}

// acceptor is the merge loop of a type's run: it takes the outcomes of the attempt blocks
// in order, applies the "repeat" rule, counts the rejections, stops at count accepted
// queries and gives up by the stall rule. The unsharded run (sampler.run) and `sample
// merge` (which rebuilds the blocks from the shards' candidates) both run it, which is
// what makes the merged shards the unsharded file.
type acceptor struct {
	count                         int
	st                            *TypeStats
	seen                          map[string]struct{}
	windowAttempts, windowQueries int // where the current stall window began
	sumEasy, sumHard              int
}

func newAcceptor(count int, st *TypeStats) *acceptor {
	return &acceptor{count: count, st: st, seen: map[string]struct{}{}}
}

// done reports whether count queries were accepted.
func (a *acceptor) done() bool { return a.st.Queries >= a.count }

// block takes the outcomes of the next block, attempt by attempt, and emits the accepted
// queries, up to count of them.
func (a *acceptor) block(outs []outcome, emit func(*Query) error) error {
	st := a.st
	for _, o := range outs {
		if st.Queries == a.count {
			break
		}
		st.Attempts++
		if o.reason == accepted {
			if _, dup := a.seen[o.key]; dup {
				o.reason = rejectRepeat
			} else {
				a.seen[o.key] = struct{}{}
			}
		}
		if o.reason != accepted {
			st.Rejected[o.reason]++
			continue
		}
		st.Queries++
		a.sumEasy += len(o.q.Easy)
		a.sumHard += len(o.q.Hard)
		if err := emit(o.q); err != nil {
			return err
		}
	}
	if st.Attempts-a.windowAttempts >= stallAttempts {
		if st.Queries-a.windowQueries < stallMinQueries && st.Queries < a.count {
			return fmt.Errorf("only %d of %d queries accepted, %d in the last %d attempts (%d attempts in all; rejected: %s); ask for fewer with --count or raise --max-answers",
				st.Queries, a.count, st.Queries-a.windowQueries, st.Attempts-a.windowAttempts, st.Attempts, st.rejections())
		}
		a.windowAttempts, a.windowQueries = st.Attempts, st.Queries
	}
	return nil
}

// finish sets the means.
func (a *acceptor) finish() {
	if a.st.Queries > 0 {
		a.st.MeanEasy, a.st.MeanHard = float64(a.sumEasy)/float64(a.st.Queries), float64(a.sumHard)/float64(a.st.Queries)
	}
}

// prepare finds the possible targets.
func (sm *sampler) prepare() error {
	for e := int32(0); int(e) < sm.g.Big.NumEntities; e++ {
		if sm.g.Big.HasEdges(e) {
			sm.targets = append(sm.targets, e)
		}
	}
	if len(sm.targets) == 0 {
		return fmt.Errorf("the %s graph has no edges", sm.g.Split)
	}
	return nil
}

// run samples count queries of the type: the attempt blocks 0, 1, 2, ... through the
// acceptor.
func (sm *sampler) run(ctx context.Context, count int, opts Options, emit func(*Query) error) (TypeStats, error) {
	st := TypeStats{Type: sm.name}
	if count <= 0 {
		return st, nil
	}
	if err := sm.prepare(); err != nil {
		return st, err
	}
	bs := sm.stream(ctx, opts, func(k int) int { return k })
	defer bs.stop()
	acc := newAcceptor(count, &st)
	progress := sm.progress(opts.Log, "queries", count)
	for !acc.done() {
		_, outs, err := bs.take()
		if err != nil {
			return st, err
		}
		if err := acc.block(outs, emit); err != nil {
			return st, err
		}
		progress(st.Queries)
	}
	acc.finish()
	return st, nil
}

// shardTarget is how many candidates of a type with count queries shard of n samples
// before it stops: its share, the margin more (candidates that repeat another shard's,
// which the merge rejects), and four standard deviations of the share for chance (the
// shards' rates of acceptance differ by chance, and the merge needs every shard's blocks
// up to the block where the run reaches count). A variable for tests.
var shardTarget = func(count, n int, margin float64) int {
	share := float64(count) / float64(n)
	return int(math.Ceil(share*(1+margin) + 4*math.Sqrt(share)))
}

// runShard samples shard Options.Shard of the type: the attempt blocks i, i+n, i+2n, ...
// of the unsharded run, with every rule but "repeat" applied and repeats within the shard
// dropped, until it holds shardTarget candidates (or stalls, by the stall rule applied to
// its own attempts). It emits each candidate with its attempt number; `sample merge`
// replays the shards' candidates in attempt order through the acceptor.
func (sm *sampler) runShard(ctx context.Context, count int, opts Options, emit func(*Query) error) (TypeStats, error) {
	st := TypeStats{Type: sm.name}
	if count <= 0 {
		return st, nil
	}
	if err := sm.prepare(); err != nil {
		return st, err
	}
	margin := opts.ShardMargin
	if margin == 0 {
		margin = DefaultShardMargin
	}
	sh := opts.Shard
	target := shardTarget(count, sh.Count, margin)
	bs := sm.stream(ctx, opts, func(k int) int { return sh.Index + k*sh.Count })
	defer bs.stop()
	seen := map[string]struct{}{}
	windowAttempts, windowQueries := 0, 0
	var sumEasy, sumHard int
	progress := sm.progress(opts.Log, "candidates", target)
	for st.Queries < target {
		b, outs, err := bs.take()
		if err != nil {
			return st, err
		}
		st.Blocks++
		for i, o := range outs {
			st.Attempts++
			if o.reason == accepted {
				if _, dup := seen[o.key]; dup {
					o.reason = rejectRepeat
				} else {
					seen[o.key] = struct{}{}
				}
			}
			if o.reason != accepted {
				st.Rejected[o.reason]++
				continue
			}
			st.Queries++
			sumEasy += len(o.q.Easy)
			sumHard += len(o.q.Hard)
			o.q.Attempt = int64(b*attemptsPerBlock + i)
			if err := emit(o.q); err != nil {
				return st, err
			}
		}
		if st.Attempts-windowAttempts >= stallAttempts {
			if st.Queries-windowQueries < stallMinQueries {
				// The merge gives up by the same rule on the run's attempts, which this shard's
				// attempts so far cover n times over; or it says where this shard stopped.
				st.Stalled = true
				break
			}
			windowAttempts, windowQueries = st.Attempts, st.Queries
		}
		progress(st.Queries)
	}
	if st.Queries > 0 {
		st.MeanEasy, st.MeanHard = float64(sumEasy)/float64(st.Queries), float64(sumHard)/float64(st.Queries)
	}
	return st, nil
}

// progress returns a function to call after each block with the number of queries (or
// candidates) so far: it reports them on log every 2 seconds.
func (sm *sampler) progress(log io.Writer, what string, want int) func(n int) {
	start := time.Now()
	last := start
	return func(n int) {
		if log == nil || time.Since(last) <= 2*time.Second {
			return
		}
		last = time.Now()
		rate := float64(n) / time.Since(start).Seconds()
		fmt.Fprintf(log, "%s %s: %d/%d %s, %.0f/s, ETA %.0fs\n", sm.g.Split, sm.name, n, want, what, rate, float64(want-n)/rate)
	}
}

// attempt is one try of BetaE's loop: pick a target answer, ground the structure
// backwards from it, answer it on both graphs and apply the rejection rules (all but
// "repeat", which needs the order of acceptance and is applied when merging).
func (sm *sampler) attempt(rng *rand.Rand, big, small *answer.Engine) outcome {
	s := sm.s
	q := &query.Grounded{Structure: s, Anchors: make([]int32, s.NumAnchors), Relations: make([]int32, s.NumRelations)}
	target := sm.targets[rng.IntN(len(sm.targets))]
	if !sm.fill(rng, q, s.Root, target) {
		return outcome{reason: rejectBroken}
	}
	ab := big.Answers(q)
	if ab.Len() == 0 {
		return outcome{reason: rejectEmpty}
	}
	out := &Query{Grounded: q, Type: sm.name}
	if small == nil {
		if ab.Len() > sm.maxAnswers {
			return outcome{reason: rejectTooMany}
		}
		out.Easy, out.Hard = []int32{}, ab.IDs()
		return outcome{q: out, key: q.Key()}
	}
	as := small.Answers(q)
	hard := answer.Difference(ab, as)
	if hard.Len() == 0 {
		return outcome{reason: rejectNoHard}
	}
	extraNegatives := answer.Difference(as, ab).Len()
	if sm.negation && extraNegatives == 0 {
		return outcome{reason: rejectNoExtraNegative}
	}
	if max(hard.Len(), extraNegatives) > sm.maxAnswers {
		return outcome{reason: rejectTooMany}
	}
	out.Easy, out.Hard = as.IDs(), hard.IDs()
	return outcome{q: out, key: q.Key()}
}

// fillTries is how many relations BetaE draws before it gives a chain up as broken.
const fillTries = 40

// fill grounds the subtree n backwards so that `at` is one of its answers on g (BetaE's
// fill_query). It reports false when the grounding is broken.
func (sm *sampler) fill(rng *rand.Rand, q *query.Grounded, n *query.Node, at int32) bool {
	g := sm.g.Big
	switch n.Kind {
	case query.Anchor:
		q.Anchors[n.Slot] = at
		return true
	case query.Chain:
		prev := int32(-1) // the relation chosen just before, walking backwards
		for i := len(n.Ops) - 1; i >= 0; i-- {
			op := n.Ops[i]
			if op.Kind == query.Negate {
				continue
			}
			// The relations entering `at` are the inverses of those leaving it.
			lo, hi := g.Runs(at)
			if hi == lo {
				return false
			}
			found := false
			for try := 0; try < fillTries; try++ {
				rel, tails := g.Run(lo + rng.IntN(hi-lo))
				r := rel ^ 1
				// Not the inverse partner of the previous choice; the same one is fine.
				if prev < 0 || r>>1 != prev>>1 || r == prev {
					prev = r
					q.Relations[op.Slot] = r
					at = tails[rng.IntN(len(tails))] // a predecessor of `at` through r
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return sm.fill(rng, q, n.Base, at)
	case query.And, query.Or:
		for _, b := range n.Branches {
			if !sm.fill(rng, q, b, at) {
				return false
			}
		}
		// Branches of the same shape must be grounded differently.
		for i, a := range n.Branches {
			for _, b := range n.Branches[i+1:] {
				if sameGrounding(q, a, b) {
					return false
				}
			}
		}
		return true
	}
	return false
}

// sameGrounding reports whether subtrees a and b have the same shape and the same ids.
func sameGrounding(q *query.Grounded, a, b *query.Node) bool {
	if a.Kind != b.Kind || len(a.Ops) != len(b.Ops) || len(a.Branches) != len(b.Branches) {
		return false
	}
	switch a.Kind {
	case query.Anchor:
		return q.Anchors[a.Slot] == q.Anchors[b.Slot]
	case query.Chain:
		for i := range a.Ops {
			if a.Ops[i].Kind != b.Ops[i].Kind ||
				(a.Ops[i].Kind == query.Project && q.Relations[a.Ops[i].Slot] != q.Relations[b.Ops[i].Slot]) {
				return false
			}
		}
		return sameGrounding(q, a.Base, b.Base)
	}
	for i := range a.Branches {
		if !sameGrounding(q, a.Branches[i], b.Branches[i]) {
			return false
		}
	}
	return true
}
