package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/query"
	"github.com/rocone/rocone/pkg/shard"
	"github.com/rocone/rocone/pkg/train"
)

// shardBlock is the unit shards of embed and rank are cut in, for a rank batch of batch
// queries (0: eval.DefaultRankBatch) over n queries: the least common multiple of the
// batch (capped at n, as Rank caps it) and the embedding batch eval.DefaultRankBatch, so
// a shard holds whole batches of both, every query is embedded and scored in the batch it
// is in unsharded, and embed and rank with the same batch cut alike (16 on the CPU, 512
// with rank's CUDA default).
func shardBlock(batch, n int) int {
	batch = max(1, min(cmp.Or(batch, eval.DefaultRankBatch), n))
	a, b := batch, eval.DefaultRankBatch
	for b != 0 {
		a, b = b, a%b
	}
	return batch / a * eval.DefaultRankBatch
}

// shardRange is the queries [first, end) shard s of n queries (of the file queries) holds,
// cut in blocks of block. A shard that would hold none is an error: an artifact holds at
// least one row, and so many shards are a mistake.
func shardRange(s shard.Spec, queries string, n, block int) (first, end int, err error) {
	first, end = s.BlockRange(n, block)
	if first == end {
		blocks := (n + block - 1) / block
		return 0, 0, fmt.Errorf("--shard %s: the %d queries of %s are cut in whole blocks of %d (a multiple of the batch), %d of them: shard %s holds none; use at most %d shard(s)",
			s, n, displayPath(queries), block, blocks, s, blocks)
	}
	return first, end, nil
}

// shardName is a shard for messages: "shard i/n", or "the whole queries file".
func shardName(s shard.Spec) string {
	if s.Whole() {
		return "the whole queries file (no --shard)"
	}
	return "shard " + s.String()
}

// RankConfig is what `rank` does.
type RankConfig struct {
	Checkpoint string
	Queries    string // queries artifact, for the answers ("-" for stdin)
	Cones      string // cones artifact from `embed`; "" to embed the queries here
	Output     string // "-" for stdout
	TopK       int    // also write each query's K best entities
	Data       string // dataset folder, for entity names in the top-K; optional
	Kernels    compute.Backend
	// Device, if not nil, ranks on that accelerator (device.RankDevice): the queries are
	// embedded there (or the Cones uploaded), scored and ranked, and only the ranks come
	// back, plus each batch's scores with TopK (the top K is picked on the host, by
	// eval.TopEntities, while the device ranks the next batch).
	Device  eval.RankDevice
	Workers int // 0: every core
	// Batch is how many queries are scored together; 0: eval.DefaultRankBatch. It is
	// capped at the number of queries: a batch holds a score per entity for each query.
	Batch int
	// Shard, unless the whole, ranks only that part of the queries: whole batches
	// (shard.Spec.BlockRange of the batch size the unsharded run uses), so every query is
	// scored in the batch it would be scored in unsharded and the n shards' rows together
	// are the unsharded ranks. Rows keep the query ids of the whole file.
	Shard shard.Spec
	Log   io.Writer
	// Warnings is where warnings go whatever Log (a checkpoint without lineage, a
	// folder without names): -q drops progress, never warnings. Nil: Log.
	Warnings io.Writer
	// Profile, if not "", is where a device profile of the run goes: every launch of
	// every batch timed (eval.ProfilingRanker), a Markdown roofline table per kernel
	// there and its CSV beside it (.csv for .md). It needs Device. ProfileCommand is the
	// command line for its header.
	Profile, ProfileCommand string
}

// check refuses option values that would otherwise be ignored or silently wrong.
func (cfg *RankConfig) check() error {
	switch {
	case cfg.Profile != "" && cfg.Device == nil:
		return fmt.Errorf("--profile %s: profiling times the device's kernels: it needs --device cuda", cfg.Profile)
	case cfg.TopK < 0:
		return fmt.Errorf("--top %d: want a positive number of entities (leave it out for none)", cfg.TopK)
	case cfg.Data != "" && cfg.TopK == 0:
		return fmt.Errorf("--data %s names the entities of the top-K lists; it needs --top K", cfg.Data)
	case cfg.Batch < 0:
		return fmt.Errorf("--batch %d: want a positive number of queries", cfg.Batch)
	case cfg.Workers < 0:
		return fmt.Errorf("--workers %d: want a positive number of goroutines (leave it out for every core)", cfg.Workers)
	}
	return nil
}

