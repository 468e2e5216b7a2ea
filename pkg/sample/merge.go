package sample

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/query"
	"github.com/rocone/rocone/pkg/shard"
)

// MergeShards joins the n shard files of one `sample generate --shard i/n` run (in any
// order on the command line) into the queries artifact out, identical to the file the
// unsharded run writes, and reports each type's statistics on log (nil: none).
//
// For each type but 1p it replays the run's merge loop (the acceptor): the attempt blocks
// 0, 1, 2, ... in order, block b from shard b mod n, whose file holds the block's
// candidates with their attempt numbers (every other attempt failed a rule or repeated a
// query in the shard); the "repeat" rule across shards, the stop at the type's count and
// the stall rule are applied here, as the unsharded run applies them. A block beyond
// what its shard sampled, before the count is reached, is an error naming the shards that
// stopped too early: rerun them with a larger --shard-margin. For 1p the shards hold
// contiguous ranges of the type's queries, joined in shard order.
//
// It refuses a file that is not a shard, shards of different runs (their metadata
// differ), a shard missing or given twice, and a shard whose rows disagree with its
// coverage metadata (truncated, or of another run); on any error nothing is left at out.
// The shards are streamed: memory grows with one type's queries' keys (the "repeat"
// rule), as in the unsharded run, not with the shards' size.
func MergeShards(paths []string, out string, log io.Writer) error {
	if len(paths) == 0 {
		return fmt.Errorf("no shard files given")
	}
	if log == nil {
		log = io.Discard
	}
	var inputs []outfile.Path
	for _, p := range paths {
		inputs = append(inputs, outfile.Path{Flag: "SHARD", Path: p})
	}
	release, err := outfile.Claim(inputs, []outfile.Path{{Flag: "-o", Path: out}})
	if err != nil {
		return err
	}
	defer release()
	readers := make([]*peekReader, len(paths))
	defer func() {
		for _, r := range readers {
			if r != nil {
				r.Close()
			}
		}
	}()
	specs := make([]shard.Spec, len(paths))
	for k, p := range paths {
		r, err := artifact.OpenQueries(p)
		if err != nil {
			return err
		}
		readers[k] = &peekReader{QueriesReader: r, name: p}
		m := r.Meta()
		if m.Shard.Whole() {
			return fmt.Errorf("%s has no shard metadata: not a file of sample generate --shard i/n with n > 1 (a whole split has nothing to merge: use it as it is)", p)
		}
		specs[k] = m.Shard
		if err := sameRun(paths[0], readers[0].Meta(), p, m); err != nil {
			return err
		}
	}
	meta := readers[0].Meta()
	if err := shard.CheckSet("merge", paths, specs); err != nil {
		return err
	}
	order := make([]*peekReader, len(readers)) // by shard index
	for k, r := range readers {
		order[specs[k].Index] = r
	}
	types, err := runTypes(paths[0], meta)
	if err != nil {
		return err
	}
	m := &merger{order: order, n: len(order), log: log, split: meta.Split}
	for i, r := range order {
		cov, err := parseCoverage(r.name, r.Meta().Coverage, len(types))
		if err != nil {
			return err
		}
		for t, tc := range cov.Types {
			if i == 0 {
				break
			}
			if want := m.covs[0].Types[t]; tc.Type != want.Type || tc.Count != want.Count {
				return fmt.Errorf("%s and %s are shards of different runs (type %d: %s count %d vs %s count %d): merge the shards of one sample generate run",
					order[0].name, r.name, t+1, want.Type, want.Count, tc.Type, tc.Count)
			}
		}
		m.covs = append(m.covs, cov)
	}
	meta.Shard, meta.Sampling, meta.Coverage = shard.Spec{}, "", ""
	if m.w, err = artifact.CreateQueries(out, meta); err != nil {
		return err
	}
	defer m.w.Abort() // no-op after a successful Close
	for t, structure := range types {
		if typeName(structure) == "1p" {
			err = m.links(t, structure)
		} else {
			err = m.replay(t, structure)
		}
		if err != nil {
			return err
		}
	}
	for _, r := range order {
		if r.peek() {
			return fmt.Errorf("%s: query %d has structure %s, not in the run's types (%s) or out of their order",
				r.name, r.q.ID, r.q.Structure, strings.Join(typeNames(types), " "))
		}
		if err := r.Err(); err != nil {
			return err
		}
	}
	return m.w.Close()
}

