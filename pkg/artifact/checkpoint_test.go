package artifact

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func ckptTestCheckpoint() *Checkpoint {
	meta := CheckpointMeta{
		Model: "rocone", Dim: 3, Dataset: "tiny", NumEntities: 4, NumRelations: 2,
		Step: 17, LR: 5e-5 / 5 / 5, WarmUpSteps: 337500.0 / 1.5 * 1.5 * 1.1, AdamStep: 9,
		Config: `{"dim":3}`, ModelConfig: `{"Dim":3}`, State: `{"rng":"AAEC"}`,
	}
	ent := []float32{0.1, -0.2, 0.3, 1e-30, float32(math.Inf(1)), -0, 7, 8, 9, 10, 11, 12}
	mod := []float32{0.0125}
	c := &Checkpoint{Meta: meta}
	for _, role := range []string{RoleParam, RoleAdamM, RoleAdamV} {
		c.Tensors = append(c.Tensors,
			Tensor{Name: "entity", Role: role, Shape: []int64{4, 3}, Values: slices.Clone(ent)},
			Tensor{Name: "modulus", Role: role, Shape: []int64{1, 1}, Values: slices.Clone(mod)})
		ent[0] += 1
	}
	c.Tensors = append(c.Tensors, Tensor{Name: "empty", Role: RoleParam, Shape: []int64{0, 3}, Values: []float32{}})
	return c
}

func ckptSame(t *testing.T, got, want *Checkpoint) {
	t.Helper()
	if got.Meta != want.Meta {
		t.Fatalf("metadata\n%+v, want\n%+v", got.Meta, want.Meta)
	}
	if len(got.Tensors) != len(want.Tensors) {
		t.Fatalf("%d tensors, want %d", len(got.Tensors), len(want.Tensors))
	}
	for i := range want.Tensors {
		g, w := got.Tensors[i], want.Tensors[i]
		if g.Name != w.Name || g.Role != w.Role || !slices.Equal(g.Shape, w.Shape) || len(g.Values) != len(w.Values) {
			t.Fatalf("tensor %d: %+v, want %+v", i, g, w)
		}
		for j := range w.Values {
			if math.Float32bits(g.Values[j]) != math.Float32bits(w.Values[j]) {
				t.Fatalf("tensor %s (%s)[%d] = %v, want %v", w.Name, w.Role, j, g.Values[j], w.Values[j])
			}
		}
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ck.arrow")
	want := ckptTestCheckpoint()
	if err := WriteCheckpoint(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	ckptSame(t, got, want)
	meta, err := ReadCheckpointMeta(path)
	if err != nil || meta != want.Meta {
		t.Fatalf("ReadCheckpointMeta: %v %+v", err, meta)
	}
	if tn := got.Tensor("modulus", RoleAdamV); tn == nil || tn.Values[0] != 0.0125 {
		t.Errorf("Tensor(modulus, adam_v) = %+v", tn)
	}
	if got.Tensor("modulus", "grad") != nil {
		t.Error("Tensor found an unknown role")
	}
	// Only the destination is left: the temporary file is gone.
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("directory holds %d entries", len(es))
	}
}

func TestCheckpointWriteChecks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ck.arrow")
	good := ckptTestCheckpoint()
	if err := WriteCheckpoint(path, good); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	for _, tc := range []struct {
		name string
		edit func(c *Checkpoint)
		want string
	}{
		{"shape", func(c *Checkpoint) { c.Tensors[0].Shape = []int64{3, 3} }, "holds 9 values, got 12"},
		{"negative dim", func(c *Checkpoint) { c.Tensors[1].Shape = []int64{-1, -1} }, "negative dimension"},
		{"duplicate", func(c *Checkpoint) { c.Tensors[2].Name = "entity"; c.Tensors[2].Role = RoleParam }, "twice"},
		{"role", func(c *Checkpoint) { c.Tensors[0].Role = "grad" }, "unknown role"},
		{"moment without param", func(c *Checkpoint) { c.Tensors[2].Name = "other" }, "no param"},
		{"moment shape", func(c *Checkpoint) { c.Tensors[2].Shape = []int64{3, 4} }, "differs from the param's"},
		{"empty name", func(c *Checkpoint) { c.Tensors[0].Name = "" }, "empty name"},
		{"model", func(c *Checkpoint) { c.Meta.Model = "" }, "empty model"},
		{"lr", func(c *Checkpoint) { c.Meta.LR = math.NaN() }, "lr"},
		{"json", func(c *Checkpoint) { c.Meta.State = "{" }, "state is not valid JSON"},
		{"sizes", func(c *Checkpoint) { c.Meta.NumEntities = 0 }, "must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ckptTestCheckpoint()
			tc.edit(c)
			err := WriteCheckpoint(path, c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if now, _ := os.ReadFile(path); string(now) != string(before) {
				t.Error("a failed write changed the file")
			}
			if es, _ := os.ReadDir(dir); len(es) != 1 {
				t.Errorf("a failed write left %d entries", len(es))
			}
		})
	}
}