// Rank writes the filtered rank of every hard answer of every query: one row per (query,
// hard answer), in the queries' order. It ranks through eval.RankQueries, the function
// training's validation uses, so the three agree bit for bit.
func Rank(cfg RankConfig) error {
	if err := cfg.check(); err != nil {
		return err
	}
	if cfg.Queries == "-" && cfg.Cones == "-" {
		return fmt.Errorf("--queries and --cones cannot both read stdin")
	}
	release, err := cfg.checkOutputs()
	if err != nil {
		return err
	}
	defer release()
	l, err := loadModel(cfg.Checkpoint, cfg.Kernels)
	if err != nil {
		return err
	}
	// Cones are read before the queries: in `... | tee q.arrow | embed ... -o - | rank
	// --queries q.arrow --cones -`, the cones end only once q.arrow is complete.
	var cmeta artifact.ConesMeta
	var cones []artifact.Cone
	if cfg.Cones != "" {
		if cmeta, cones, err = artifact.ReadCones(cfg.Cones); err != nil {
			return err
		}
	}
	qmeta, rows, rq, err := readQueriesFor(cfg.Queries, l)
	if err != nil {
		return err
	}
	l.warnNoLineage(warnTo(cfg.Warnings, cfg.Log), cfg.Queries)
	mc := l.model.Config
	digest := artifact.QueriesDigest(rows)
	batch := cmp.Or(cfg.Batch, eval.DefaultRankBatch)
	opts := eval.RankOptions{Workers: cfg.Workers, Batch: min(batch, len(rq))}
	first, end, err := shardRange(cfg.Shard, cfg.Queries, len(rq), shardBlock(opts.Batch, len(rq)))
	var span shard.Span // recorded in a shard, so that metrics checks the shards tile the file
	if !cfg.Shard.Whole() {
		span = shard.Span{First: first, End: end, Total: len(rq)}
	}
	if err != nil {
		return err
	}
	all := rows
	rows, rq = rows[first:end], rq[first:end]
	if !slices.ContainsFunc(rows, func(q artifact.Query) bool { return len(q.Hard) > 0 }) {
		// A ranks file holds a row per hard answer: it would be empty, which no stage reads.
		which := fmt.Sprintf("of its %d queries", len(rows))
		if !cfg.Shard.Whole() {
			which = fmt.Sprintf("of the %d queries of %s", len(rows), shardName(cfg.Shard))
		}
		return fmt.Errorf("%s: none %s has a hard answer, so there is nothing to rank (were they made for another split or KG?)", displayPath(cfg.Queries), which)
	}
	if cfg.Cones != "" {
		if !cmeta.Shard.Whole() && cmeta.Shard != cfg.Shard {
			return fmt.Errorf("%s holds the cones of shard %s of the queries, but this is %s: give the cones of the same --shard (or unsharded cones)",
				displayPath(cfg.Cones), cmeta.Shard, shardName(cfg.Shard))
		}
		stored, err := checkCones(cfg.Cones, cmeta, cones, l, digest, displayPath(cfg.Queries))
		if err != nil {
			return err
		}
		for i := range rows {
			if _, ok := stored[rows[i].ID]; !ok && !cmeta.Shard.Whole() {
				return fmt.Errorf("%s: shard %s of the cones lacks query %d, which this rank's shard %s holds: embed and rank cut shards at the same batch size only (embed --device as rank's, rank's default --batch)",
					displayPath(cfg.Cones), cmeta.Shard, rows[i].ID, cfg.Shard)
			}
		}
		if err := conesCover(cfg.Cones, rows, rq, stored); err != nil {
			return err
		}
		opts.Cones = func(group []int) ([]model.Cones[float32], error) {
			cs, err := conesOf(rows, group, stored, mc.Dim)
			if err != nil {
				return nil, &inputError{path: displayPath(cfg.Cones), err: err}
			}
			return cs, nil
		}
	}
	var names []string
	if cfg.TopK > 0 && cfg.Data != "" {
		d, err := datasetFor(cfg.Data, l, warnTo(cfg.Warnings, cfg.Log))
		if err != nil {
			return err
		}
		names = d.EntityNames
	}
	prog := newProgress(cfg.Log, "rank", len(rq))
	opts.Progress = prog.add
	tops := make([]topK, len(rq))
	if cfg.TopK > 0 {
		opts.Scores = func(i int, scores []float32) {
			tops[i].ids, tops[i].scores, tops[i].err = eval.TopEntities(scores, cfg.TopK, nil)
		}
	}
	if cfg.Device != nil {
		dm, err := cfg.Device.Load(l.model)
		if err != nil {
			return fmt.Errorf("loading %s on the device: %w", cfg.Checkpoint, err)
		}
		defer dm.Close()
		opts.Device = dm
	}
	prof, err := startRankProfile(cfg, opts.Device)
	if err != nil {
		return err
	}
	start := time.Now()
	var ranks [][]int32
	if len(rq) > 0 { // a shard past the last batch ranks nothing
		if ranks, err = eval.RankQueries(context.Background(), l.model, rq, opts); err != nil {
			var in *inputError
			if errors.As(err, &in) {
				return in // the cones' fault, not the queries'
			}
			return fmt.Errorf("%s: %w", displayPath(cfg.Queries), err)
		}
	}
	for i := range tops {
		if err := tops[i].err; err != nil {
			return fmt.Errorf("%s: query %d (%s): %w", displayPath(cfg.Queries), rows[i].ID, rows[i].Type, err)
		}
	}
	if prof != nil {
		batches := (len(rq) + opts.Batch - 1) / max(opts.Batch, 1)
		run := eval.ProfileRun{Config: fmt.Sprintf("rank %s d=%d on %s: %d queries of %s in batches of %d", mc.Variant, mc.Dim, qmeta.Dataset,
			len(rq), displayPath(cfg.Queries), opts.Batch), Command: cfg.ProfileCommand, Batches: batches}
		if err := writeRankProfile(cfg, prof, run, start); err != nil {
			return err
		}
	}
	prog.finish()
	w, err := artifact.CreateRanks(cfg.Output, artifact.RanksMeta{
		Model: string(mc.Variant), Dataset: qmeta.Dataset, Split: qmeta.Split, NumEntities: mc.NumEntities,
		NumQueries: len(all), Queries: displayPath(cfg.Queries), QueriesHash: digest, Checkpoint: cfg.Checkpoint, CheckpointHash: l.hash,
		Seed: l.seed(), TopK: cfg.TopK, TrainConfig: l.meta.Config, Shard: cfg.Shard, ShardRange: span,
		KGDigest: l.meta.KGDigest, TrainFingerprint: l.meta.TrainFingerprint, CheckpointTrajectory: train.CheckpointTrajectory(l.meta),
	})
	if err != nil {
		return err
	}
	defer w.Abort()
	for i := range rows {
		q := &rows[i]
		row := artifact.Rank{ID: q.ID, Type: q.Type}
		if cfg.TopK > 0 {
			row.Top, row.TopScores = tops[i].ids, tops[i].scores
			if names != nil {
				row.TopNames = make([]string, len(row.Top))
				for k, e := range row.Top {
					row.TopNames[k] = names[e]
				}
			}
		}
		for k, a := range q.Hard {
			row.Answer, row.Rank = a, ranks[i][k]
			if err := w.Write(&row); err != nil {
				return err
			}
		}
	}
	return w.Close()
}

