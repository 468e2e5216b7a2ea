package eval

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// RankQuery is one query to rank: its type name (for the per-type metrics), the grounded
// query the model embeds, and its easy and hard answers.
type RankQuery struct {
	Type  string
	Query query.Grounded
	Easy  []int32
	Hard  []int32
}

// QueriesFromArtifact turns the rows of a queries artifact into queries to rank, parsing
// each distinct structure once and checking every query's id counts against its structure
// and its ids against numEntities and numRelations (the model's sizes). The answer lists
// are shared with rows, not copied.
func QueriesFromArtifact(rows []artifact.Query, numEntities, numRelations int) ([]RankQuery, error) {
	var structures query.Cache
	out := make([]RankQuery, len(rows))
	for i := range rows {
		r := &rows[i]
		s, err := structures.Parse(r.Structure)
		if err != nil {
			return nil, fmt.Errorf("query %d: %w", r.ID, err)
		}
		q := RankQuery{Type: r.Type, Query: query.Grounded{Structure: s, Anchors: r.Anchors, Relations: r.Relations},
			Easy: r.Easy, Hard: r.Hard}
		if err := q.Query.Validate(numEntities, numRelations); err != nil {
			return nil, fmt.Errorf("query %d (%s): %w", r.ID, r.Type, err)
		}
		for _, lists := range [][]int32{r.Easy, r.Hard} {
			for _, a := range lists {
				if a < 0 || int(a) >= numEntities {
					return nil, fmt.Errorf("query %d (%s): answer %d out of range [0,%d)", r.ID, r.Type, a, numEntities)
				}
			}
		}
		out[i] = q
	}
	return out, nil
}

// DefaultRankBatch is the number of queries RankQueries scores at a time.
const DefaultRankBatch = 16

// RankOptions control RankQueries.
type RankOptions struct {
	// Workers is the number of goroutines; 0 means GOMAXPROCS. It does not change the
	// result.
	Workers int
	// Batch is the number of consecutive queries (in the order given) scored together;
	// 0 means DefaultRankBatch. The batches do not depend on Workers. With the reference
	// kernels a query's scores do not depend on the batch either; a fast backend whose
	// linear layers block rows may round differently with another batch, so stages that
	// must agree bit for bit use the same Batch (the default).
	Batch int
	// Scores, if not nil, is called with every query's index and scores (the logits of all
	// entities) before they are ranked. It is called from several goroutines at once, and
	// scores is reused after it returns.
	Scores func(i int, scores []float32)
	// Cones, if not nil, supplies the branch cones of a group of queries (indices into qs,
	// one structure, the group model.GroupByStructure forms within a batch) instead of
	// embedding them: the rank stage scores stored cones this way. On the host it is called
	// from several goroutines at once.
	Cones func(group []int) ([]model.Cones[float32], error)
	// Device, if not nil, ranks each batch itself from its own copy of the model (the CUDA
	// model: gpumodel.Model.RankBatch): the queries are embedded (or their Cones uploaded),
	// scored and ranked there, and only the ranks come back, plus the scores when Scores
	// is set. Batches go to it one at a time, after their answer lists are checked here.
	// Its ranks can differ from the CPU's where a hard answer's score is within float
	// rounding of another entity's.
	Device BatchRanker
	// Progress, if not nil, is called with the number of queries ranked after each batch,
	// from one goroutine at a time.
	Progress func(done int)
}

// A DeviceBatch is one batch of queries for a BatchRanker.
type DeviceBatch struct {
	Queries []query.Grounded
	// Easy and Hard are each query's answer lists, valid: ids in range, none repeated,
	// easy and hard disjoint (RankQueries checks them before the device sees them).
	Easy, Hard [][]int32
	// Cones, if not nil, gives the branch cones of each structure group of Queries (the
	// indices into Queries of model.GroupByStructure's groups) instead of embedding them;
	// one model.Cones per DNF branch, in the plan's order, row r the group's r-th query.
	Cones func(group []int) ([]model.Cones[float32], error)
	// Scores, if not nil, [len(Queries)][entities], receives every query's scores (the
	// logits the ranks come from), in the order of Queries.
	Scores []float32
}