// ckptWriteRaw writes a checkpoint without WriteCheckpoint's checks.
func ckptWriteRaw(t *testing.T, path string, c *Checkpoint) {
	t.Helper()
	schema := checkpointSpec.schema(c.Meta.metadata())
	w, err := createRecords(path, schema)
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Tensors {
		rec := ckptRecord(schema, &c.Tensors[i])
		if err := w.write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
}

// TestReadCheckpointParams: the parameters alone, as written, and no moment.
func TestReadCheckpointParams(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ck.arrow")
	full := ckptTestCheckpoint()
	if err := WriteCheckpoint(path, full); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCheckpointParams(path)
	if err != nil {
		t.Fatal(err)
	}
	want := &Checkpoint{Meta: full.Meta}
	for _, ten := range full.Tensors {
		if ten.Role == RoleParam {
			want.Tensors = append(want.Tensors, ten)
		}
	}
	ckptSame(t, got, want)
}

func TestCheckpointReadErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.arrow")
	if err := WriteCheckpoint(good, ckptTestCheckpoint()); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(good)
	truncated := filepath.Join(dir, "truncated.arrow")
	os.WriteFile(truncated, data[:len(data)-100], 0o644)

	queries := filepath.Join(dir, "queries.arrow")
	if err := WriteQueries(queries, QueriesMeta{Split: "train", Dataset: "tiny", NumEntities: 4, NumRelations: 2},
		[]Query{{ID: 0, Type: "1p", Structure: "('e',('r',))", Anchors: []int32{1}, Relations: []int32{0}, Easy: []int32{}, Hard: []int32{2}}}); err != nil {
		t.Fatal(err)
	}
	badShape := filepath.Join(dir, "shape.arrow")
	c := ckptTestCheckpoint()
	c.Tensors[0].Shape = []int64{5, 3}
	ckptWriteRaw(t, badShape, c)
	badMoment := filepath.Join(dir, "moment.arrow")
	c = ckptTestCheckpoint()
	c.Tensors = c.Tensors[1:] // adam_m of entity without its param
	ckptWriteRaw(t, badMoment, c)
	badMeta := filepath.Join(dir, "meta.arrow")
	c = ckptTestCheckpoint()
	c.Meta.Dim = 0
	ckptWriteRaw(t, badMeta, c)
	// A moment whose values do not fill its shape: ReadCheckpointParams, which drops the
	// moments, must still refuse it.
	shortMoment := filepath.Join(dir, "short-moment.arrow")
	c = ckptTestCheckpoint()
	c.Tensors[2].Values = c.Tensors[2].Values[:11]
	ckptWriteRaw(t, shortMoment, c)
	momentShape := filepath.Join(dir, "moment-shape.arrow")
	c = ckptTestCheckpoint()
	c.Tensors[3].Shape, c.Tensors[3].Values = []int64{1, 2}, []float32{1, 2}
	ckptWriteRaw(t, momentShape, c)

	for _, tc := range []struct{ path, want string }{
		{truncated, "truncated"},
		{queries, `artifact is "queries", want "checkpoint"`},
		{badShape, "holds 15 values, got 12"},
		{badMoment, "no param"},
		{badMeta, "dim 0 is not positive"},
		{shortMoment, "entity (adam_m): shape [4 3] holds 12 values, got 11"},
		{momentShape, "modulus: adam_m shape [1 2] differs from the param's [1 1]"},
		{filepath.Join(dir, "missing.arrow"), "no such file"},
	} {
		for _, read := range []struct {
			name string
			f    func(string) (*Checkpoint, error)
		}{{"ReadCheckpoint", ReadCheckpoint}, {"ReadCheckpointParams", ReadCheckpointParams}} {
			_, err := read.f(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s(%s): error %v, want %q", read.name, filepath.Base(tc.path), err, tc.want)
			}
		}
	}
	if _, err := ReadCheckpointMeta(queries); err == nil {
		t.Error("ReadCheckpointMeta read a queries file")
	}
}

