package artifact

import (
	"fmt"
	"maps"
	"math"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/rocone/rocone/pkg/shard"
)

// ConesMeta is the schema metadata of a cones artifact: what the cones are of and how
// they were made.
type ConesMeta struct {
	Dim            int    // dimension of axis and aperture
	Aperture       string // "half": aperture holds the half aperture h in [0, π] (boundaries a±h)
	Model          string // model variant
	Dataset        string
	Split          string
	NumEntities    int
	Checkpoint     string // path of the checkpoint the cones were computed with
	CheckpointHash string // SHA-256 of the checkpoint file
	Queries        string // path of the queries artifact ("stdin" for a pipe)
	QueriesHash    string // QueriesDigest of its rows
	// KGDigest and TrainFingerprint are the checkpoint's lineage (CheckpointMeta).
	KGDigest         string
	TrainFingerprint string
	// Shard is the part of the queries an `embed --shard` file holds (metadata key shard;
	// absent, the whole, in an unsharded file). QueriesHash stays the whole file's.
	Shard shard.Spec
}

// Cone is one row of a cones artifact: one DNF branch of one query.
type Cone struct {
	ID       int64
	Type     string
	Branch   int8
	Axis     []float32 // radians, in [-π, π)
	Aperture []float32 // half aperture, radians
}

// conesSpec is the cones schema for dimension dim: fixed-size lists, declared with
// nullable elements because pqarrow (for an export to Parquet) writes non-nullable
// fixed_size_list columns as NULL.
func conesSpec(dim int) *spec {
	vec := arrow.FixedSizeListOfField(int32(dim), arrow.Field{Name: "item", Type: arrow.PrimitiveTypes.Float32, Nullable: true})
	return &spec{kind: "cones", version: 1, fields: []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "type", Type: arrow.BinaryTypes.String},
		{Name: "branch", Type: arrow.PrimitiveTypes.Int8},
		{Name: "axis", Type: vec},
		{Name: "aperture", Type: vec},
	}}
}

func (m ConesMeta) values() map[string]string {
	v := map[string]string{
		"dim": strconv.Itoa(m.Dim), "aperture": m.Aperture, "model": m.Model, "dataset": m.Dataset,
		"split": m.Split, "num_entities": strconv.Itoa(m.NumEntities),
		"checkpoint": m.Checkpoint, "checkpoint_sha256": m.CheckpointHash,
		"queries": m.Queries, "queries_digest": m.QueriesHash,
		MetaKG: m.KGDigest, MetaTrainFingerprint: m.TrainFingerprint,
	}
	maps.Copy(v, m.Shard.Meta())
	return v
}

// ConesWriter writes a cones artifact row by row.
type ConesWriter struct {
	t     *tableWriter
	order coneOrder
	dim   int
	axis  *array.Float32Builder
	ap    *array.Float32Builder
}

// CreateCones starts a cones artifact at path ("-" for a stream on stdout).
func CreateCones(path string, meta ConesMeta) (*ConesWriter, error) {
	if meta.Dim <= 0 {
		return nil, fmt.Errorf("%s: cones need a positive dimension, got %d", displayName(path, "stdout"), meta.Dim)
	}
	t, err := createTable(path, conesSpec(meta.Dim), meta.values())
	if err != nil {
		return nil, err
	}
	return &ConesWriter{t: t, dim: meta.Dim,
		axis: t.field(3).(*array.FixedSizeListBuilder).ValueBuilder().(*array.Float32Builder),
		ap:   t.field(4).(*array.FixedSizeListBuilder).ValueBuilder().(*array.Float32Builder)}, nil
}

// Write appends one cone.
func (w *ConesWriter) Write(c *Cone) error {
	if err := w.t.usable(); err != nil {
		return err
	}
	if len(c.Axis) != w.dim || len(c.Aperture) != w.dim {
		return fmt.Errorf("%s: query %d branch %d: axis/aperture of length %d/%d, want %d", w.t.name, c.ID, c.Branch, len(c.Axis), len(c.Aperture), w.dim)
	}
	if err := checkCone(c.Axis, c.Aperture); err != nil {
		return fmt.Errorf("%s: query %d branch %d: %w", w.t.name, c.ID, c.Branch, err)
	}
	if err := w.order.next(c.ID, c.Type, c.Branch); err != nil {
		return fmt.Errorf("%s: %w", w.t.name, err)
	}
	w.t.field(0).(*array.Int64Builder).Append(c.ID)
	w.t.field(1).(*array.StringBuilder).Append(c.Type)
	w.t.field(2).(*array.Int8Builder).Append(c.Branch)
	w.t.field(3).(*array.FixedSizeListBuilder).Append(true)
	w.axis.AppendValues(c.Axis, nil)
	w.t.field(4).(*array.FixedSizeListBuilder).Append(true)
	w.ap.AppendValues(c.Aperture, nil)
	return w.t.rowDone()
}

// Close completes the artifact.
func (w *ConesWriter) Close() error { return w.t.close() }

