package artifact

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// MetricsMeta is the schema metadata of a metrics artifact.
type MetricsMeta struct {
	Dataset   string
	Model     string
	Split     string
	Runs      []string // the ranks artifacts aggregated, one per seed
	Resamples int      // bootstrap resamples behind lo/hi
	Level     float64  // the interval's confidence level, e.g. 0.95
	// The identity of the one training run behind the metrics, from its ranks file; empty
	// when the artifact aggregates several seeds (or was written before it was recorded).
	// `metrics results` rebuilds the seeds rule from them.
	Queries        string // the ranked queries' content digest
	TrainConfig    string // the checkpoint's training configuration, JSON
	Seed           string // the training seed
	CheckpointHash string // SHA-256 of the checkpoint
	// KGDigest and TrainFingerprint are the lineage every run aggregated shares (metrics
	// refuses runs of other KGs or train files).
	KGDigest         string
	TrainFingerprint string
}

// singleRunKeys are the optional metadata keys of a metrics artifact made from one run.
func (m *MetricsMeta) singleRunKeys() map[string]*string {
	return map[string]*string{"queries_digest": &m.Queries, "train_config": &m.TrainConfig, "seed": &m.Seed,
		"checkpoint_sha256": &m.CheckpointHash}
}

// MetricStat is one metric's summary: the mean over seeds, the standard deviation across
// seeds (0 with one seed) and the bootstrap interval over queries. Values are fractions
// (MRR 0.42, not 42).
type MetricStat struct{ Mean, Std, Lo, Hi float64 }

// MetricsRow is one row: a query type, or a group average ("EPFO", "negation").
type MetricsRow struct {
	Kind    string // "type" or "average"
	Name    string
	Queries int64
	Seeds   int32
	MRR     MetricStat
	H1      MetricStat
	H3      MetricStat
	H10     MetricStat
}

var metricNames = []string{"mrr", "h1", "h3", "h10"}

func metricsSpec() *spec {
	fields := []arrow.Field{
		{Name: "kind", Type: arrow.BinaryTypes.String},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "queries", Type: arrow.PrimitiveTypes.Int64},
		{Name: "seeds", Type: arrow.PrimitiveTypes.Int32},
	}
	for _, m := range metricNames {
		for _, s := range []string{"mean", "std", "lo", "hi"} {
			fields = append(fields, arrow.Field{Name: m + "_" + s, Type: arrow.PrimitiveTypes.Float64})
		}
	}
	return &spec{kind: "metrics", version: 1, fields: fields}
}

func (r *MetricsRow) stats() [4]*MetricStat { return [4]*MetricStat{&r.MRR, &r.H1, &r.H3, &r.H10} }

// WriteMetrics writes a metrics artifact at path ("-" for stdout).
func WriteMetrics(path string, meta MetricsMeta, rows []MetricsRow) error {
	md := map[string]string{
		"dataset": meta.Dataset, "model": meta.Model, "split": meta.Split, "runs": strings.Join(meta.Runs, "\n"),
		"resamples": strconv.Itoa(meta.Resamples), "level": strconv.FormatFloat(meta.Level, 'g', -1, 64),
		MetaKG: meta.KGDigest, MetaTrainFingerprint: meta.TrainFingerprint,
	}
	for key, v := range meta.singleRunKeys() {
		if *v != "" {
			md[key] = *v
		}
	}
	t, err := createTable(path, metricsSpec(), md)
	if err != nil {
		return err
	}
	defer t.abort()
	for i := range rows {
		r := &rows[i]
		t.field(0).(*array.StringBuilder).Append(r.Kind)
		t.field(1).(*array.StringBuilder).Append(r.Name)
		t.field(2).(*array.Int64Builder).Append(r.Queries)
		t.field(3).(*array.Int32Builder).Append(r.Seeds)
		col := 4
		for _, st := range r.stats() {
			for _, v := range []float64{st.Mean, st.Std, st.Lo, st.Hi} {
				t.field(col).(*array.Float64Builder).Append(v)
				col++
			}
		}
		if err := t.rowDone(); err != nil {
			return err
		}
	}
	return t.close()
}

// ReadMetrics reads a metrics artifact ("-" for stdin).
func ReadMetrics(path string) (MetricsMeta, []MetricsRow, error) {
	var m MetricsMeta
	var rows []MetricsRow
	specFor := func(name string, md arrow.Metadata) (*spec, error) {
		if err := kindIs(name, md, "metrics"); err != nil {
			return nil, err
		}
		var runs, level string
		var err error
		for key, dst := range map[string]*string{"dataset": &m.Dataset, "model": &m.Model, "split": &m.Split, "runs": &runs, "level": &level,
			MetaKG: &m.KGDigest, MetaTrainFingerprint: &m.TrainFingerprint} {
			if *dst, err = metaString(name, md, key); err != nil {
				return nil, err
			}
		}
		m.Runs = strings.Split(runs, "\n")
		if m.Level, err = strconv.ParseFloat(level, 64); err != nil {
			return nil, fmt.Errorf("%s: schema metadata level=%q is not a number", name, level)
		}
		if m.Resamples, err = metaCount(name, md, "resamples"); err != nil {
			return nil, err
		}
		for key, dst := range m.singleRunKeys() {
			*dst, _ = md.GetValue(key)
		}
		return metricsSpec(), nil
	}
	err := readTable(path, specFor, func(rec arrow.Record, first int64) error {
		n := int(rec.NumRows())
		for i := 0; i < n; i++ {
			r := MetricsRow{
				Kind:    rec.Column(0).(*array.String).Value(i),
				Name:    rec.Column(1).(*array.String).Value(i),
				Queries: rec.Column(2).(*array.Int64).Value(i),
				Seeds:   rec.Column(3).(*array.Int32).Value(i),
			}
			col := 4
			for _, st := range r.stats() {
				vals := [4]*float64{&st.Mean, &st.Std, &st.Lo, &st.Hi}
				for _, v := range vals {
					*v = rec.Column(col).(*array.Float64).Value(i)
					col++
				}
			}
			if err := r.check(); err != nil {
				return fmt.Errorf("row %d (%s %s): %w", first+int64(i), r.Kind, r.Name, err)
			}
			rows = append(rows, r)
		}
		return nil
	})
	if err != nil {
		return MetricsMeta{}, nil, err
	}
	return m, rows, nil
}

// check is what a metrics row promises: a kind of type or average, a name, at least one
// seed, and each metric's mean, bounds and deviation fractions in [0, 1] (NaN where
// there is none: bounds without a bootstrap).
func (r *MetricsRow) check() error {
	switch {
	case r.Kind != "type" && r.Kind != "average":
		return fmt.Errorf("kind %q, want type or average", r.Kind)
	case r.Name == "":
		return fmt.Errorf("no name")
	case r.Seeds < 1:
		return fmt.Errorf("%d seeds", r.Seeds)
	case r.Queries < 0:
		return fmt.Errorf("%d queries", r.Queries)
	}
	for i, st := range r.stats() {
		for j, v := range []float64{st.Mean, st.Std, st.Lo, st.Hi} {
			if v == v && (v < 0 || v > 1) {
				return fmt.Errorf("%s_%s = %g is not a fraction", metricNames[i], []string{"mean", "std", "lo", "hi"}[j], v)
			}
		}
	}
	return nil
}