// A BatchRanker computes the filtered ranks of a batch of queries from its own copy of
// the model, in the order of each query's hard answers.
type BatchRanker interface {
	RankBatch(b DeviceBatch) ([][]int32, error)
}

// A PipelinedRanker can rank a batch in two halves, so that the host lays out the next
// batch while the device ranks this one: EnqueueRankBatch lays out and enqueues the
// batch and returns; wait waits for it and returns what RankBatch would. Wait must be
// called before the batch after next is enqueued. (gpumodel's Model is one.)
type PipelinedRanker interface {
	BatchRanker
	EnqueueRankBatch(b DeviceBatch) (wait func() ([][]int32, error), err error)
}

// A RankDevice is an accelerator that ranks and embeds from its own copy of a model's
// parameters, so that scores never reach the host unless asked for (pkg/device gives the
// one `--device` names). The stages see only this interface, not the device's packages.
type RankDevice interface {
	// Load copies m's parameters to the device. The ranker ranks and embeds from that copy
	// until it is closed, which releases the copy (not the device).
	Load(m *model.Model[float32]) (DeviceRanker, error)
}

// A DeviceRanker is a BatchRanker that also embeds (the embed stage's cones, which
// RankBatch scores from DeviceBatch.Cones exactly as from the queries) and holds device
// memory until it is closed.
type DeviceRanker interface {
	BatchRanker
	// EmbedBatch returns the branch cones of queries, without dropout: for each group of
	// model.GroupByStructure(queries), in that order, one model.Cones per DNF branch (the
	// plan's order), row r the group's r-th query.
	EmbedBatch(queries []query.Grounded) ([][]model.Cones[float32], error)
	Close() error
}

// A ProfilingRanker is a DeviceRanker whose kernels can be timed launch by launch (rank
// --profile); package gpumodel's Model is one.
type ProfilingRanker interface {
	DeviceRanker
	// Sync waits until the device has done the work enqueued so far.
	Sync() error
	// ProfileStart times every launch from here, until ProfileStop.
	ProfileStart()
	ProfileStop()
	// WriteProfile writes the launches timed so far as a roofline table per kernel, per
	// batch: Markdown to md and CSV to csv. It returns how many launches there were.
	WriteProfile(md, csv io.Writer, run ProfileRun) (launches int, err error)
}

// ProfileRun is what a profiled rank run knows of itself, for the table's header.
type ProfileRun struct {
	Config  string  // the run, in words
	Command string  // its command line
	Batches int     // the batches ranked while profiling
	Wall    float64 // seconds of wall time over them
}