func tlogTestRows(n int) []TrainLogRow {
	var rows []TrainLogRow
	nan := math.NaN()
	for i := 0; i < n; i++ {
		rows = append(rows, TrainLogRow{Step: int64(i), Kind: LogTrain, LR: 1e-4, Loss: float64(i) / 3,
			LossPath: 0.5, LossOther: nan, MRR: nan, Hits1: nan, Hits3: nan, Hits10: nan, ElapsedS: float64(i)})
		if i%1000 == 999 {
			rows = append(rows, TrainLogRow{Step: int64(i), Kind: LogValid, Type: "AVG", LR: 1e-4, Loss: nan,
				LossPath: nan, LossOther: nan, MRR: 0.25, Hits1: 0.1, Hits3: 0.3, Hits10: 0.5, Queries: 42})
		}
	}
	return rows
}

func TestTrainLogRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.arrow")
	meta := TrainLogMeta{Dataset: "tiny", Model: "rocone", Config: `{"dim":8}`, Timings: `{"total":1.5}`}
	for _, n := range []int{0, 3, maxBatchRows + 5} {
		rows := tlogTestRows(n)
		if n == 3 { // the optional keys of keep-best and early stopping
			meta.Best, meta.EarlyStop = `{"metric":"mrr:epfo","step":2,"value":0.25,"since":0}`, `{"step":2,"patience":1}`
		} else {
			meta.Best, meta.EarlyStop = "", ""
		}
		if err := WriteTrainLog(path, meta, rows); err != nil {
			t.Fatal(err)
		}
		gotMeta, got, err := ReadTrainLog(path)
		if err != nil {
			t.Fatal(err)
		}
		if gotMeta != meta || len(got) != len(rows) {
			t.Fatalf("n=%d: %+v, %d rows", n, gotMeta, len(got))
		}
		for i := range rows {
			a, b := got[i], rows[i]
			same := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
			if a.Step != b.Step || a.Kind != b.Kind || a.Type != b.Type || a.Queries != b.Queries || !same(a.LR, b.LR) ||
				!same(a.Loss, b.Loss) || !same(a.LossPath, b.LossPath) || !same(a.LossOther, b.LossOther) ||
				!same(a.MRR, b.MRR) || !same(a.Hits10, b.Hits10) || !same(a.ElapsedS, b.ElapsedS) {
				t.Fatalf("row %d: %+v, want %+v", i, a, b)
			}
		}
	}
}

func TestTrainLogErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log.arrow")
	meta := TrainLogMeta{Dataset: "tiny", Model: "rocone", Config: `{}`, Timings: `{}`}
	for _, tc := range []struct {
		meta TrainLogMeta
		row  TrainLogRow
		want string
	}{
		{meta, TrainLogRow{Step: -1, Kind: LogTrain}, "negative step"},
		{meta, TrainLogRow{Kind: "test"}, `kind "test"`},
		{meta, TrainLogRow{Kind: LogValid}, "without a type"},
		{TrainLogMeta{Model: "rocone", Config: "{}", Timings: "{}"}, TrainLogRow{Kind: LogTrain}, "empty dataset"},
		{TrainLogMeta{Dataset: "x", Model: "rocone", Config: "{", Timings: "{}"}, TrainLogRow{Kind: LogTrain}, "config is not valid JSON"},
		{TrainLogMeta{Dataset: "x", Model: "rocone", Config: "{}", Timings: "{}", Best: "{"}, TrainLogRow{Kind: LogTrain}, "best is not valid JSON"},
		{TrainLogMeta{Dataset: "x", Model: "rocone", Config: "{}", Timings: "{}", EarlyStop: "x"}, TrainLogRow{Kind: LogTrain}, "early_stop is not valid JSON"},
	} {
		err := WriteTrainLog(path, tc.meta, []TrainLogRow{tc.row})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("failed writes left %d entries", len(es))
	}
	ck := filepath.Join(dir, "ck.arrow")
	if err := WriteCheckpoint(ck, ckptTestCheckpoint()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadTrainLog(ck); err == nil || !strings.Contains(err.Error(), `want "train-log"`) {
		t.Errorf("reading a checkpoint as a log: %v", err)
	}
}

// TestCheckpointMetaBounds checks each bound of the checkpoint metadata on both sides: the
// smallest value accepted and the nearest one refused, with the error naming the file and
// the field. The readers check the same metadata (checkpointMeta), so what a writer
// refuses is never read either.
func TestCheckpointMetaBounds(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, tc := range []struct {
		name string
		edit func(m *CheckpointMeta)
		want string // "" when the metadata is accepted
		read string // the readers' error, when not want
	}{
		{"dim 1", func(m *CheckpointMeta) { m.Dim = 1 }, "", ""},
		{"dim 0", func(m *CheckpointMeta) { m.Dim = 0 }, "checkpoint metadata: dim 0 is not positive", ""},
		{"empty dataset", func(m *CheckpointMeta) { m.Dataset = "" }, "checkpoint metadata: empty dataset", ""},
		{"one entity, one relation", func(m *CheckpointMeta) { m.NumEntities, m.NumRelations = 1, 1 }, "", ""},
		{"no relations", func(m *CheckpointMeta) { m.NumRelations = 0 }, "checkpoint metadata: num_entities 4 and num_relations 0 must be positive", ""},
		{"no entities", func(m *CheckpointMeta) { m.NumEntities = 0 }, "checkpoint metadata: num_entities 0 and num_relations 2 must be positive", ""},
		{"steps 0", func(m *CheckpointMeta) { m.Step, m.AdamStep = 0, 0 }, "", ""},
		{"negative step", func(m *CheckpointMeta) { m.Step = -1 }, "checkpoint metadata: negative step or adam_step", `schema metadata step="-1" is not a count`},
		{"negative adam_step", func(m *CheckpointMeta) { m.AdamStep = -1 }, "checkpoint metadata: negative step or adam_step", `schema metadata adam_step="-1" is not a count`},
		{"lr 0", func(m *CheckpointMeta) { m.LR = 0 }, "", ""},
		{"negative lr", func(m *CheckpointMeta) { m.LR = -1e-9 }, "checkpoint metadata: lr -1e-09 is not a non-negative number", ""},
		{"infinite lr", func(m *CheckpointMeta) { m.LR = inf }, "checkpoint metadata: lr +Inf is not a non-negative number", ""},
		{"negative warm_up_steps", func(m *CheckpointMeta) { m.WarmUpSteps = -3 }, "", ""},
		{"NaN warm_up_steps", func(m *CheckpointMeta) { m.WarmUpSteps = nan }, "checkpoint metadata: warm_up_steps NaN is not a number", ""},
		{"infinite warm_up_steps", func(m *CheckpointMeta) { m.WarmUpSteps = -inf }, "checkpoint metadata: warm_up_steps -Inf is not a number", ""},
		{"config", func(m *CheckpointMeta) { m.Config = "{" }, "checkpoint metadata: config is not valid JSON", ""},
		{"model_config", func(m *CheckpointMeta) { m.ModelConfig = "" }, "checkpoint metadata: model_config is not valid JSON", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ck.arrow")
			c := ckptTestCheckpoint()
			tc.edit(&c.Meta)
			err := WriteCheckpoint(path, c)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("WriteCheckpoint: %v", err)
				}
				got, err := ReadCheckpointMeta(path)
				if err != nil {
					t.Fatalf("ReadCheckpointMeta: %v", err)
				}
				if got != c.Meta {
					t.Errorf("read metadata\n%+v, want\n%+v", got, c.Meta)
				}
				return
			}
			if want := path + ": " + tc.want; err == nil || err.Error() != want {
				t.Errorf("WriteCheckpoint: err = %v\nwant %s", err, want)
			}
			ckptWriteRaw(t, path, c)
			want := path + ": " + tc.want
			if tc.read != "" {
				want = path + ": " + tc.read
			}
			if _, err := ReadCheckpointMeta(path); err == nil || err.Error() != want {
				t.Errorf("ReadCheckpointMeta: err = %v\nwant %s", err, want)
			}
		})
	}
}