// coverage is a shard file's shard_coverage metadata: what the shard covered of each of
// the run's types.
type coverage struct {
	BlockSize int            `json:"block_size"` // attempts per block (attemptsPerBlock)
	Margin    float64        `json:"margin"`     // --shard-margin
	Types     []typeCoverage `json:"types"`      // the run's types, in order
}

type typeCoverage struct {
	Type  string `json:"type"`
	Count int    `json:"count"` // the queries asked of the type (-1 for 1p: every link)
	// Blocks is how many of its attempt blocks the shard sampled: shard i of n sampled the
	// run's blocks i, i+n, ..., i+(Blocks-1)n. 0 for 1p.
	Blocks int `json:"blocks"`
	// Rows is how many of the file's rows are of the type: candidates, or for 1p queries.
	Rows int `json:"rows"`
	// Stalled: the shard stopped by the stall rule, not with enough candidates.
	Stalled bool `json:"stalled,omitempty"`
}

func (c coverage) String() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // plain values always marshal
	}
	return string(b)
}

// parseCoverage reads a shard's shard_coverage metadata of a run of ntypes types.
func parseCoverage(name, s string, ntypes int) (coverage, error) {
	var c coverage
	if s == "" {
		return c, fmt.Errorf("%s: a shard without shard_coverage metadata: written by an older sample generate; generate the shards again", name)
	}
	if err := jsonUnmarshal(s, &c); err != nil {
		return c, fmt.Errorf("%s: shard metadata shard_coverage=%q: %w", name, s, err)
	}
	if c.BlockSize != attemptsPerBlock {
		return c, fmt.Errorf("%s: shard sampled in blocks of %d attempts, this sample merges blocks of %d: generate the shards again with this version",
			name, c.BlockSize, attemptsPerBlock)
	}
	if len(c.Types) != ntypes {
		return c, fmt.Errorf("%s: shard metadata shard_coverage has %d types, the run's options %d", name, len(c.Types), ntypes)
	}
	for _, t := range c.Types {
		if t.Blocks < 0 || t.Rows < 0 {
			return c, fmt.Errorf("%s: shard metadata shard_coverage: type %s: negative blocks or rows", name, t.Type)
		}
	}
	return c, nil
}

// merger joins the shards of one run, type by type.
type merger struct {
	order []*peekReader // by shard index
	covs  []coverage    // by shard index
	n     int
	w     *artifact.QueriesWriter
	id    int64
	log   io.Writer
	split string
}

// write writes a query of the merged file, ids 0, 1, ... in order.
func (m *merger) write(q *artifact.Query) error {
	q.ID = m.id
	m.id++
	return m.w.Write(q)
}

// of reports whether shard i's next row is of the type structure (peeked into its q and
// attempt), and an error ending the read.
func (m *merger) of(i int, structure string) (bool, error) {
	r := m.order[i]
	if r.peek() {
		return r.q.Structure == structure, nil
	}
	return false, r.Err()
}

// links joins the shards' 1p queries: each holds the contiguous range of them its cut
// gives (attempts are the queries' indexes), in shard order.
func (m *merger) links(t int, structure string) error {
	counts := make([]int, m.n)
	next := int64(0)
	for i, r := range m.order {
		for {
			ok, err := m.of(i, structure)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if r.attempt != next {
				return fmt.Errorf("%s (shard %s): 1p query %d is the run's query %d, want %d: not a shard of this run",
					r.name, r.Meta().Shard, r.q.ID, r.attempt, next)
			}
			q := r.take()
			next++
			counts[i]++
			if err := m.write(&q); err != nil {
				return err
			}
		}
	}
	for i, c := range counts {
		r := m.order[i]
		if lo, hi := r.Meta().Shard.Range(int(next)); c != hi-lo || c != m.covs[i].Types[t].Rows {
			return fmt.Errorf("%s (shard %s) holds %d %s queries, but the cut of the run's %d gives it %d and its metadata records %d: not a shard of this run, or a truncated one",
				r.name, r.Meta().Shard, c, typeName(structure), next, hi-lo, m.covs[i].Types[t].Rows)
		}
	}
	fmt.Fprintf(m.log, "%s 1p %7d queries (joined from the shards' ranges)\n", m.split, next)
	return nil
}

