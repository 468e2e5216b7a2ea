package pipeline

import (
	"fmt"
	"io"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
	"github.com/rocone/rocone/pkg/shard"
)

// EmbedConfig is what `embed` does.
type EmbedConfig struct {
	Checkpoint string
	Queries    string // "-" for stdin
	Output     string // "-" for stdout
	Kernels    compute.Backend
	// Shard, unless the whole, embeds only that part of the queries: the whole blocks of
	// shard.Spec.BlockRange, so the n shards' cones together are the unsharded cones.
	Shard shard.Spec
	// ShardBlock is the batch size of the `rank` the cones are for (0: the CPU default,
	// eval.DefaultRankBatch): shards are cut where `rank --shard` cuts with that batch
	// (shardBlock), so shard i's cones are those `rank --shard i/n --cones` needs.
	ShardBlock int
	Log        io.Writer
}

// Embed writes the cones of every query of a queries artifact: one row per query and DNF
// branch. Queries are embedded in the batches eval.RankQueries scores (DefaultRankBatch
// consecutive queries, grouped by structure), so that `rank --cones` reproduces the ranks
// of `rank` without cones bit for bit.
func Embed(cfg EmbedConfig) error {
	release, err := cfg.checkOutputs()
	if err != nil {
		return err
	}
	defer release()
	l, err := loadModel(cfg.Checkpoint, cfg.Kernels)
	if err != nil {
		return err
	}
	qmeta, rows, rq, err := readQueriesFor(cfg.Queries, l)
	if err != nil {
		return err
	}
	l.warnNoLineage(cfg.Log, cfg.Queries)
	mc := l.model.Config
	w, err := artifact.CreateCones(cfg.Output, artifact.ConesMeta{
		Dim: mc.Dim, Aperture: "half", Model: string(mc.Variant), Dataset: qmeta.Dataset, Split: qmeta.Split,
		NumEntities: mc.NumEntities, Checkpoint: cfg.Checkpoint, CheckpointHash: l.hash,
		Queries: displayPath(cfg.Queries), QueriesHash: artifact.QueriesDigest(rows), Shard: cfg.Shard,
		KGDigest: l.meta.KGDigest, TrainFingerprint: l.meta.TrainFingerprint,
	})
	if err != nil {
		return err
	}
	defer w.Abort()
	d, batch := mc.Dim, eval.DefaultRankBatch
	first, end, err := shardRange(cfg.Shard, cfg.Queries, len(rq), shardBlock(cfg.ShardBlock, len(rq)))
	if err != nil {
		return err
	}
	prog := newProgress(cfg.Log, "embed", end-first)
	for lo := first; lo < end; lo += batch {
		hi := min(lo+batch, end)
		grounded := make([]query.Grounded, hi-lo)
		for i := range grounded {
			grounded[i] = rq[lo+i].Query
		}
		cones := make([][]model.Cones[float32], len(grounded)) // per query: its group's branches
		row := make([]int, len(grounded))                      // and its row in them
		for _, group := range model.GroupByStructure(grounded) {
			var anchors, relations []int32
			for _, i := range group {
				anchors = append(anchors, grounded[i].Anchors...)
				relations = append(relations, grounded[i].Relations...)
			}
			emb, err := l.model.Embed(grounded[group[0]].Structure, anchors, relations, len(group), nil)
			if err != nil {
				return fmt.Errorf("query %d: %w", rows[lo+group[0]].ID, err)
			}
			for r, i := range group {
				cones[i], row[i] = emb.Branches, r
			}
		}
		// A device backend's error (compute.Err) ends the stage before the cones computed
		// since reach the artifact; w.Abort then removes it.
		if err := compute.Err(l.model.Kernels); err != nil {
			return fmt.Errorf("embedding queries %d to %d: %w", rows[lo].ID, rows[hi-1].ID, err)
		}
		for i := range grounded {
			q, r := &rows[lo+i], row[i]
			for b, c := range cones[i] {
				cone := artifact.Cone{ID: q.ID, Type: q.Type, Branch: int8(b), Axis: c.Axis[r*d : (r+1)*d], Aperture: c.Half[r*d : (r+1)*d]}
				if err := w.Write(&cone); err != nil {
					return err
				}
			}
		}
		prog.add(hi - lo)
	}
	prog.finish()
	return w.Close()
}
