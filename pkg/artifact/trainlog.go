package artifact

// # The train-log artifact (artifact=train-log, version=1)
//
// The curves of a training run, for plotting: one row per training step ("train" rows)
// and, at each evaluation, one row per query type and average ("valid" rows), in step
// order. Columns, in this order, none nullable; a value that does not apply to a row's
// kind is NaN (floats) or 0 (queries):
//
//	step        int64    the 0-based index of the training step the row describes
//	kind        utf8     train or valid
//	type        utf8     valid: a query type (1p, 2in, ... or a custom name), or an average:
//	                     AVG (mean over every evaluated type), AVG-EPFO, AVG-neg (the papers'
//	                     averages, only when complete); train: empty
//	lr          float64  the learning rate of the step's updates
//	loss        float64  train: the mean loss of the step's updates (L = (L_pos + L_neg)/2)
//	loss_path   float64  train: the mean loss of the step's path-pool updates (two per step)
//	loss_other  float64  train: the loss of the step's other-pool update; NaN when that pool is empty
//	mrr         float64  valid: filtered MRR, a fraction in [0, 1] (×100 for the papers' scale)
//	hits1       float64  valid: Hits@1
//	hits3       float64  valid: Hits@3
//	hits10      float64  valid: Hits@10
//	queries     int64    valid: number of queries of the type (of the types averaged, for an average)
//	elapsed_s   float64  seconds of training (evaluation and checkpoints included) since step 0,
//	                     summed over resumed runs
//
// A loss curve is the train rows' (step, loss_path) and (step, loss_other); a valid-MRR
// curve the valid rows of one type, e.g. type == "AVG", as (step, mrr).
//
// Schema metadata:
//
//	artifact  train-log
//	version   1
//	dataset   the dataset's name
//	model     the model variant
//	config    JSON: the training configuration, as in the checkpoint
//	timings   JSON object: cumulative seconds per phase of training, e.g.
//	          {"sampling": ..., "embedding": ..., "distance": ..., "optimizer": ..., "eval": ...}
//	best      (optional) JSON object: the best validation so far by the run's best metric
//	          (train --keep-best, --patience): {"metric": "mrr:epfo", "step": S, "value": V,
//	          "since": N}, the validation after step S, and N validations since without
//	          an improvement; absent when the run compares none
//	early_stop (optional) JSON object, when --patience stopped the run: {"step": S,
//	          "patience": N, "metric": ..., "best_step": B, "best_value": V}, the run
//	          stopped after the validation of step S, N validations after its best (B)
//
// Batches hold at most 16384 rows.