// replay runs the type's merge loop over the shards' candidates, block by block in the
// run's order, and writes the accepted queries; then it checks the rest of each shard's
// rows of the type against its coverage.
func (m *merger) replay(t int, structure string) error {
	s, err := query.Parse(structure)
	if err != nil {
		return fmt.Errorf("%s: type %s: %w", m.order[0].name, structure, err)
	}
	name := m.covs[0].Types[t].Type
	count := m.covs[0].Types[t].Count
	st := TypeStats{Type: name, Count: count}
	start := time.Now()
	acc := newAcceptor(count, &st)
	rows := make([]int, m.n)
	last := make([]int64, m.n) // each shard's last attempt read
	for i := range last {
		last[i] = -1
	}
	emit := func(q *Query) error {
		return m.write(&artifact.Query{Type: q.Type, Structure: structure, Anchors: q.Anchors, Relations: q.Relations, Easy: q.Easy, Hard: q.Hard})
	}
	outs := make([]outcome, attemptsPerBlock)
	blocks := 0
	var sofar []int // the queries accepted by the end of each block, for uncovered
	for ; count > 0 && !acc.done(); blocks++ {
		b := blocks
		i, k := b%m.n, b/m.n
		if k >= m.covs[i].Types[t].Blocks {
			return m.uncovered(t, sofar, st)
		}
		for j := range outs {
			outs[j] = outcome{reason: rejectInShard}
		}
		lo := int64(b) * attemptsPerBlock
		r := m.order[i]
		for {
			ok, err := m.of(i, structure)
			if err != nil {
				return err
			}
			if !ok || r.attempt >= lo+attemptsPerBlock {
				break
			}
			if r.attempt < lo || r.attempt <= last[i] {
				return m.badAttempt(i, t, r.attempt)
			}
			q := r.take()
			last[i] = r.attempt
			rows[i]++
			if len(q.Anchors) != s.NumAnchors || len(q.Relations) != s.NumRelations {
				return fmt.Errorf("%s: query %d has %d anchors and %d relations, its structure %s %d and %d",
					r.name, q.ID, len(q.Anchors), len(q.Relations), structure, s.NumAnchors, s.NumRelations)
			}
			g := &query.Grounded{Structure: s, Anchors: q.Anchors, Relations: q.Relations}
			outs[r.attempt-lo] = outcome{q: &Query{Grounded: g, Type: q.Type, Easy: q.Easy, Hard: q.Hard, Attempt: r.attempt}, key: g.Key()}
		}
		if err := acc.block(outs, emit); err != nil {
			return fmt.Errorf("sampling %s: %w", name, err)
		}
		sofar = append(sofar, st.Queries)
	}
	acc.finish()
	st.Elapsed = time.Since(start)
	// The rows the run did not need: still in each shard's blocks, in order, and as many
	// as its metadata records.
	for i, r := range m.order {
		c := m.covs[i].Types[t]
		for {
			ok, err := m.of(i, structure)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			b := r.attempt / attemptsPerBlock
			if r.attempt <= last[i] || int(b%int64(m.n)) != i || int(b/int64(m.n)) >= c.Blocks {
				return m.badAttempt(i, t, r.attempt)
			}
			r.take()
			last[i] = r.attempt
			rows[i]++
		}
		if rows[i] != c.Rows {
			return fmt.Errorf("%s (shard %s) holds %d %s candidates, but its metadata records %d: a truncated shard, or not one of this run",
				r.name, r.Meta().Shard, rows[i], name, c.Rows)
		}
	}
	covered := m.covered(t)
	fmt.Fprintf(m.log, "%s %s; the run used %d attempt blocks, the shards sampled the first %d (%.0f%% to spare)\n",
		m.split, st, blocks, covered, 100*(float64(covered)/float64(max(blocks, 1))-1))
	return nil
}

// covered is how many of the run's first blocks of type t the shards sampled, all of them.
func (m *merger) covered(t int) int {
	c := -1
	for i := range m.order {
		if e := i + m.n*m.covs[i].Types[t].Blocks; c < 0 || e < c {
			c = e
		}
	}
	return c
}

