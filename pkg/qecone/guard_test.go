package qecone

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nlpodyssey/gopickle/pytorch"
	"github.com/nlpodyssey/gopickle/types"

	"github.com/rocone/rocone/pkg/kg"
)

// TestCheckTorchFileStorage: a storage may declare from 0 up to as many elements as its
// record has bytes (the bound that keeps gopickle's allocation within the file's size);
// one more, a negative count, a storage without a record and a persistent id that is not
// a storage's are refused, naming the storage and the sizes.
func TestCheckTorchFileStorage(t *testing.T) {
	for _, c := range []struct {
		name, pickle, want string
	}{
		{"0 elements", storagePickle(0), ""},
		{"4 elements", storagePickle(4), ""},
		{"5 elements", storagePickle(5), `data.pkl: storage "0" declares 5 elements, but its record holds 4 bytes`},
		{"-1 elements", storagePickle(0xffffffff), `data.pkl: storage "0" declares -1 elements, but its record holds 4 bytes`},
		{"no record", strings.Replace(storagePickle(1), "X\x01\x00\x00\x000", "X\x01\x00\x00\x009", 1), `data.pkl: storage "9" has no zip record`},
		{"size not an int", strings.Replace(storagePickle(1), "J\x01\x00\x00\x00", "X\x01\x00\x00\x001", 1), "data.pkl: a storage without a key and a size"},
		{"not a tuple", "\x80\x02X\x01\x00\x00\x000Q.", "data.pkl: a persistent id that is not a storage tuple"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "checkpoint")
			if err := os.WriteFile(file, torchZip(t, c.pickle), 0o644); err != nil {
				t.Fatal(err)
			}
			err := checkTorchFile(file)
			if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// TestCheckTorchFileDeflateBound: a deflated record may declare up to 1032 times its
// compressed bytes (deflate's largest expansion); a record declaring more is refused
// before it is read, a stored one declaring more than the file holds likewise.
func TestCheckTorchFileDeflateBound(t *testing.T) {
	var comp bytes.Buffer
	fw, err := flate.NewWriter(&comp, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(make([]byte, 1<<16))
	fw.Close()
	raw := comp.Bytes()
	bound := 1032 * uint64(len(raw))
	for _, c := range []struct {
		name     string
		method   uint16
		declared uint64
		want     string
	}{
		// Within the bound the record is read, and its true size (64 KiB) differs.
		{"deflated at the bound", zip.Deflate, bound, fmt.Sprintf(`zip record "archive/data/1": 65536 bytes, but the archive records %d: the file is damaged or cut short`, bound)},
		{"deflated past the bound", zip.Deflate, bound + 1, fmt.Sprintf(`zip record "archive/data/1" declares %d bytes, more than the file can hold`, bound+1)},
		{"stored past the file", zip.Store, 1 << 20, `zip record "archive/data/1" declares 1048576 bytes, more than the file can hold`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			zw := zip.NewWriter(&buf)
			w, err := zw.CreateRaw(&zip.FileHeader{Name: "archive/data/1", Method: c.method,
				CompressedSize64: uint64(len(raw)), UncompressedSize64: c.declared})
			if err != nil {
				t.Fatal(err)
			}
			w.Write(raw)
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "checkpoint")
			if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := checkTorchFile(file); err == nil || err.Error() != c.want {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// TestPickLambda: λ from --lambda, from config.json's center_reg, or both when they
// agree; 0 is a valid weight; a negative, infinite or NaN one, a center_reg that is not a
// number, a disagreement and a missing λ are refused, naming where it came from.
func TestPickLambda(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name    string
		flag    *float64
		cfg     qeConfig
		cfgPath string
		want    float64
		err     string
	}{
		{"flag", f(0.3), qeConfig{}, "c.json", 0.3, ""},
		{"flag 0", f(0), qeConfig{}, "", 0, ""},
		{"config", nil, qeConfig{"center_reg": 0.5}, "c.json", 0.5, ""},
		{"config 0", nil, qeConfig{"center_reg": 0.0}, "c.json", 0, ""},
		{"both agree", f(0.5), qeConfig{"center_reg": 0.5}, "c.json", 0.5, ""},
		{"both disagree", f(0.4), qeConfig{"center_reg": 0.5}, "c.json", 0, "--lambda 0.4 disagrees with c.json's center_reg 0.5"},
		{"negative flag", f(-0.1), qeConfig{"center_reg": 0.5}, "c.json", 0, "--lambda -0.1: λ (ConE's center_reg, the weight of the inside distance) must be a finite number ≥ 0"},
		{"infinite config", nil, qeConfig{"center_reg": math.Inf(1)}, "c.json", 0, "c.json's center_reg +Inf: λ (the weight of the inside distance) must be a finite number ≥ 0"},
		{"config not a number", f(0.5), qeConfig{"center_reg": "0.5"}, "c.json", 0, "c.json's center_reg is 0.5, not a number"},
		{"no config file", nil, qeConfig{}, "", 0, "λ (ConE's center_reg) is not in a QE-ConE checkpoint: give --lambda, or --config with QE-ConE's config.json"},
		{"config without center_reg", nil, qeConfig{"gamma": 2.0}, "c.json", 0, "c.json has no center_reg: give --lambda"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := pickLambda(c.flag, c.cfg, c.cfgPath)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("= %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

// TestImportDataset: the artifact's dataset name is --dataset, else the KG's name, else
// config.json's data_path's last element, else "qecone"; a KG of other sizes is refused
// (not the model's KG), as is a name that cannot head a table, naming where it came from.
func TestImportDataset(t *testing.T) {
	ck := filepath.Join(checkpointDir, "checkpoint")
	lambda := 0.5
	good := &kg.Dataset{Name: "from-kg", Dir: "data/from-kg", NumEntities: 300, NumRelations: 20}
	config := func(t *testing.T, dataPath any) string {
		return fixtureConfig(t, func(m map[string]any) {
			if dataPath == nil {
				delete(m, "data_path")
			} else {
				m["data_path"] = dataPath
			}
		})
	}
	for _, c := range []struct {
		name     string
		dataset  string
		kg       *kg.Dataset
		dataPath any // nil: no data_path
		want     string
		err      string
	}{
		{"flag", "mine", good, "data/FB15k-237-betae", "mine", ""},
		{"kg", "", good, "data/FB15k-237-betae", "from-kg", ""},
		{"data_path", "", nil, "data/FB15k-237-betae/", "FB15k-237-betae", ""},
		{"empty data_path", "", nil, "", "qecone", ""},
		{"data_path not a string", "", nil, 7.0, "qecone", ""},
		{"no data_path", "", nil, nil, "qecone", ""},
		{"bad flag", "a|b", nil, "x", "", `--dataset "a|b": the dataset name holds '|', which would break the Markdown tables it heads`},
		{"bad data_path", "", nil, "data/a|b", "", ck + `: dataset name "a|b" (from --data or config.json's data_path): the dataset name holds '|', which would break the Markdown tables it heads; name it with --dataset`},
		{"kg entities", "", &kg.Dataset{Dir: "data/other", NumEntities: 301, NumRelations: 20}, "x", "", ck + ": 300 entities and 20 relations, but the KG data/other has 301 and 20: not the KG the model was trained on"},
		{"kg relations", "", &kg.Dataset{Dir: "data/other", NumEntities: 300, NumRelations: 22}, "x", "", ck + ": 300 entities and 20 relations, but the KG data/other has 300 and 22: not the KG the model was trained on"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Import(ImportOptions{Checkpoint: ck, Config: config(t, c.dataPath), Lambda: &lambda, Dataset: c.dataset, KG: c.kg})
			if expectErr(t, err, c.err) {
				return
			}
			if got.Meta.Dataset != c.want {
				t.Errorf("dataset %q, want %q", got.Meta.Dataset, c.want)
			}
			if wantDigest := map[bool]string{true: good.Digest(), false: ""}[c.kg != nil]; got.Meta.KGDigest != wantDigest {
				t.Errorf("KG digest %q, want %q", got.Meta.KGDigest, wantDigest)
			}
			if !strings.Contains(got.Meta.Config, fmt.Sprintf(`"dataset":%q`, c.want)) {
				t.Errorf("config %s does not name the dataset %q", got.Meta.Config, c.want)
			}
		})
	}
}

// TestArrayUnmarshal: a fixture array decodes exactly; a negative dimension, a byte count
// that is not the shape's, bad base64 and bad JSON are refused.
func TestArrayUnmarshal(t *testing.T) {
	for _, c := range []struct {
		name, json string
		want       Array
		err        string
	}{
		{"2x1", `{"shape": [2, 1], "f32": "AACAPwAAAMA="}`, Array{Shape: []int{2, 1}, Values: []float32{1, -2}}, ""},
		{"empty", `{"shape": [0, 3], "f32": ""}`, Array{Shape: []int{0, 3}, Values: []float32{}}, ""},
		{"scalar", `{"shape": [], "f32": "AADAfw=="}`, Array{Shape: []int{}, Values: []float32{float32(math.NaN())}}, ""},
		{"negative", `{"shape": [-1, -4], "f32": "AACAPw=="}`, Array{}, "negative dimension in shape [-1 -4]"},
		{"short", `{"shape": [2], "f32": "AACAPw=="}`, Array{}, "shape [2] needs 2 float32 values, the data holds 4 bytes"},
		{"base64", `{"shape": [1], "f32": "!!"}`, Array{}, "f32: illegal base64 data at input byte 0"},
		{"json", `{"shape": "x"}`, Array{}, "json: cannot unmarshal string into Go struct field .shape of type []int"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var a Array
			err := json.Unmarshal([]byte(c.json), &a)
			if expectErr(t, err, c.err) {
				return
			}
			if fmt.Sprint(a.Shape) != fmt.Sprint(c.want.Shape) || len(a.Values) != len(c.want.Values) {
				t.Fatalf("= %v %v, want %v %v", a.Shape, a.Values, c.want.Shape, c.want.Values)
			}
			for i := range a.Values {
				if math.Float32bits(a.Values[i]) != math.Float32bits(c.want.Values[i]) {
					t.Fatalf("value %d = %v, want %v", i, a.Values[i], c.want.Values[i])
				}
			}
		})
	}
}

// TestTensorValues: a contiguous float32 tensor's values are read from its offset; strides
// matter only when the tensor has more than one value; a view that is not contiguous, that
// overruns its storage or starts before it, and a tensor of another dtype are refused.
func TestTensorValues(t *testing.T) {
	storage := &pytorch.FloatStorage{Data: []float32{0, 1, 2, 3, 4, 5, 6}}
	for _, c := range []struct {
		name   string
		tensor any
		want   []float32
		err    string
	}{
		{"2x3 at 1", &pytorch.Tensor{Source: storage, StorageOffset: 1, Size: []int{2, 3}, Stride: []int{3, 1}}, []float32{1, 2, 3, 4, 5, 6}, ""},
		{"one value, any stride", &pytorch.Tensor{Source: storage, StorageOffset: 6, Size: []int{1, 1}, Stride: []int{7, 7}}, []float32{6}, ""},
		{"empty", &pytorch.Tensor{Source: storage, StorageOffset: 7, Size: []int{0}, Stride: []int{1}}, []float32{}, ""},
		{"transposed", &pytorch.Tensor{Source: storage, Size: []int{2, 3}, Stride: []int{1, 2}}, nil, "strides [1 2] for size [2 3]: not a contiguous tensor"},
		{"overrun", &pytorch.Tensor{Source: storage, StorageOffset: 2, Size: []int{6}, Stride: []int{1}}, nil, "size [6] at offset 2 overruns its storage of 7 values"},
		{"before", &pytorch.Tensor{Source: storage, StorageOffset: -1, Size: []int{2}, Stride: []int{1}}, nil, "size [2] at offset -1 overruns its storage of 7 values"},
		{"float64", &pytorch.Tensor{Source: &pytorch.DoubleStorage{Data: []float64{1}}, Size: []int{1}, Stride: []int{1}}, nil, "a torch.float64 tensor, not torch.float32"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, got, err := tensorValues(c.tensor)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("= %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

// TestImportSteps: the artifact's step counts the steps QE-ConE finished (its saved step
// index + 1), and a config.json without max_steps records that as the run's length.
func TestImportSteps(t *testing.T) {
	cfg := fixtureConfig(t, func(m map[string]any) { delete(m, "max_steps") })
	ck, err := Import(ImportOptions{Checkpoint: checkpointDir, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Step int64 `json:"qecone_step"`
	}
	var config struct {
		Steps int64 `json:"steps"`
	}
	if err := json.Unmarshal([]byte(ck.Meta.State), &state); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(ck.Meta.Config), &config); err != nil {
		t.Fatal(err)
	}
	if state.Step <= 0 || ck.Meta.Step != state.Step+1 || config.Steps != state.Step+1 {
		t.Fatalf("QE-ConE step %d: artifact step %d, config steps %d; want both %d", state.Step, ck.Meta.Step, config.Steps, state.Step+1)
	}
}

// TestAdamState: Adam's state_dict gives each trainable parameter's moments by key and the
// largest step; no optimizer_state_dict means no moments; a state keyed outside the
// trainable parameters, without a step or with moments of another size is refused.
func TestAdamState(t *testing.T) {
	vec := func(v ...float32) *pytorch.Tensor {
		return &pytorch.Tensor{Source: &pytorch.FloatStorage{Data: v}, Size: []int{len(v)}, Stride: []int{1}}
	}
	paramState := func(step any, m, v *pytorch.Tensor) *types.Dict {
		d := types.NewDict()
		if step != nil {
			d.Set("step", step)
		}
		d.Set("exp_avg", m)
		d.Set("exp_avg_sq", v)
		return d
	}
	top := func(state ...types.DictEntry) *types.Dict {
		st := types.Dict(state)
		osd := types.NewDict()
		osd.Set("state", &st)
		d := types.NewDict()
		d.Set("optimizer_state_dict", osd)
		return d
	}
	trainable := []string{"a", "b", "c"}
	byKey := map[string]*sdEntry{"a": {vals: make([]float32, 2)}, "b": {vals: make([]float32, 1)}, "c": {vals: make([]float32, 1)}}

	t.Run("moments and the largest step", func(t *testing.T) {
		step, out, err := adamState(top(
			types.DictEntry{Key: 0, Value: paramState(3, vec(1, 2), vec(3, 4))},
			types.DictEntry{Key: 1, Value: paramState(vec(7), vec(5), vec(6))},
		), trainable, byKey)
		if err != nil {
			t.Fatal(err)
		}
		if step != 7 {
			t.Errorf("step %d, want 7", step)
		}
		want := map[string][2][]float32{"a": {{1, 2}, {3, 4}}, "b": {{5}, {6}}}
		if fmt.Sprint(out) != fmt.Sprint(want) {
			t.Errorf("moments %v, want %v (c was never stepped)", out, want)
		}
	})
	t.Run("no optimiser state", func(t *testing.T) {
		step, out, err := adamState(types.NewDict(), trainable, byKey)
		if err != nil || step != 0 || out == nil || len(out) != 0 {
			t.Fatalf("= %d, %v, %v; want 0, an empty map, nil", step, out, err)
		}
	})
	for _, c := range []struct {
		name  string
		entry types.DictEntry
		err   string
	}{
		{"index past the parameters", types.DictEntry{Key: 3, Value: paramState(1, vec(1), vec(1))}, "optimizer_state_dict state key 3: want a parameter index in [0,3)"},
		{"negative index", types.DictEntry{Key: -1, Value: paramState(1, vec(1), vec(1))}, "optimizer_state_dict state key -1: want a parameter index in [0,3)"},
		{"string key", types.DictEntry{Key: "a", Value: paramState(1, vec(1), vec(1))}, "optimizer_state_dict state key a: want a parameter index in [0,3)"},
		{"no step", types.DictEntry{Key: 2, Value: paramState(nil, vec(1), vec(1))}, "optimizer state of c has no step"},
		{"short moment", types.DictEntry{Key: 0, Value: paramState(1, vec(1, 2), vec(1))}, "optimizer state of a, exp_avg_sq: 1 values for a parameter of 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := adamState(top(c.entry), trainable, byKey)
			if err == nil || err.Error() != c.err {
				t.Fatalf("err = %v, want %q", err, c.err)
			}
		})
	}
}

// expectErr fails the test unless err is the error want names ("" for none), and reports
// whether an error was wanted (the case's checks end there).
func expectErr(t *testing.T, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	return true
}

// fixtureConfig writes the fixture checkpoint's config.json, changed by edit, to a
// temporary file and returns its path.
func fixtureConfig(t *testing.T, edit func(map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(checkpointDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	cj, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, cj, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
