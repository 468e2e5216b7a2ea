package pipeline

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/checkpoint"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/train"
)

// warnTo is the writer for a stage's warnings: its Warnings, else its Log, else none.
// The stages' commands set Warnings to stderr, so that `-q` (a nil Log) silences
// progress, never warnings.
func warnTo(warnings, log io.Writer) io.Writer {
	switch {
	case warnings != nil:
		return warnings
	case log != nil:
		return log
	}
	return io.Discard
}

// loaded is a model read from a checkpoint (checkpoint.Load), with what the artifacts made
// from it record about it.
type loaded struct {
	path  string
	hash  string // SHA-256 of the checkpoint file
	meta  artifact.CheckpointMeta
	model *model.Model[float32]
}

// loadModel reads the checkpoint at path for a stage that uses the model (embed, rank,
// rank --ask, metrics patterns, embed export): every such stage opens its checkpoint
// here, so they accept and refuse the same files with the same messages.
func loadModel(path string, kernels compute.Backend) (*loaded, error) {
	if path == "-" {
		// The checkpoint is read twice, for the model and for its SHA-256 (which the
		// artifacts made from it record): stdin cannot be.
		return nil, fmt.Errorf("--checkpoint -: a checkpoint is read from a file only, not from stdin: give its path")
	}
	m, ck, err := checkpoint.Load(path, kernels)
	if err != nil {
		return nil, err
	}
	meta := ck.Meta
	if err := train.CheckRecorded(meta.Config, m.Config); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// The model holds a copy of the parameters: collect the checkpoint's now, before the
	// stage allocates its own tables (rank's prepared entity table is several times the
	// entity table), rather than when the pacer gets to it with the heap twice as large.
	// With this and ReadCheckpointParams's own collections, rank's peak RSS on a
	// 1.5M-entity, d=200 checkpoint (3.6 GB) went from 9.3 GB to 7.4 GB.
	ck = nil
	runtime.GC()
	if err := checkFinite(path, m); err != nil {
		return nil, err
	}
	hash, err := artifact.FileDigest(path)
	if err != nil {
		return nil, err
	}
	return &loaded{path: path, hash: hash, meta: meta, model: m}, nil
}

// checkFinite refuses a checkpoint with a NaN or infinite parameter: such a model embeds
// queries as NaN cones and scores entities as NaN. Every stage that loads a model for use
// (embed, rank, metrics patterns) checks it here, so they accept and refuse the same
// checkpoints.
func checkFinite(path string, m *model.Model[float32]) error {
	for _, t := range m.Params.Tensors() {
		for i, x := range t.Data {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				r, c := i, 0
				if t.Cols > 0 {
					r, c = i/t.Cols, i%t.Cols
				}
				return fmt.Errorf("%s: parameter %s[%d, %d] is %v: the model is not usable (a diverged run?)", path, t.Name, r, c, x)
			}
		}
	}
	return nil
}

// trainedOn is the identity of the KG a checkpoint was trained on: the dataset's name and,
// in checkpoints trained from queries files that record one, the digest of its entity
// table (kg.Dataset.EntityDigest).
func (l *loaded) trainedOn() (dataset, entities string) {
	return l.meta.Dataset, l.meta.EntitiesDigest
}

// seed is the seed the checkpoint was trained with, from its training configuration.
func (l *loaded) seed() string { return configSeed(l.meta.Config) }

// warnNoLineage says on w, for a checkpoint that records no KG digest (a model imported
// from QE-ConE, trained outside this pipeline), that queries are checked against it by
// dataset name and counts only.
func (l *loaded) warnNoLineage(w io.Writer, queries string) {
	if l.meta.KGDigest == "" {
		fmt.Fprintf(w, "warning: %s records no KG digest (trained outside this pipeline?): that %s is of its KG is checked by dataset name and counts only\n",
			l.path, displayPath(queries))
	}
}

// readQueriesFor reads a queries artifact and checks it against a loaded model (the
// queries' KG against the model's where it records one).
func readQueriesFor(path string, l *loaded) (artifact.QueriesMeta, []artifact.Query, []eval.RankQuery, error) {
	meta, rows, err := artifact.ReadQueries(path)
	if err != nil {
		return meta, nil, nil, err
	}
	name, mc := displayPath(path), l.model.Config
	if err := meta.CheckWhole(name); err != nil {
		return meta, nil, nil, err
	}
	switch {
	case len(rows) == 0:
		return meta, nil, nil, fmt.Errorf("%s: no queries", name)
	case meta.NumEntities != mc.NumEntities || meta.NumRelations != mc.NumRelations:
		return meta, nil, nil, fmt.Errorf("%s: a KG of %d entities and %d relations, but %s was trained on %d and %d",
			name, meta.NumEntities, meta.NumRelations, l.path, mc.NumEntities, mc.NumRelations)
	case l.meta.Dataset != "" && meta.Dataset != l.meta.Dataset:
		return meta, nil, nil, fmt.Errorf("%s: queries of dataset %q, but %s was trained on %q", name, meta.Dataset, l.path, l.meta.Dataset)
	case l.meta.KGDigest != "" && meta.KGDigest != l.meta.KGDigest:
		return meta, nil, nil, fmt.Errorf("%s: queries of another KG (digest %.12s) than %s was trained on (digest %.12s), though dataset %q and counts agree",
			name, meta.KGDigest, l.path, l.meta.KGDigest, meta.Dataset)
	}
	rq, err := eval.QueriesFromArtifact(rows, mc.NumEntities, mc.NumRelations)
	if err != nil {
		return meta, nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return meta, rows, rq, nil
}

// datasetFor loads a dataset folder for its name tables, checking that it is the KG of
// the loaded model: the same sizes, and the same entity table (by its digest) where the
// checkpoint records one. A checkpoint from before the digest was recorded is checked by
// the dataset's name instead, with a warning on w.
func datasetFor(dir string, l *loaded, w io.Writer) (*kg.Dataset, error) {
	mc := l.model.Config
	d, err := kg.Load(dir, kg.FormatAuto)
	if err != nil {
		return nil, err
	}
	if d.NumEntities != mc.NumEntities || d.NumRelations != mc.NumRelations {
		return nil, fmt.Errorf("%s has %d entities and %d relations, the checkpoint %s %d and %d",
			dir, d.NumEntities, d.NumRelations, l.path, mc.NumEntities, mc.NumRelations)
	}
	if kgd := l.meta.KGDigest; kgd != "" {
		if got := d.Digest(); got != kgd {
			return nil, fmt.Errorf("%s is another KG (digest %.12s) than %s was trained on (digest %.12s), though its counts agree",
				dir, got, l.path, kgd)
		}
		return d, nil
	}
	name, digest := l.trainedOn()
	switch got := d.EntityDigest(); {
	case got == "":
		// The folder names no entities: there is nothing to mislabel.
	case digest != "" && got != digest:
		return nil, fmt.Errorf("%s: its entity table (digest %.12s) is not the one %s was trained on (dataset %q, digest %.12s), though the counts agree",
			dir, got, l.path, name, digest)
	case digest == "" && name != "" && !strings.EqualFold(name, d.Name):
		return nil, fmt.Errorf("%s is dataset %q, but %s was trained on %q", dir, d.Name, l.path, name)
	case digest == "":
		fmt.Fprintf(w, "warning: %s records no entity-table digest (trained before it was recorded): cannot check that %s names its entities\n", l.path, dir)
	}
	return d, nil
}

func displayPath(p string) string {
	if p == "-" {
		return "stdin"
	}
	return p
}