// TestCheckpointShapeBounds checks the shape of a tensor against its values where the
// product of the dimensions nears or passes the int64 range: a product that fits is
// compared with the count of values, one that does not is refused as too large rather
// than wrapping around to a count that might match.
func TestCheckpointShapeBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shape []int64
		want  string
	}{
		{"largest dimension", []int64{math.MaxInt64}, "tensor modulus (param): shape [9223372036854775807] holds 9223372036854775807 values, got 1"},
		{"largest product", []int64{1, math.MaxInt64}, "tensor modulus (param): shape [1 9223372036854775807] holds 9223372036854775807 values, got 1"},
		{"overflow", []int64{2, 1 << 62}, "tensor modulus (param): shape [2 4611686018427387904] too large"},
		{"overflow wrapping to 0", []int64{1 << 32, 1 << 32}, "tensor modulus (param): shape [4294967296 4294967296] too large"},
		{"zero after overflow", []int64{1 << 62, 4, 0}, "tensor modulus (param): shape [4611686018427387904 4 0] too large"},
		{"negative", []int64{1, -1}, "tensor modulus (param): negative dimension in shape [1 -1]"},
		{"scalar", []int64{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ck.arrow")
			c := ckptTestCheckpoint()
			c.Tensors = slices.DeleteFunc(c.Tensors, func(t Tensor) bool { return t.Name == "modulus" && t.Role != RoleParam })
			c.Tensors[1].Shape = tc.shape
			err := WriteCheckpoint(path, c)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("WriteCheckpoint: %v", err)
				}
				got, err := ReadCheckpoint(path)
				if err != nil {
					t.Fatalf("ReadCheckpoint: %v", err)
				}
				ckptSame(t, got, c)
				return
			}
			if want := path + ": " + tc.want; err == nil || err.Error() != want {
				t.Errorf("WriteCheckpoint: err = %v\nwant %s", err, want)
			}
			ckptWriteRaw(t, path, c)
			if _, err := ReadCheckpoint(path); err == nil || err.Error() != path+": "+tc.want {
				t.Errorf("ReadCheckpoint: err = %v\nwant %s", err, path+": "+tc.want)
			}
		})
	}
}