// startRankProfile attaches a profiler to the device ranker for cfg.Profile (nil: no
// profile), once the device is idle.
func startRankProfile(cfg RankConfig, r eval.BatchRanker) (eval.ProfilingRanker, error) {
	if cfg.Profile == "" {
		return nil, nil
	}
	pr, ok := r.(eval.ProfilingRanker)
	if !ok {
		return nil, fmt.Errorf("--profile %s: this device does not time its kernels", cfg.Profile)
	}
	if err := pr.Sync(); err != nil {
		return nil, err
	}
	pr.ProfileStart()
	return pr, nil
}

// writeRankProfile waits for the device, detaches the profiler and writes the table and
// its CSV (train.ProfileCSV), each whole or not at all.
func writeRankProfile(cfg RankConfig, pr eval.ProfilingRanker, run eval.ProfileRun, start time.Time) error {
	if err := pr.Sync(); err != nil {
		return err
	}
	run.Wall = time.Since(start).Seconds()
	pr.ProfileStop()
	csvPath := train.ProfileCSV(cfg.Profile)
	var launches int
	err := outfile.WriteAll([]string{cfg.Profile, csvPath}, func(ws []io.Writer) (err error) {
		if launches, err = pr.WriteProfile(ws[0], ws[1], run); err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "profile of %d batches: %d launches; wrote %s and %s\n", run.Batches, launches, cfg.Profile, csvPath)
	}
	return nil
}