// rankOnDevice is RankQueries through opts.Device. On a PipelinedRanker the batches are
// pipelined: each is enqueued before the last one's ranks are read. With opts.Scores,
// each batch's scores come back to the host and opts.Scores runs on them in workers
// goroutines while the device ranks the next batch (two score buffers take turns).
func rankOnDevice(ctx context.Context, n int, qs []RankQuery, batch, workers int, opts RankOptions) ([][]int32, error) {
	ranks := make([][]int32, len(qs))
	seen := make([]uint8, n)
	var bufs [2][]float32
	var pending [2]sync.WaitGroup // the Scores calls still reading bufs[i]
	defer pending[0].Wait()
	defer pending[1].Wait()
	var last inFlight
	for b, lo := 0, 0; lo < len(qs); b, lo = b+1, lo+batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(lo+batch, len(qs))
		db := DeviceBatch{Queries: make([]query.Grounded, 0, hi-lo), Easy: make([][]int32, 0, hi-lo), Hard: make([][]int32, 0, hi-lo)}
		for i := lo; i < hi; i++ {
			if err := checkAnswers(qs[i].Easy, qs[i].Hard, seen); err != nil {
				return nil, fmt.Errorf("query %d (%s): %w", i, qs[i].Type, err)
			}
			db.Queries, db.Easy, db.Hard = append(db.Queries, qs[i].Query), append(db.Easy, qs[i].Easy), append(db.Hard, qs[i].Hard)
		}
		if opts.Cones != nil {
			db.Cones = func(group []int) ([]model.Cones[float32], error) { return opts.Cones(offset(group, lo)) }
		}
		slot := b % 2
		if opts.Scores != nil {
			pending[slot].Wait() // batch b-2's Scores calls are done with the buffer
			if cap(bufs[slot]) < (hi-lo)*n {
				bufs[slot] = make([]float32, batch*n)
			}
			db.Scores = bufs[slot][:(hi-lo)*n]
		}
		if pr, ok := opts.Device.(PipelinedRanker); ok && opts.Scores == nil {
			// This batch enqueued, then the last one's ranks read while it runs.
			wait, err := pr.EnqueueRankBatch(db)
			if err != nil {
				return nil, fmt.Errorf("queries %d to %d: %w", lo, hi-1, err)
			}
			if err := last.finish(ranks, opts.Progress); err != nil {
				return nil, err
			}
			last = inFlight{lo: lo, hi: hi, wait: wait}
			continue
		}
		r, err := opts.Device.RankBatch(db)
		if err != nil {
			return nil, fmt.Errorf("queries %d to %d: %w", lo, hi-1, err)
		}
		copy(ranks[lo:hi], r)
		if opts.Scores != nil {
			scoreRows(&pending[slot], workers, lo, hi, n, db.Scores, opts.Scores)
		}
		if opts.Progress != nil {
			opts.Progress(hi - lo)
		}
	}
	if err := last.finish(ranks, opts.Progress); err != nil {
		return nil, err
	}
	return ranks, nil
}

// inFlight is a batch enqueued on a PipelinedRanker whose ranks are not read yet.
type inFlight struct {
	lo, hi int
	wait   func() ([][]int32, error)
}

// finish waits for the batch, if any, and stores its ranks.
func (b inFlight) finish(ranks [][]int32, progress func(int)) error {
	if b.wait == nil {
		return nil
	}
	r, err := b.wait()
	if err != nil {
		return fmt.Errorf("queries %d to %d: %w", b.lo, b.hi-1, err)
	}
	copy(ranks[b.lo:b.hi], r)
	if progress != nil {
		progress(b.hi - b.lo)
	}
	return nil
}

// offset returns the indices of group shifted by lo.
func offset(group []int, lo int) []int {
	out := make([]int, len(group))
	for k, i := range group {
		out[k] = lo + i
	}
	return out
}

// scoreRows calls fn(i, row) for the queries lo to hi-1, whose scores are the rows of
// scores, in up to workers goroutines that wg waits for.
func scoreRows(wg *sync.WaitGroup, workers, lo, hi, n int, scores []float32, fn func(int, []float32)) {
	workers = max(1, min(workers, hi-lo))
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo + w; i < hi; i += workers {
				fn(i, scores[(i-lo)*n:(i-lo+1)*n])
			}
		}()
	}
}

// checkAnswers makes the checks of Ranker.FilteredRanks on the answer lists alone (a
// query without hard answers is not checked, as there). seen is scratch of one zero per
// entity, returned zeroed.
func checkAnswers(easy, hard []int32, seen []uint8) error {
	if len(hard) == 0 {
		return nil
	}
	defer func() {
		for _, l := range [][]int32{easy, hard} {
			for _, a := range l {
				if a >= 0 && int(a) < len(seen) {
					seen[a] = 0
				}
			}
		}
	}()
	n := len(seen)
	for _, h := range hard {
		if h < 0 || int(h) >= n {
			return fmt.Errorf("eval: hard answer %d out of range [0,%d)", h, n)
		}
		if seen[h] != 0 {
			return fmt.Errorf("eval: hard answer %d listed twice", h)
		}
		seen[h] = 1
	}
	for _, e := range easy {
		if e < 0 || int(e) >= n {
			return fmt.Errorf("eval: easy answer %d out of range [0,%d)", e, n)
		}
		switch seen[e] {
		case 1:
			return fmt.Errorf("eval: entity %d is both an easy and a hard answer", e)
		case 2:
			return fmt.Errorf("eval: easy answer %d listed twice", e)
		}
		seen[e] = 2
	}
	return nil
}