// Abort abandons it; a no-op after Close.
func (w *ConesWriter) Abort() { w.t.abort() }

// ReadCones reads a whole cones artifact ("-" for stdin). It refuses a file in which a
// query's cones do not come together, branches 0, 1, … in order (coneOrder).
func ReadCones(path string) (ConesMeta, []Cone, error) {
	var m ConesMeta
	var cones []Cone
	specFor := func(name string, md arrow.Metadata) (*spec, error) {
		if err := kindIs(name, md, "cones"); err != nil {
			return nil, err
		}
		var err error
		if m.Dim, err = metaCount(name, md, "dim"); err != nil {
			return nil, err
		}
		if m.NumEntities, err = metaCount(name, md, "num_entities"); err != nil {
			return nil, err
		}
		for key, dst := range map[string]*string{"aperture": &m.Aperture, "model": &m.Model, "dataset": &m.Dataset, "split": &m.Split,
			"checkpoint": &m.Checkpoint, "checkpoint_sha256": &m.CheckpointHash, "queries": &m.Queries, "queries_digest": &m.QueriesHash,
			MetaKG: &m.KGDigest, MetaTrainFingerprint: &m.TrainFingerprint} {
			if *dst, err = metaString(name, md, key); err != nil {
				return nil, err
			}
		}
		if m.Shard, err = metaShard(name, md); err != nil {
			return nil, err
		}
		return conesSpec(m.Dim), nil
	}
	var order coneOrder
	err := readTable(path, specFor, func(rec arrow.Record, first int64) error {
		dim := m.Dim
		ids := rec.Column(0).(*array.Int64).Int64Values()
		types := rec.Column(1).(*array.String)
		branches := rec.Column(2).(*array.Int8).Int8Values()
		axis := rec.Column(3).(*array.FixedSizeList).ListValues().(*array.Float32).Float32Values()
		ap := rec.Column(4).(*array.FixedSizeList).ListValues().(*array.Float32).Float32Values()
		off3, off4 := rec.Column(3).Data().Offset()*dim, rec.Column(4).Data().Offset()*dim
		if len(axis) < off3+len(ids)*dim || len(ap) < off4+len(ids)*dim {
			return fmt.Errorf("rows %d to %d: corrupt axis/aperture values", first, first+int64(len(ids))-1)
		}
		for i := range ids {
			if err := checkCone(axis[off3+i*dim:off3+(i+1)*dim], ap[off4+i*dim:off4+(i+1)*dim]); err != nil {
				return fmt.Errorf("row %d (query %d branch %d): %w", first+int64(i), ids[i], branches[i], err)
			}
			if err := order.next(ids[i], types.Value(i), branches[i]); err != nil {
				return fmt.Errorf("row %d: %w", first+int64(i), err)
			}
			cones = append(cones, Cone{ID: ids[i], Type: types.Value(i), Branch: branches[i],
				Axis:     append([]float32(nil), axis[off3+i*dim:off3+(i+1)*dim]...),
				Aperture: append([]float32(nil), ap[off4+i*dim:off4+(i+1)*dim]...)})
		}
		return nil
	})
	if err != nil {
		return ConesMeta{}, nil, err
	}
	return m, cones, nil
}

// coneOrder checks the order embed writes rows in: a query's branches together, 0, 1,
// ... in order, of one type.
type coneOrder struct {
	seen   map[int64]bool // queries whose rows have ended
	id     int64
	typ    string
	branch int8
	any    bool
}

func (o *coneOrder) next(id int64, typ string, branch int8) error {
	switch {
	case id < 0:
		return fmt.Errorf("negative query id %d", id)
	case o.any && id == o.id:
		if typ != o.typ {
			return fmt.Errorf("query %d of type %q, and of %q in the row before", id, typ, o.typ)
		}
		if int(branch) != int(o.branch)+1 {
			return fmt.Errorf("query %d: branch %d after branch %d: a query's branches come in order, 0 first", id, branch, o.branch)
		}
	case o.seen[id]:
		return fmt.Errorf("query %d again, after rows of other queries: a query's cones come together", id)
	case branch != 0:
		return fmt.Errorf("query %d begins with branch %d, not 0", id, branch)
	default:
		if o.any {
			if o.seen == nil {
				o.seen = map[int64]bool{}
			}
			o.seen[o.id] = true
		}
	}
	o.id, o.typ, o.branch, o.any = id, typ, branch, true
	return nil
}

// checkCone checks what a cone promises: finite axes and half apertures in [0, π] (π as
// float32 rounds it up). A value outside would be scored as if it meant something.
func checkCone(axis, half []float32) error {
	for d, a := range axis {
		if math.IsNaN(float64(a)) || math.IsInf(float64(a), 0) {
			return fmt.Errorf("axis[%d] = %v is not finite", d, a)
		}
	}
	for d, h := range half {
		if !(h >= 0 && h <= float32(math.Pi)) {
			return fmt.Errorf("half aperture[%d] = %v is outside [0, π]", d, h)
		}
	}
	return nil
}