// inputError is an error of one input, named by its path, that reaches the stage through
// code that would otherwise blame another (ranking blames the queries).
type inputError struct {
	path string
	err  error
}

func (e *inputError) Error() string { return e.path + ": " + e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }

// conesCover checks, before any ranking, that the cones hold every query ranked, of the
// type the queries file gives it, with one cone per branch of its structure's DNF: a
// cones file that does not is at fault, and the error names it.
func conesCover(path string, rows []artifact.Query, rq []eval.RankQuery, stored map[int64][]artifact.Cone) error {
	name := displayPath(path)
	branches := map[*query.Structure]int{}
	for i := range rows {
		cs, ok := stored[rows[i].ID]
		if !ok {
			return fmt.Errorf("%s lacks the cones of query %d (%s), which it should hold", name, rows[i].ID, rows[i].Type)
		}
		if cs[0].Type != rows[i].Type {
			return fmt.Errorf("%s: query %d is of type %s there, of %s in the queries", name, rows[i].ID, cs[0].Type, rows[i].Type)
		}
		s := rq[i].Query.Structure
		n, ok := branches[s]
		if !ok {
			dnf, err := s.DNF()
			if err != nil {
				continue // the model cannot embed it either; ranking says so
			}
			n, branches[s] = len(dnf), len(dnf)
		}
		if len(cs) != n {
			return fmt.Errorf("%s: query %d (%s) has %d cones, but its structure has %d branches", name, rows[i].ID, rows[i].Type, len(cs), n)
		}
	}
	return nil
}

type topK struct {
	ids    []int32
	scores []float32
	err    error // a NaN score (eval.TopEntities)
}

// checkCones checks that cones were computed by this checkpoint from these queries and
// indexes them by query id, branches in order.
func checkCones(path string, meta artifact.ConesMeta, cones []artifact.Cone, l *loaded, digest, queries string) (map[int64][]artifact.Cone, error) {
	name, mc := displayPath(path), l.model.Config
	switch {
	case meta.Dim != mc.Dim:
		return nil, fmt.Errorf("%s: cones of dimension %d, but %s has dimension %d", name, meta.Dim, l.path, mc.Dim)
	case meta.Aperture != "half":
		return nil, fmt.Errorf("%s: aperture %q, want half apertures", name, meta.Aperture)
	case meta.CheckpointHash != l.hash:
		return nil, fmt.Errorf("%s: cones computed with checkpoint %s (sha256 %.12s), not %s (sha256 %.12s)", name, meta.Checkpoint, meta.CheckpointHash, l.path, l.hash)
	case meta.QueriesHash != digest:
		return nil, fmt.Errorf("%s: cones of queries %s (digest %.12s), not of %s (digest %.12s)", name, meta.Queries, meta.QueriesHash, queries, digest)
	case meta.KGDigest != l.meta.KGDigest || meta.TrainFingerprint != l.meta.TrainFingerprint:
		return nil, fmt.Errorf("%s: cones of a model of another KG or train file (KG %.12s, train file %s) than %s (%.12s, %s)",
			name, meta.KGDigest, meta.TrainFingerprint, l.path, l.meta.KGDigest, l.meta.TrainFingerprint)
	}
	// The reader has checked that a query's cones come together, branches 0, 1, … in
	// order, so they are appended in branch order.
	byID := map[int64][]artifact.Cone{}
	for _, c := range cones {
		byID[c.ID] = append(byID[c.ID], c)
	}
	return byID, nil
}

// conesOf gathers the stored cones of a group of queries (indices into rows) into one
// batch per branch, in group order: the batches the model would have embedded.
func conesOf(rows []artifact.Query, group []int, stored map[int64][]artifact.Cone, d int) ([]model.Cones[float32], error) {
	first := stored[rows[group[0]].ID]
	if len(first) == 0 {
		return nil, fmt.Errorf("no cone for query %d", rows[group[0]].ID)
	}
	branches := make([]model.Cones[float32], len(first))
	for b := range branches {
		branches[b] = model.NewCones[float32](len(group), d)
	}
	for r, i := range group {
		cs := stored[rows[i].ID]
		if len(cs) != len(first) {
			return nil, fmt.Errorf("query %d has %d cones, query %d of the same structure %d", rows[i].ID, len(cs), rows[group[0]].ID, len(first))
		}
		for b, c := range cs {
			copy(branches[b].Axis[r*d:(r+1)*d], c.Axis)
			copy(branches[b].Half[r*d:(r+1)*d], c.Aperture)
		}
	}
	return branches, nil
}