// uncovered is the error for a run that needs block b = len(sofar) of type t, which its
// shard did not sample (sofar[k]: the queries accepted by the end of block k). Rerunning
// only that shard would likely fail at the next shard's end, so it estimates where the run
// ends (runBlocks), names every shard that stopped before that, and suggests the margin
// that would have carried each there (from the shard's own candidates per block).
//
// The suggestion is at least a step above every margin the run's shards used: the short
// shards' was not enough, and a larger one in other shards is most likely an earlier
// suggestion, which a second failure must exceed, so that each failure asks for more.
func (m *merger) uncovered(t int, sofar []int, st TypeStats) error {
	typ := m.covs[0].Types[t]
	b := len(sofar)
	need := max(b+1, runBlocks(sofar, typ.Count))
	var short []string
	stalled := false
	used, most, suggest := 0.0, 0.0, 0.0
	for i, r := range m.order {
		c := m.covs[i].Types[t]
		most = max(most, m.covs[i].Margin)
		if i+m.n*c.Blocks >= need {
			continue
		}
		why := fmt.Sprintf("%d candidates", c.Rows)
		if c.Stalled {
			why += ", stalled"
			stalled = true
		}
		last := "none"
		if c.Blocks > 0 {
			last = fmt.Sprint(i + m.n*(c.Blocks-1))
			blocks := (need - i + m.n - 1) / m.n // the shard's blocks below need
			perBlock := float64(c.Rows) / float64(c.Blocks)
			suggest = max(suggest, marginFor(float64(blocks)*perBlock, typ.Count, m.n))
		}
		used = max(used, m.covs[i].Margin)
		short = append(short, fmt.Sprintf("%s (shard %s: last block %s, %s)", r.name, r.Meta().Shard, last, why))
	}
	// Enough whatever the run needs: a shard's candidates before the run's last block are
	// distinct queries the run accepted (it accepts every new one until count), fewer than
	// count, so a shard whose target is count samples every block the run needs.
	suggest = min(suggest, marginFor(float64(typ.Count), typ.Count, m.n))
	suggest = max(suggest, math.Round((most+0.05)*100)/100)
	advice := fmt.Sprintf("rerun them with --shard-margin %g or more (they used %g)", suggest, used)
	if stalled {
		advice = fmt.Sprintf("a stalled shard found fewer than %d new candidates in its last %d attempts: the graph may not hold %d %s queries; ask for fewer with --count or raise --max-answers, or %s",
			stallMinQueries, stallAttempts, typ.Count, typ.Type, advice)
	}
	return fmt.Errorf("%s: the run needs attempt block %d (attempts %d to %d; %d of %d queries accepted so far), which its shard did not sample; at its rate so far the run needs about %d blocks, and these shards stopped before: %s; %s",
		typ.Type, b, b*attemptsPerBlock, (b+1)*attemptsPerBlock-1, st.Queries, typ.Count, need, strings.Join(short, ", "), advice)
}

// runBlocks estimates how many attempt blocks a run needs for count queries from the
// queries sofar[k] it accepted by the end of each of its first blocks, with 10% to spare.
//
// The rate of acceptance falls as the run goes on: an attempt that passes every rule is
// accepted only if it is not a repeat, and the more queries were accepted, the more of the
// type's pool of queries is taken. If the pool held P equally likely queries, a block
// would accept a·(1 − Q/P) new ones with Q accepted so far: the rate falls linearly in Q,
// to 0 at the pool's size. runBlocks fits that line through the rates of the first and
// the second half of the blocks so far (each at its mean Q) and integrates it from
// sofar's end to count: (P/a)·ln((P − Q + ½)/(P − count + ½)) more blocks (the ½ is the
// continuous form of the coupon collector's sum, finite when count is the whole pool; a
// fitted pool smaller than count is taken as count). Far from saturation the two rates
// are equal up to chance and the estimate is the average rate's, b·count/Q, as before; it
// is never below that. Near saturation it is still only an estimate (real pools are
// skewed, and their tail is longer than the line's): uncovered caps what it suggests at
// the margin that is enough whatever the run needs.
func runBlocks(sofar []int, count int) int {
	b := len(sofar)
	if b == 0 || sofar[b-1] == 0 {
		return b + 1
	}
	q := float64(sofar[b-1])
	est := float64(b) * float64(count) / q
	if h := b / 2; h > 0 && sofar[h-1] > 0 && count > sofar[b-1] {
		qh := float64(sofar[h-1])
		r1, r2 := qh/float64(h), (q-qh)/float64(b-h)
		q1, q2 := qh/2, (qh+q)/2
		if r2 < r1 && r2 > 0 {
			slope := (r1 - r2) / (q2 - q1) // a/P
			pool := max(q1+r1/slope, float64(count))
			est = max(est, float64(b)+math.Log((pool-q+0.5)/(pool-float64(count)+0.5))/slope)
		}
	}
	return int(math.Ceil(1.1 * est))
}

