package artifact

import (
	"fmt"
	"maps"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/rocone/rocone/pkg/shard"
)

// RanksMeta is the schema metadata of a ranks artifact.
type RanksMeta struct {
	Model          string
	Dataset        string
	Split          string
	NumEntities    int
	NumQueries     int    // queries in the queries artifact, with or without hard answers
	Queries        string // path of the queries artifact
	QueriesHash    string // QueriesDigest of its rows: ranks of different query files never mix
	Checkpoint     string
	CheckpointHash string
	Seed           string // the training seed of the checkpoint, for the metrics table
	TopK           int    // 0: no top-K columns
	// TrainConfig is the checkpoint's training configuration (JSON, metadata key
	// train_config): metrics tells seeds of one model from different models by it. Empty
	// in ranks files written before it was recorded.
	TrainConfig string
	// KGDigest and TrainFingerprint are the checkpoint's lineage (CheckpointMeta):
	// metrics refuses to average seeds of other KGs or train files.
	KGDigest         string
	TrainFingerprint string
	// CheckpointTrajectory is the checkpoint's trajectory, "STEPS:DIGEST" (metadata key
	// checkpoint_trajectory; train.CheckpointTrajectory): metrics matches a --log with the
	// ranked run by it. Empty for a checkpoint that records none, and in older files.
	CheckpointTrajectory string
	// Shard is the part of the queries a `rank --shard` file ranks (metadata key shard;
	// absent, the whole, in an unsharded file). NumQueries and QueriesHash stay those of
	// the whole queries file.
	Shard shard.Spec
	// ShardRange is the queries [First, End) of the file's Total that a shard ranks
	// (metadata key shard_range): metrics checks that a run's shards tile the file.
	// Unknown in unsharded files and in shards written before it was recorded.
	ShardRange shard.Span
}

// Rank is one row: the filtered rank of one hard answer of one query (1-based, as in
// docs/queries.md §5). With TopK > 0, Top and TopScores hold the query's
// K best entities and their scores (the same for every row of a query), and TopNames
// their names when the KG has them.
type Rank struct {
	ID        int64
	Type      string
	Answer    int32
	Rank      int32
	Top       []int32
	TopScores []float32
	TopNames  []string
}

func ranksSpec(topK bool) *spec {
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "type", Type: arrow.BinaryTypes.String},
		{Name: "answer", Type: arrow.PrimitiveTypes.Int32},
		{Name: "rank", Type: arrow.PrimitiveTypes.Int32},
	}
	if topK {
		fields = append(fields,
			arrow.Field{Name: "top", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int32)},
			arrow.Field{Name: "top_scores", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Float32)},
			arrow.Field{Name: "top_names", Type: arrow.ListOfNonNullable(arrow.BinaryTypes.String)})
	}
	return &spec{kind: "ranks", version: 1, fields: fields}
}

func (m RanksMeta) values() map[string]string {
	v := map[string]string{
		"model": m.Model, "dataset": m.Dataset, "split": m.Split, "num_entities": strconv.Itoa(m.NumEntities),
		"num_queries": strconv.Itoa(m.NumQueries), "queries": m.Queries, "queries_digest": m.QueriesHash,
		"checkpoint": m.Checkpoint, "checkpoint_sha256": m.CheckpointHash, "seed": m.Seed, "top_k": strconv.Itoa(m.TopK),
		"train_config": m.TrainConfig, MetaKG: m.KGDigest, MetaTrainFingerprint: m.TrainFingerprint,
	}
	maps.Copy(v, m.Shard.Meta())
	if m.CheckpointTrajectory != "" {
		v["checkpoint_trajectory"] = m.CheckpointTrajectory
	}
	if m.ShardRange.Known() {
		v[shard.RangeKey] = m.ShardRange.String()
	}
	return v
}

// RanksWriter writes a ranks artifact row by row.
type RanksWriter struct {
	t     *tableWriter
	order rankOrder
	topK  int
	n     int // entities
}

// CreateRanks starts a ranks artifact at path ("-" for a stream on stdout).
func CreateRanks(path string, meta RanksMeta) (*RanksWriter, error) {
	t, err := createTable(path, ranksSpec(meta.TopK > 0), meta.values())
	if err != nil {
		return nil, err
	}
	return &RanksWriter{t: t, topK: meta.TopK, n: meta.NumEntities}, nil
}

