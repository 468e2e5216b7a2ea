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
	// Device, if not nil, embeds on that accelerator (device.RankDevice): the model is
	// loaded there once and each batch is the device walk's forward pass, its branch cones
	// downloaded in one copy. Batches are then ShardBlock's (rank's batch on the device):
	// a query's cones on the device do not depend on its batch, and fewer, larger batches
	// cost fewer round trips.
	Device eval.RankDevice
	// Shard, unless the whole, embeds only that part of the queries: the whole blocks of
	// shard.Spec.BlockRange, so the n shards' cones together are the unsharded cones.
	Shard shard.Spec
	// ShardBlock is the batch size of the `rank` the cones are for (0: the CPU default,
	// eval.DefaultRankBatch): shards are cut where `rank --shard` cuts with that batch
	// (shardBlock), so shard i's cones are those `rank --shard i/n --cones` needs.
	ShardBlock int
	Log        io.Writer
	// Warnings is where warnings go whatever Log (a checkpoint without lineage, a
	// folder without names): -q drops progress, never warnings. Nil: Log.
	Warnings io.Writer
}

// Embed writes the cones of every query of a queries artifact: one row per query and DNF
// branch. On the CPU, queries are embedded in the batches eval.RankQueries scores
// (DefaultRankBatch consecutive queries, grouped by structure), so that `rank --cones`
// reproduces the ranks of `rank` without cones bit for bit; on a device (cfg.Device) in
// the device's batches, which reproduce `rank --device cuda` alike.
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
	l.warnNoLineage(warnTo(cfg.Warnings, cfg.Log), cfg.Queries)
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
	block := shardBlock(cfg.ShardBlock, len(rq))
	first, end, err := shardRange(cfg.Shard, cfg.Queries, len(rq), block)
	if err != nil {
		return err
	}
	d, batch := mc.Dim, eval.DefaultRankBatch
	embed := func(grounded []query.Grounded, lo int) ([][]model.Cones[float32], error) {
		var out [][]model.Cones[float32]
		for _, group := range model.GroupByStructure(grounded) {
			var anchors, relations []int32
			for _, i := range group {
				anchors = append(anchors, grounded[i].Anchors...)
				relations = append(relations, grounded[i].Relations...)
			}
			emb, err := l.model.Embed(grounded[group[0]].Structure, anchors, relations, len(group), nil)
			if err != nil {
				return nil, fmt.Errorf("query %d: %w", rows[lo+group[0]].ID, err)
			}
			out = append(out, emb.Branches)
		}
		return out, nil
	}
	if cfg.Device != nil {
		dm, err := cfg.Device.Load(l.model)
		if err != nil {
			return fmt.Errorf("loading %s on the device: %w", cfg.Checkpoint, err)
		}
		defer dm.Close()
		batch = block
		embed = func(grounded []query.Grounded, lo int) ([][]model.Cones[float32], error) {
			out, err := dm.EmbedBatch(grounded)
			if err != nil {
				return nil, fmt.Errorf("embedding queries %d to %d on the device: %w", rows[lo].ID, rows[lo+len(grounded)-1].ID, err)
			}
			return out, nil
		}
	}
	prog := newProgress(cfg.Log, "embed", end-first)
	for lo := first; lo < end; lo += batch {
		hi := min(lo+batch, end)
		grounded := make([]query.Grounded, hi-lo)
		for i := range grounded {
			grounded[i] = rq[lo+i].Query
		}
		groups, err := embed(grounded, lo)
		if err != nil {
			return err
		}
		cones := make([][]model.Cones[float32], len(grounded)) // per query: its group's branches
		row := make([]int, len(grounded))                      // and its row in them
		for gi, group := range model.GroupByStructure(grounded) {
			for r, i := range group {
				cones[i], row[i] = groups[gi], r
			}
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