// marginFor is the --shard-margin, rounded up to 0.05, whose shardTarget for a type of
// count queries in n shards is at least candidates.
func marginFor(candidates float64, count, n int) float64 {
	share := float64(count) / float64(n)
	m := (candidates-4*math.Sqrt(share))/share - 1
	return math.Ceil(max(m, 0)*20) / 20
}

// badAttempt is the error for shard i's row of type t whose attempt is not in the
// shard's blocks, or out of order.
func (m *merger) badAttempt(i, t int, attempt int64) error {
	r := m.order[i]
	return fmt.Errorf("%s (shard %s): %s query %d is attempt %d, not the next in the shard's blocks (those b with b mod %d = %d, %d of them): not a shard of this run",
		r.name, r.Meta().Shard, m.covs[i].Types[t].Type, r.q.ID, attempt, m.n, i, m.covs[i].Types[t].Blocks)
}

// sameRun reports how the shard b differs from the shard a in what makes a run: the KG,
// the split and the sampling options. Only the shard itself may differ.
func sameRun(a string, ma artifact.QueriesMeta, b string, mb artifact.QueriesMeta) error {
	diff := func(what, x, y string) error {
		return fmt.Errorf("%s and %s are shards of different runs (%s %s vs %s): merge the shards of one sample generate run",
			a, b, what, x, y)
	}
	switch {
	case ma.Dataset != mb.Dataset:
		return diff("dataset", ma.Dataset, mb.Dataset)
	case ma.Split != mb.Split:
		return diff("split", ma.Split, mb.Split)
	case ma.NumEntities != mb.NumEntities || ma.NumRelations != mb.NumRelations:
		return diff("entities and relations", fmt.Sprintf("%d and %d", ma.NumEntities, ma.NumRelations), fmt.Sprintf("%d and %d", mb.NumEntities, mb.NumRelations))
	case ma.EntitiesDigest != mb.EntitiesDigest:
		return diff("entity table digest", fmt.Sprintf("%.12s", ma.EntitiesDigest), fmt.Sprintf("%.12s", mb.EntitiesDigest))
	case ma.KGDigest != mb.KGDigest:
		return diff("KG digest", fmt.Sprintf("%.12s", ma.KGDigest), fmt.Sprintf("%.12s", mb.KGDigest))
	case ma.Sampling != mb.Sampling:
		return diff("sampling options", ma.Sampling, mb.Sampling)
	}
	return nil
}

// runTypes is the structures (notations) of a run's types in the order it sampled them,
// from the shard's sampling options (the split's defaults when it gave no --types).
func runTypes(name string, m artifact.QueriesMeta) ([]string, error) {
	var run struct{ Types []string }
	if err := jsonUnmarshal(m.Sampling, &run); err != nil || m.Sampling == "" {
		return nil, fmt.Errorf("%s: shard metadata sampling=%q is not a sampling run's options", name, m.Sampling)
	}
	types := run.Types
	if len(types) == 0 {
		types = DefaultTypes(m.Split)
	}
	structs, err := resolveTypes(types)
	if err != nil {
		return nil, fmt.Errorf("%s: shard metadata sampling: types: %w", name, err)
	}
	out := make([]string, len(structs))
	for i, s := range structs {
		out[i] = s.String()
	}
	return out, nil
}

func typeName(structure string) string {
	if s, err := resolveType(structure); err == nil && s.Name() != "" {
		return s.Name()
	}
	return structure
}

func typeNames(structures []string) []string {
	names := make([]string, len(structures))
	for i, s := range structures {
		names[i] = typeName(s)
	}
	return names
}

// peekReader is a queries reader with one query of look-ahead.
type peekReader struct {
	*artifact.QueriesReader
	name    string
	q       artifact.Query
	attempt int64 // q's attempt, in a shard file
	peeked  bool
}

// peek reports whether there is a next query, which is then in r.q (and its attempt in
// r.attempt).
func (r *peekReader) peek() bool {
	if !r.peeked && r.Next() {
		r.q, r.attempt, r.peeked = r.Query(), r.Attempt(), true
	}
	return r.peeked
}

func (r *peekReader) take() artifact.Query {
	r.peeked = false
	return r.q
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