// Write appends one row.
func (w *RanksWriter) Write(r *Rank) error {
	if err := w.t.usable(); err != nil {
		return err
	}
	if r.Rank < 1 || int(r.Rank) > w.n || r.Answer < 0 || int(r.Answer) >= w.n {
		return fmt.Errorf("%s: query %d: rank %d of answer %d out of range for %d entities", w.t.name, r.ID, r.Rank, r.Answer, w.n)
	}
	if err := w.order.next(r); err != nil {
		return fmt.Errorf("%s: %w", w.t.name, err)
	}
	w.t.field(0).(*array.Int64Builder).Append(r.ID)
	w.t.field(1).(*array.StringBuilder).Append(r.Type)
	w.t.field(2).(*array.Int32Builder).Append(r.Answer)
	w.t.field(3).(*array.Int32Builder).Append(r.Rank)
	if w.topK > 0 {
		if len(r.TopScores) != len(r.Top) || (len(r.TopNames) != 0 && len(r.TopNames) != len(r.Top)) {
			return fmt.Errorf("%s: query %d: top-K lists of different lengths", w.t.name, r.ID)
		}
		lb := w.t.field(4).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Int32Builder).AppendValues(r.Top, nil)
		sb := w.t.field(5).(*array.ListBuilder)
		sb.Append(true)
		sb.ValueBuilder().(*array.Float32Builder).AppendValues(r.TopScores, nil)
		nb := w.t.field(6).(*array.ListBuilder)
		nb.Append(true)
		nb.ValueBuilder().(*array.StringBuilder).AppendValues(r.TopNames, nil)
	}
	return w.t.rowDone()
}

// Close completes the artifact.
func (w *RanksWriter) Close() error { return w.t.close() }

// Abort abandons it; a no-op after Close.
func (w *RanksWriter) Abort() { w.t.abort() }

// ReadRanks reads a whole ranks artifact ("-" for stdin). The top-K columns, when present,
// are not read back (they are for people and outside tools).
func ReadRanks(path string) (RanksMeta, []Rank, error) {
	var m RanksMeta
	var rows []Rank
	specFor := func(name string, md arrow.Metadata) (*spec, error) {
		if err := kindIs(name, md, "ranks"); err != nil {
			return nil, err
		}
		var err error
		for key, dst := range map[string]*int{"num_entities": &m.NumEntities, "num_queries": &m.NumQueries, "top_k": &m.TopK} {
			if *dst, err = metaCount(name, md, key); err != nil {
				return nil, err
			}
		}
		for key, dst := range map[string]*string{"model": &m.Model, "dataset": &m.Dataset, "split": &m.Split, "queries": &m.Queries,
			"queries_digest": &m.QueriesHash, "checkpoint": &m.Checkpoint, "checkpoint_sha256": &m.CheckpointHash, "seed": &m.Seed,
			MetaKG: &m.KGDigest, MetaTrainFingerprint: &m.TrainFingerprint} {
			if *dst, err = metaString(name, md, key); err != nil {
				return nil, err
			}
		}
		m.TrainConfig, _ = md.GetValue("train_config") // optional: absent in older files
		m.CheckpointTrajectory, _ = md.GetValue("checkpoint_trajectory")
		if m.Shard, err = metaShard(name, md); err != nil {
			return nil, err
		}
		if v, ok := md.GetValue(shard.RangeKey); ok {
			if m.ShardRange, err = shard.ParseSpan(name, v); err != nil {
				return nil, err
			}
		}
		return ranksSpec(m.TopK > 0), nil
	}
	var order rankOrder
	err := readTable(path, specFor, func(rec arrow.Record, first int64) error {
		ids := rec.Column(0).(*array.Int64).Int64Values()
		types := rec.Column(1).(*array.String)
		answers := rec.Column(2).(*array.Int32).Int32Values()
		ranks := rec.Column(3).(*array.Int32).Int32Values()
		for i := range ids {
			if ranks[i] < 1 || int(ranks[i]) > m.NumEntities || answers[i] < 0 || int(answers[i]) >= m.NumEntities {
				return fmt.Errorf("row %d: rank %d of answer %d out of range for %d entities", first+int64(i), ranks[i], answers[i], m.NumEntities)
			}
			r := Rank{ID: ids[i], Type: types.Value(i), Answer: answers[i], Rank: ranks[i]}
			if err := order.next(&r); err != nil {
				return fmt.Errorf("row %d: %w", first+int64(i), err)
			}
			rows = append(rows, r)
		}
		if m.TopK > 0 {
			return checkTopK(rec, first, m)
		}
		return nil
	})
	if err != nil {
		return RanksMeta{}, nil, err
	}
	if err := checkRankedQueries(path, m, rows); err != nil {
		return RanksMeta{}, nil, err
	}
	return m, rows, nil
}

