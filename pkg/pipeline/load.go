package pipeline

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/model"
)

// loaded is a model read from a checkpoint (eval.LoadModel), with what the artifacts made
// from it record about it.
type loaded struct {
	path  string
	hash  string // SHA-256 of the checkpoint file
	meta  artifact.CheckpointMeta
	model *model.Model[float32]
}

func loadModel(path string, kernels compute.Backend) (*loaded, error) {
	m, ck, err := eval.LoadModel(path, kernels)
	if err != nil {
		return nil, err
	}
	hash, err := artifact.FileDigest(path)
	if err != nil {
		return nil, err
	}
	return &loaded{path: path, hash: hash, meta: ck.Meta, model: m}, nil
}

// seed is the seed the checkpoint was trained with, from its training configuration.
func (l *loaded) seed() string {
	var c struct{ Seed *uint64 }
	if err := json.Unmarshal([]byte(l.meta.Config), &c); err != nil || c.Seed == nil {
		return ""
	}
	return strconv.FormatUint(*c.Seed, 10)
}

// readQueriesFor reads a queries artifact and checks it against a loaded model.
func readQueriesFor(path string, l *loaded) (artifact.QueriesMeta, []artifact.Query, []eval.RankQuery, error) {
	meta, rows, err := artifact.ReadQueries(path)
	if err != nil {
		return meta, nil, nil, err
	}
	name, mc := displayPath(path), l.model.Config
	switch {
	case len(rows) == 0:
		return meta, nil, nil, fmt.Errorf("%s: no queries", name)
	case meta.NumEntities != mc.NumEntities || meta.NumRelations != mc.NumRelations:
		return meta, nil, nil, fmt.Errorf("%s: a KG of %d entities and %d relations, but %s was trained on %d and %d",
			name, meta.NumEntities, meta.NumRelations, l.path, mc.NumEntities, mc.NumRelations)
	case l.meta.Dataset != "" && meta.Dataset != l.meta.Dataset:
		return meta, nil, nil, fmt.Errorf("%s: queries of dataset %q, but %s was trained on %q", name, meta.Dataset, l.path, l.meta.Dataset)
	}
	rq, err := eval.QueriesFromArtifact(rows, mc.NumEntities, mc.NumRelations)
	if err != nil {
		return meta, nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return meta, rows, rq, nil
}

// datasetFor loads a dataset folder for its name tables, checking that it is the KG of a
// model with the given sizes.
func datasetFor(dir string, numEntities, numRelations int) (*kg.Dataset, error) {
	d, err := kg.Load(dir, kg.FormatAuto)
	if err != nil {
		return nil, err
	}
	if d.NumEntities != numEntities || d.NumRelations != numRelations {
		return nil, fmt.Errorf("%s has %d entities and %d relations, the checkpoint %d and %d",
			dir, d.NumEntities, d.NumRelations, numEntities, numRelations)
	}
	return d, nil
}

func displayPath(p string) string {
	if p == "-" {
		return "stdin"
	}
	return p
}
