package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/compute/cuda"
	"github.com/rocone/rocone/pkg/compute/cuda/cudamodel"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/model"
)

// RankConfig is what `rank` does.
type RankConfig struct {
	Checkpoint string
	Queries    string // queries artifact, for the answers ("-" for stdin)
	Cones      string // cones artifact from `embed`; "" to embed the queries here
	Output     string // "-" for stdout
	TopK       int    // also write each query's K best entities
	Data       string // dataset folder, for entity names in the top-K; optional
	Kernels    compute.Backend
	// Device, if not nil, is the GPU the Kernels run on: without Cones and TopK, the
	// whole ranking runs there (cudamodel.Model.RankBatch), and only ranks come back.
	Device  *cuda.Device
	Workers int // 0: every core
	// Batch is how many queries are scored together; 0: eval.DefaultRankBatch. It is
	// capped at the number of queries: a batch holds a score per entity for each query.
	Batch int
	Log   io.Writer
}

// check refuses option values that would otherwise be ignored or silently wrong.
func (cfg *RankConfig) check() error {
	switch {
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
	if err := cfg.checkOutputs(); err != nil {
		return err
	}
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
	mc := l.model.Config
	digest := artifact.QueriesDigest(rows)
	opts := eval.RankOptions{Workers: cfg.Workers, Batch: min(cfg.Batch, len(rq))}
	if cfg.Cones != "" {
		stored, err := checkCones(cfg.Cones, cmeta, cones, l, digest, displayPath(cfg.Queries))
		if err != nil {
			return err
		}
		opts.Cones = func(group []int) ([]model.Cones[float32], error) { return conesOf(rows, group, stored, mc.Dim) }
	}
	var names []string
	if cfg.TopK > 0 && cfg.Data != "" {
		d, err := datasetFor(cfg.Data, l, cfg.Log)
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
			tops[i].ids, tops[i].scores = topEntities(scores, cfg.TopK)
		}
	}
	if cfg.Device != nil && opts.Cones == nil && opts.Scores == nil {
		dm, err := cudamodel.NewEval(cfg.Device, l.model)
		if err != nil {
			return fmt.Errorf("loading %s on the device: %w", cfg.Checkpoint, err)
		}
		defer dm.Close()
		opts.Device = dm
	}
	ranks, err := eval.RankQueries(context.Background(), l.model, rq, opts)
	if err != nil {
		return fmt.Errorf("%s: %w", displayPath(cfg.Queries), err)
	}
	prog.finish()
	w, err := artifact.CreateRanks(cfg.Output, artifact.RanksMeta{
		Model: string(mc.Variant), Dataset: qmeta.Dataset, Split: qmeta.Split, NumEntities: mc.NumEntities,
		NumQueries: len(rows), Queries: displayPath(cfg.Queries), QueriesHash: digest, Checkpoint: cfg.Checkpoint, CheckpointHash: l.hash,
		Seed: l.seed(), TopK: cfg.TopK, TrainConfig: l.meta.Config,
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

type topK struct {
	ids    []int32
	scores []float32
}

// topEntities returns the k highest-scoring entities, ties by lower id (raw, not filtered).
func topEntities(scores []float32, k int) ([]int32, []float32) {
	k = min(k, len(scores))
	top := make([]int32, 0, k+1)
	better := func(a, b int32) bool {
		return scores[a] > scores[b] || (scores[a] == scores[b] && a < b)
	}
	for e := range scores {
		id := int32(e)
		if len(top) == k && !better(id, top[k-1]) {
			continue
		}
		i := len(top)
		top = append(top, id)
		for i > 0 && better(id, top[i-1]) {
			top[i] = top[i-1]
			i--
		}
		top[i] = id
		if len(top) > k {
			top = top[:k]
		}
	}
	vals := make([]float32, len(top))
	for i, e := range top {
		vals[i] = scores[e]
	}
	return top, vals
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
	}
	byID := map[int64][]artifact.Cone{}
	for _, c := range cones {
		byID[c.ID] = append(byID[c.ID], c)
	}
	for id, cs := range byID {
		slices.SortFunc(cs, func(a, b artifact.Cone) int { return cmp.Compare(a.Branch, b.Branch) })
		for b, c := range cs {
			if int(c.Branch) != b {
				return nil, fmt.Errorf("%s: query %d: branches %v, want 0..%d", name, id, branchesOf(cs), len(cs)-1)
			}
		}
	}
	return byID, nil
}

func branchesOf(cs []artifact.Cone) []int8 {
	out := make([]int8, len(cs))
	for i, c := range cs {
		out[i] = c.Branch
	}
	return out
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