// RankQueries scores every entity for every query with the model's Scorer (the logit
// γ − m·dist, the max over DNF branches, no dropout) and returns the filtered ranks of
// each query's hard answers (docs/queries.md §5), in the order of q.Hard, indexed like qs.
// This is the one function that turns a model and queries into ranks: training's
// validation and the rank stage both call it, so that they agree bit for bit.
//
// The work is split into batches of opts.Batch consecutive queries, shared by
// opts.Workers goroutines; the result does not depend on the number of workers.
//
// With opts.Device the batches are ranked there (rankOnDevice), Scores and Cones
// included, one batch at a time.
func RankQueries(ctx context.Context, m *model.Model[float32], qs []RankQuery, opts RankOptions) ([][]int32, error) {
	batch := opts.Batch
	if batch <= 0 {
		batch = DefaultRankBatch
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if opts.Device != nil {
		return rankOnDevice(ctx, m.Config.NumEntities, qs, batch, workers, opts)
	}
	nBatches := (len(qs) + batch - 1) / batch
	workers = max(1, min(workers, nBatches))
	scorer := m.NewScorer()
	n := m.Config.NumEntities
	ranks := make([][]int32, len(qs))

	var next atomic.Int64
	errs := make([]error, nBatches) // by batch, so that the error reported is the first in order
	var failed atomic.Bool
	var progressMu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ranker Ranker
			scores := make([]float32, batch*n)
			grounded := make([]query.Grounded, 0, batch)
			for {
				b := int(next.Add(1)) - 1
				if b >= nBatches || failed.Load() {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[b] = err
					failed.Store(true)
					return
				}
				lo, hi := b*batch, min((b+1)*batch, len(qs))
				grounded = grounded[:0]
				for i := lo; i < hi; i++ {
					grounded = append(grounded, qs[i].Query)
				}
				out := scores[:(hi-lo)*n]
				var cones func([]int) ([]model.Cones[float32], error)
				if opts.Cones != nil {
					cones = func(group []int) ([]model.Cones[float32], error) { return opts.Cones(offset(group, lo)) }
				}
				if err := scorer.ScoreFrom(out, grounded, cones); err != nil {
					errs[b] = err
					failed.Store(true)
					return
				}
				for i := lo; i < hi; i++ {
					s := out[(i-lo)*n : (i-lo+1)*n]
					if opts.Scores != nil {
						opts.Scores(i, s)
					}
					r, err := ranker.FilteredRanks(s, qs[i].Easy, qs[i].Hard, nil)
					if err != nil {
						errs[b] = fmt.Errorf("query %d (%s): %w", i, qs[i].Type, err)
						failed.Store(true)
						return
					}
					ranks[i] = r
				}
				if opts.Progress != nil {
					progressMu.Lock()
					opts.Progress(hi - lo)
					progressMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return ranks, nil
}

// Summarize accumulates the ranks RankQueries returned by query type and summarises them.
// Queries without hard answers, whose metrics are undefined, are left out.
func Summarize(qs []RankQuery, ranks [][]int32) (Summary, error) {
	if len(ranks) != len(qs) {
		return Summary{}, fmt.Errorf("eval: %d rank lists for %d queries", len(ranks), len(qs))
	}
	var acc Accumulator
	for i := range qs {
		if len(ranks[i]) == 0 {
			continue
		}
		if err := acc.Add(qs[i].Type, ranks[i]); err != nil {
			return Summary{}, err
		}
	}
	return acc.Summary(), nil
}