// rankOrder checks the order rank writes rows in: a query's rows together, its answers
// ascending without repeats (the order of its hard answers), one type per query.
type rankOrder struct {
	seen map[int64]bool // queries whose rows have ended
	last Rank
	any  bool
}

func (o *rankOrder) next(r *Rank) error {
	switch {
	case r.ID < 0:
		return fmt.Errorf("negative query id %d", r.ID)
	case o.any && r.ID == o.last.ID:
		if r.Type != o.last.Type {
			return fmt.Errorf("query %d of type %q, and of %q in the row before", r.ID, r.Type, o.last.Type)
		}
		if r.Answer <= o.last.Answer {
			return fmt.Errorf("query %d: answer %d after %d: a query's answers come in ascending order, once each", r.ID, r.Answer, o.last.Answer)
		}
	case o.seen[r.ID]:
		return fmt.Errorf("query %d again, after rows of other queries: a query's rows come together", r.ID)
	default:
		if o.any {
			if o.seen == nil {
				o.seen = map[int64]bool{}
			}
			o.seen[o.last.ID] = true
		}
	}
	o.last, o.any = *r, true
	return nil
}

// checkTopK checks the top-K columns of a batch: as many entities as scores, in range,
// at most K of them, names for all of them or none, scores in order (best first) and not
// NaN.
func checkTopK(rec arrow.Record, first int64, m RanksMeta) error {
	top, scores, names := rec.Column(4).(*array.List), rec.Column(5).(*array.List), rec.Column(6).(*array.List)
	topOff, topVals, err := listSlices("", "top", top)
	if err != nil {
		return err
	}
	sOff, err := ckptOffsets("", "top_scores", scores)
	if err != nil {
		return err
	}
	sVals := scores.ListValues().(*array.Float32).Float32Values()
	nOff, err := ckptOffsets("", "top_names", names)
	if err != nil {
		return err
	}
	if int(sOff[len(sOff)-1]) > len(sVals) {
		return fmt.Errorf("column top_scores: corrupt list offsets")
	}
	for i := 0; i < top.Len(); i++ {
		row := first + int64(i)
		ids := topVals[topOff[i]:topOff[i+1]]
		sc := sVals[sOff[i]:sOff[i+1]]
		nn := nOff[i+1] - nOff[i]
		switch {
		case len(ids) > m.TopK:
			return fmt.Errorf("row %d: %d top entities, more than top_k %d", row, len(ids), m.TopK)
		case len(sc) != len(ids) || (nn != 0 && int(nn) != len(ids)):
			return fmt.Errorf("row %d: %d top entities, %d scores and %d names", row, len(ids), len(sc), nn)
		}
		if j := outOfRange(ids, m.NumEntities); j >= 0 {
			return fmt.Errorf("row %d: top entity %d out of range [0, %d)", row, ids[j], m.NumEntities)
		}
		for j := range sc {
			if sc[j] != sc[j] || (j > 0 && sc[j] > sc[j-1]) {
				return fmt.Errorf("row %d: top scores %v: not best first, or NaN", row, sc)
			}
		}
	}
	return nil
}

// checkRankedQueries checks the rows against the metadata's count of queries: every
// query has at least one hard answer, so a ranks file holds rows of exactly num_queries
// queries (a shard: of its range's). A row dropped or added would otherwise move the
// metrics without a word.
func checkRankedQueries(path string, m RanksMeta, rows []Rank) error {
	want := m.NumQueries
	switch {
	case m.ShardRange.Known():
		want = m.ShardRange.End - m.ShardRange.First
	case !m.Shard.Whole():
		return nil // a shard of an older version: its range is not recorded
	}
	seen := make(map[int64]struct{}, want)
	for _, r := range rows {
		seen[r.ID] = struct{}{}
	}
	if len(seen) != want {
		return fmt.Errorf("%s: rows of %d queries, but its metadata says %d: rows were dropped or added", displayName(path, "stdin"), len(seen), want)
	}
	return nil
}