import (
	"encoding/json"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Row kinds of a train log.
const (
	LogTrain = "train"
	LogValid = "valid"
)

// TrainLogMeta is the schema metadata of a train-log artifact.
type TrainLogMeta struct {
	Dataset string
	Model   string
	Config  string // JSON
	Timings string // JSON object
	// KGDigest and TrainFingerprint are the run's lineage, as in its checkpoint: metrics
	// --log plots a log beside ranks of the same run only.
	KGDigest         string
	TrainFingerprint string
	// Best and EarlyStop are the optional best and early_stop keys (JSON objects; "" when
	// absent): the best validation of a run that compares them, and its early stop.
	Best      string
	EarlyStop string
}

// TrainLogRow is one row of a train log; see the schema above.
type TrainLogRow struct {
	Step      int64
	Kind      string
	Type      string
	LR        float64
	Loss      float64
	LossPath  float64
	LossOther float64
	MRR       float64
	Hits1     float64
	Hits3     float64
	Hits10    float64
	Queries   int64
	ElapsedS  float64
}

// Columns of the train-log artifact, by index.
const (
	tlogColStep = iota
	tlogColKind
	tlogColType
	tlogColLR
	tlogColLoss
	tlogColLossPath
	tlogColLossOther
	tlogColMRR
	tlogColHits1
	tlogColHits3
	tlogColHits10
	tlogColQueries
	tlogColElapsed
)

var trainLogSpec = spec{
	kind:    "train-log",
	version: 1,
	fields: []arrow.Field{
		tlogColStep:      {Name: "step", Type: arrow.PrimitiveTypes.Int64},
		tlogColKind:      {Name: "kind", Type: arrow.BinaryTypes.String},
		tlogColType:      {Name: "type", Type: arrow.BinaryTypes.String},
		tlogColLR:        {Name: "lr", Type: arrow.PrimitiveTypes.Float64},
		tlogColLoss:      {Name: "loss", Type: arrow.PrimitiveTypes.Float64},
		tlogColLossPath:  {Name: "loss_path", Type: arrow.PrimitiveTypes.Float64},
		tlogColLossOther: {Name: "loss_other", Type: arrow.PrimitiveTypes.Float64},
		tlogColMRR:       {Name: "mrr", Type: arrow.PrimitiveTypes.Float64},
		tlogColHits1:     {Name: "hits1", Type: arrow.PrimitiveTypes.Float64},
		tlogColHits3:     {Name: "hits3", Type: arrow.PrimitiveTypes.Float64},
		tlogColHits10:    {Name: "hits10", Type: arrow.PrimitiveTypes.Float64},
		tlogColQueries:   {Name: "queries", Type: arrow.PrimitiveTypes.Int64},
		tlogColElapsed:   {Name: "elapsed_s", Type: arrow.PrimitiveTypes.Float64},
	},
}

// tlogFloats lists the float64 columns with the row field each holds.
var tlogFloats = [...]struct {
	col   int
	field func(*TrainLogRow) *float64
}{
	{tlogColLR, func(r *TrainLogRow) *float64 { return &r.LR }},
	{tlogColLoss, func(r *TrainLogRow) *float64 { return &r.Loss }},
	{tlogColLossPath, func(r *TrainLogRow) *float64 { return &r.LossPath }},
	{tlogColLossOther, func(r *TrainLogRow) *float64 { return &r.LossOther }},
	{tlogColMRR, func(r *TrainLogRow) *float64 { return &r.MRR }},
	{tlogColHits1, func(r *TrainLogRow) *float64 { return &r.Hits1 }},
	{tlogColHits3, func(r *TrainLogRow) *float64 { return &r.Hits3 }},
	{tlogColHits10, func(r *TrainLogRow) *float64 { return &r.Hits10 }},
	{tlogColElapsed, func(r *TrainLogRow) *float64 { return &r.ElapsedS }},
}

func (m *TrainLogMeta) check(name string) error {
	switch {
	case m.Dataset == "":
		return fmt.Errorf("%s: train-log metadata: empty dataset", name)
	case m.Model == "":
		return fmt.Errorf("%s: train-log metadata: empty model", name)
	case !json.Valid([]byte(m.Config)):
		return fmt.Errorf("%s: train-log metadata: config is not valid JSON", name)
	case !json.Valid([]byte(m.Timings)):
		return fmt.Errorf("%s: train-log metadata: timings is not valid JSON", name)
	case m.Best != "" && !json.Valid([]byte(m.Best)):
		return fmt.Errorf("%s: train-log metadata: best is not valid JSON", name)
	case m.EarlyStop != "" && !json.Valid([]byte(m.EarlyStop)):
		return fmt.Errorf("%s: train-log metadata: early_stop is not valid JSON", name)
	}
	return nil
}

func tlogCheckRow(r *TrainLogRow) error {
	switch {
	case r.Step < 0:
		return fmt.Errorf("negative step %d", r.Step)
	case r.Kind != LogTrain && r.Kind != LogValid:
		return fmt.Errorf("kind %q, want train or valid", r.Kind)
	case r.Kind == LogValid && r.Type == "":
		return fmt.Errorf("valid row without a type")
	case r.Queries < 0:
		return fmt.Errorf("negative queries %d", r.Queries)
	}
	return nil
}

// WriteTrainLog writes a train log at path, atomically (or as a stream on stdout for
// "-"). On any error nothing new is left at path.
func WriteTrainLog(path string, meta TrainLogMeta, rows []TrainLogRow) error {
	name := displayName(path, "stdout")
	if err := meta.check(name); err != nil {
		return err
	}
	for i := range rows {
		if err := tlogCheckRow(&rows[i]); err != nil {
			return fmt.Errorf("%s: row %d: %w", name, i, err)
		}
	}
	values := map[string]string{
		"dataset":            meta.Dataset,
		"model":              meta.Model,
		"config":             meta.Config,
		"timings":            meta.Timings,
		MetaKG:               meta.KGDigest,
		MetaTrainFingerprint: meta.TrainFingerprint,
	}
	if meta.Best != "" {
		values["best"] = meta.Best
	}
	if meta.EarlyStop != "" {
		values["early_stop"] = meta.EarlyStop
	}
	schema := trainLogSpec.schema(values)
	w, err := createRecords(path, schema)
	if err != nil {
		return err
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	for start := 0; start < len(rows) || start == 0; start += maxBatchRows {
		end := min(start+maxBatchRows, len(rows))
		for i := start; i < end; i++ {
			r := &rows[i]
			rb.Field(tlogColStep).(*array.Int64Builder).Append(r.Step)
			rb.Field(tlogColKind).(*array.StringBuilder).Append(r.Kind)
			rb.Field(tlogColType).(*array.StringBuilder).Append(r.Type)
			for _, f := range tlogFloats {
				rb.Field(f.col).(*array.Float64Builder).Append(*f.field(r))
			}
			rb.Field(tlogColQueries).(*array.Int64Builder).Append(r.Queries)
		}
		rec := rb.NewRecord()
		err := w.write(rec)
		rec.Release()
		if err != nil {
			w.abort()
			return err
		}
		if end == len(rows) {
			break
		}
	}
	return w.close()
}

// ReadTrainLog reads the train log at path ("-" for stdin) and checks it against the
// contract.
func ReadTrainLog(path string) (TrainLogMeta, []TrainLogRow, error) {
	r, err := Open(path)
	if err != nil {
		return TrainLogMeta{}, nil, err
	}
	defer r.Close()
	var meta TrainLogMeta
	if err := trainLogSpec.check(r.name, r.Schema()); err != nil {
		return meta, nil, err
	}
	md := r.Schema().Metadata()
	for _, kv := range []struct {
		key string
		dst *string
	}{{"dataset", &meta.Dataset}, {"model", &meta.Model}, {"config", &meta.Config}, {"timings", &meta.Timings},
		{MetaKG, &meta.KGDigest}, {MetaTrainFingerprint, &meta.TrainFingerprint}} {
		if *kv.dst, err = metaString(r.name, md, kv.key); err != nil {
			return meta, nil, err
		}
	}
	meta.Best, _ = md.GetValue("best")            // optional: absent without a best metric
	meta.EarlyStop, _ = md.GetValue("early_stop") // optional: absent unless stopped early
	if err := meta.check(r.name); err != nil {
		return meta, nil, err
	}
	var rows []TrainLogRow
	for r.Next() {
		rec := r.Record()
		first := int64(len(rows))
		for i, col := range rec.Columns() {
			if err := checkNoNulls(r.name, trainLogSpec.fields[i].Name, col, first); err != nil {
				return meta, nil, err
			}
		}
		kinds, err := stringValues(r.name, "kind", rec.Column(tlogColKind).(*array.String))
		if err != nil {
			return meta, nil, err
		}
		types, err := stringValues(r.name, "type", rec.Column(tlogColType).(*array.String))
		if err != nil {
			return meta, nil, err
		}
		steps := rec.Column(tlogColStep).(*array.Int64)
		queries := rec.Column(tlogColQueries).(*array.Int64)
		strs := interner{}
		for k := 0; k < int(rec.NumRows()); k++ {
			row := TrainLogRow{
				Step:    steps.Value(k),
				Kind:    strs.get(kinds.Value(k)),
				Type:    strs.get(types.Value(k)),
				Queries: queries.Value(k),
			}
			for _, f := range tlogFloats {
				*f.field(&row) = rec.Column(f.col).(*array.Float64).Value(k)
			}
			if err := tlogCheckRow(&row); err != nil {
				return meta, nil, fmt.Errorf("%s: row %d: %w", r.name, first+int64(k), err)
			}
			rows = append(rows, row)
		}
	}
	if err := r.Err(); err != nil {
		return meta, nil, err
	}
	return meta, rows, nil
}
