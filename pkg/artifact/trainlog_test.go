package artifact

import (
	"math"
	"path/filepath"
	"testing"
)

// TestTrainLogChecks: WriteTrainLog refuses metadata and rows that break the contract,
// naming the file (and the row), and accepts the bounds: step and queries 0, best and
// early_stop absent or valid JSON. What it accepts reads back.
func TestTrainLogChecks(t *testing.T) {
	meta := func(edit func(m *TrainLogMeta)) TrainLogMeta {
		m := TrainLogMeta{Dataset: "tiny", Model: "rocone", Config: `{}`, Timings: `{"step":1}`}
		edit(&m)
		return m
	}
	nan := math.NaN()
	train := TrainLogRow{Kind: LogTrain, Loss: 1, LossPath: nan, LossOther: nan, MRR: nan, Hits1: nan, Hits3: nan, Hits10: nan}
	row := func(edit func(r *TrainLogRow)) TrainLogRow {
		r := train
		edit(&r)
		return r
	}
	keep := func(*TrainLogMeta) {}
	for _, tc := range []struct {
		name string
		meta TrainLogMeta
		row  TrainLogRow
		want string // "" when accepted
	}{
		{"bounds", meta(keep), row(func(r *TrainLogRow) { r.Step, r.Queries = 0, 0 }), ""},
		{"best and early_stop", meta(func(m *TrainLogMeta) { m.Best, m.EarlyStop = `{"step":3}`, `{"patience":2}` }), train, ""},
		{"valid row", meta(keep), row(func(r *TrainLogRow) { r.Kind, r.Type, r.Queries = LogValid, "AVG", 1 }), ""},
		{"empty model", meta(func(m *TrainLogMeta) { m.Model = "" }), train, "train-log metadata: empty model"},
		{"empty dataset", meta(func(m *TrainLogMeta) { m.Dataset = "" }), train, "train-log metadata: empty dataset"},
		{"timings", meta(func(m *TrainLogMeta) { m.Timings = "" }), train, "train-log metadata: timings is not valid JSON"},
		{"best", meta(func(m *TrainLogMeta) { m.Best = "{" }), train, "train-log metadata: best is not valid JSON"},
		{"early_stop", meta(func(m *TrainLogMeta) { m.EarlyStop = "[" }), train, "train-log metadata: early_stop is not valid JSON"},
		{"negative step", meta(keep), row(func(r *TrainLogRow) { r.Step = -1 }), "row 0: negative step -1"},
		{"negative queries", meta(keep), row(func(r *TrainLogRow) { r.Queries = -1 }), "row 0: negative queries -1"},
		{"kind", meta(keep), row(func(r *TrainLogRow) { r.Kind = "test" }), `row 0: kind "test", want train or valid`},
		{"valid without type", meta(keep), row(func(r *TrainLogRow) { r.Kind = LogValid }), "row 0: valid row without a type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.arrow")
			err := WriteTrainLog(path, tc.meta, []TrainLogRow{tc.row})
			if writeRefused(t, path, err, tc.want) {
				return
			}
			gotMeta, rows, err := ReadTrainLog(path)
			if err != nil {
				t.Fatal(err)
			}
			if gotMeta != tc.meta {
				t.Errorf("metadata %+v, want %+v", gotMeta, tc.meta)
			}
			if len(rows) != 1 || rows[0].Step != tc.row.Step || rows[0].Kind != tc.row.Kind || rows[0].Type != tc.row.Type || rows[0].Queries != tc.row.Queries {
				t.Errorf("rows %+v, want [%+v]", rows, tc.row)
			}
		})
	}
}
