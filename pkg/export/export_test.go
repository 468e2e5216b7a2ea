package export

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/parquet/file"

	"github.com/rocone/rocone/internal/arrowcheck"
	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/outfile"
	"github.com/rocone/rocone/pkg/query"
)

const (
	testEntities  = 11
	testRelations = 6
	testDim       = 5
)

// testModel is a model of the variant with its tables spread over several times the
// initial range, so that the angles come near ±π and the projections wrap, fold, clamp
// and saturate, and (rocone-se) non-zero aperture shifts.
func testModel(t *testing.T, v model.Variant) *model.Model[float32] {
	t.Helper()
	m, err := model.New[float32](model.Config{Variant: v, NumEntities: testEntities, NumRelations: testRelations,
		Dim: testDim, Gamma: 12, ConeHidden: 7, Seed: 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Params
	for _, tab := range [][]float32{p.Entity, p.RelAxis, p.RelAperture} {
		for i := range tab {
			tab[i] *= 4
		}
	}
	for i := range p.RelShift {
		p.RelShift[i] = float32(i%7) - 3.1
	}
	return m
}

func testNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	names[1] = prefix + " with space"
	names[2] = "é/" + prefix + "/ü" // non-ASCII, as Freebase names are
	// Characters a TSV holds but Python's str.splitlines splits at (so a reader must split
	// the file at "\n" only), a leading quote (a CSV reader's quoting) and a comma.
	names[3] = "\"" + prefix + "\" a\u2028b\u0085c\vd\fe\x1cf, #g"
	return names
}

// pairs are the (entity, relation) of the 1p queries whose cones the tests compare.
func pairs() [][2]int32 {
	var out [][2]int32
	for e := range int32(testEntities) {
		for r := range int32(testRelations) {
			if (e+r)%2 == 0 {
				out = append(out, [2]int32{e, r})
			}
		}
	}
	return out
}

// embed1p returns the model's own cones of the 1p queries of pairs.
func embed1p(t *testing.T, m *model.Model[float32]) model.Cones[float32] {
	t.Helper()
	var anchors, relations []int32
	for _, p := range pairs() {
		anchors, relations = append(anchors, p[0]), append(relations, p[1])
	}
	emb, err := m.Embed(query.MustParse("('e',('r',))"), anchors, relations, len(anchors), nil)
	if err != nil {
		t.Fatal(err)
	}
	return emb.Branches[0]
}

// testCones is a cones table of real cones: the model's 1p cones, with ids up to 2^40.
func testCones(t *testing.T, m *model.Model[float32]) (artifact.ConesMeta, []artifact.Cone) {
	t.Helper()
	c := embed1p(t, m)
	meta := artifact.ConesMeta{Dim: testDim, Aperture: "half", Model: string(m.Config.Variant), Dataset: "toy", Split: "test",
		NumEntities: testEntities, Checkpoint: "m.arrow", CheckpointHash: "ab", Queries: "q.arrow", QueriesHash: "cd"}
	var rows []artifact.Cone
	for i := range c.N {
		a, h := c.Row(i)
		rows = append(rows, artifact.Cone{ID: int64(i) << 36, Type: []string{"1p", "2u-DM"}[i%2], Branch: int8(i % 2), Axis: a, Aperture: h})
	}
	return meta, rows
}

// export writes the model (and cones) in format f to a new folder and returns it.
func export(t *testing.T, f Format, m *model.Model[float32], names bool, cones bool) string {
	t.Helper()
	var en, rn []string
	if names {
		en, rn = testNames("ent", testEntities), testNames("rel", testRelations)
	}
	tables, params, err := Model(m, en, rn)
	if err != nil {
		t.Fatal(err)
	}
	man := Manifest{WrittenBy: "test", Checkpoint: NewCheckpointInfo("m.arrow", "ab", artifact.CheckpointMeta{Dataset: "toy", Step: 7}, m.Config)}
	if cones {
		meta, rows := testCones(t, m)
		tables = append(tables, Cones(meta, rows))
		man.Cones = NewConesInfo("c.arrow", meta, len(rows))
	}
	out := filepath.Join(t.TempDir(), "export")
	d, err := outfile.CreateDir(out, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Abort()
	if err := Write(d, f, man, tables, params); err != nil {
		t.Fatal(err)
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	return out
}

// python3 returns a Python 3 that has NumPy, or skips the test: the check runs wherever
// Debian's python3-numpy is installed (.ci/run installs it). The python3 on PATH comes
// first, then the system's (a pyenv or virtualenv python3 may lack NumPy).
func python3(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(py)
		if err != nil {
			continue
		}
		if out, err := exec.Command(path, "-c", "import numpy").CombinedOutput(); err == nil {
			return path
		} else {
			tried = append(tried, path+": "+strings.TrimSpace(string(out)))
		}
	}
	t.Skipf("no python3 with numpy (Debian: apt-get install python3-numpy); tried %q", tried)
	return ""
}

// numpyReport is what testdata/check_npy.py prints.
type numpyReport struct {
	Files map[string]struct {
		DType  string
		Shape  []int
		Values []int64
	}
	Errors        []string
	TSV           map[string][][]string
	MaxAngleError float64 `json:"max_angle_error"`
	Cones         struct{ Axis, Half [][]float64 }
}

func readWithNumPy(t *testing.T, dir string) numpyReport {
	t.Helper()
	ps, _ := json.Marshal(pairs())
	cmd := exec.Command(python3(t), filepath.Join("testdata", "check_npy.py"), dir, string(ps))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("check_npy.py: %v\n%s", err, stderr.String())
	}
	var r numpyReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("check_npy.py printed %.200q: %v", out, err)
	}
	return r
}

// wantArrays is every .npy file an export of m (with the cones table of testCones) must
// hold, with its shape and values as Go has them: angles from the model's own angle
// map, raw values from its parameters.
func wantArrays(t *testing.T, m *model.Model[float32], cones bool) map[string]struct {
	shape []int
	f32   []float32
	ints  []int64
} {
	type arr = struct {
		shape []int
		f32   []float32
		ints  []int64
	}
	p, d := m.Params, testDim
	want := map[string]arr{
		"entity_axis.npy":       {[]int{testEntities, d}, m.Angles(p.Entity), nil},
		"entity_axis_raw.npy":   {[]int{testEntities, d}, p.Entity, nil},
		"relation_axis.npy":     {[]int{testRelations, d}, m.Angles(p.RelAxis), nil},
		"relation_axis_raw.npy": {[]int{testRelations, d}, p.RelAxis, nil},
	}
	if m.Config.Variant == model.RoConESE {
		want["relation_shift.npy"] = arr{[]int{testRelations, d}, p.RelShift, nil}
	} else {
		want["relation_aperture.npy"] = arr{[]int{testRelations, d}, m.Angles(p.RelAperture), nil}
		want["relation_aperture_raw.npy"] = arr{[]int{testRelations, d}, p.RelAperture, nil}
	}
	for _, tn := range p.Tensors() {
		switch tn.Name {
		case "entity", "relation.axis", "relation.aperture", "relation.shift":
		default:
			want["params/"+tn.Name+".npy"] = arr{[]int{tn.Rows, tn.Cols}, tn.Data, nil}
		}
	}
	if cones {
		meta, rows := testCones(t, m)
		tab := Cones(meta, rows)
		want["cones_axis.npy"] = arr{[]int{len(rows), d}, tab.Columns[3].F32, nil}
		want["cones_aperture.npy"] = arr{[]int{len(rows), d}, tab.Columns[4].F32, nil}
		var ids, branches []int64
		for _, c := range rows {
			ids, branches = append(ids, c.ID), append(branches, int64(c.Branch))
		}
		want["cones_id.npy"] = arr{[]int{len(rows)}, nil, ids}
		want["cones_branch.npy"] = arr{[]int{len(rows)}, nil, branches}
	}
	return want
}

// closeAngle reports whether two axis angles agree within tol modulo 2π (a value at the
// wrap's edge may land on either side, −π or π, in another precision).
func closeAngle(a, b, tol float64) bool {
	d := math.Mod(math.Abs(a-b), 2*math.Pi)
	return math.Min(d, 2*math.Pi-d) <= tol
}

// TestNPYReadByNumPy: for every variant, NumPy (not this project's code) loads every
// .npy file of an export with the dtype and shape the manifest gives and the very values
// of the Go model: its angle map's angles, bit for bit, and its raw parameters. NumPy's
// own π·tanh(raw/R) matches the angles, and the 1p cones NumPy computes from the
// exported arrays alone (and, for ConE, the exported MLP) are the model's cones. The id
// -> name tables read back as written.
func TestNPYReadByNumPy(t *testing.T) {
	for _, v := range model.Variants {
		t.Run(string(v), func(t *testing.T) {
			m := testModel(t, v)
			dir := export(t, NPY, m, true, true)
			r := readWithNumPy(t, dir)
			if len(r.Errors) > 0 {
				t.Fatalf("numpy: %s", strings.Join(r.Errors, "\n"))
			}
			want := wantArrays(t, m, true)
			for name, w := range want {
				got, ok := r.Files[name]
				if !ok {
					t.Errorf("%s: not in the export (manifest)", name)
					continue
				}
				if !slices.Equal(got.Shape, w.shape) {
					t.Errorf("%s: numpy shape %v, want %v", name, got.Shape, w.shape)
				}
				if w.f32 != nil {
					if got.DType != "float32" || len(got.Values) != len(w.f32) {
						t.Fatalf("%s: numpy read %s with %d values, want float32 with %d", name, got.DType, len(got.Values), len(w.f32))
					}
					for i, x := range w.f32 {
						if uint32(got.Values[i]) != math.Float32bits(x) {
							t.Fatalf("%s[%d]: numpy read %v, Go has %v", name, i, math.Float32frombits(uint32(got.Values[i])), x)
						}
					}
				} else if !slices.Equal(got.Values, w.ints) {
					t.Errorf("%s: numpy read %v, want %v", name, got.Values, w.ints)
				}
			}
			for name := range r.Files {
				if _, ok := want[name]; !ok {
					t.Errorf("%s: an unexpected file", name)
				}
			}
			if r.MaxAngleError > 2e-6 {
				t.Errorf("numpy's π·tanh(raw/R) differs from the exported angles by up to %g", r.MaxAngleError)
			}

			c := embed1p(t, m)
			if len(r.Cones.Axis) != c.N {
				t.Fatalf("numpy computed %d cones, want %d", len(r.Cones.Axis), c.N)
			}
			for i := range c.N {
				a, h := c.Row(i)
				for j := range testDim {
					if !closeAngle(r.Cones.Axis[i][j], float64(a[j]), 2e-5) || !(math.Abs(r.Cones.Half[i][j]-float64(h[j])) <= 2e-5) {
						t.Fatalf("1p cone %v, dim %d: numpy from the export (%v, %v), the model (%v, %v)",
							pairs()[i], j, r.Cones.Axis[i][j], r.Cones.Half[i][j], a[j], h[j])
					}
				}
			}

			for file, names := range map[string][]string{"entities.tsv": testNames("ent", testEntities), "relations.tsv": testNames("rel", testRelations)} {
				lines := r.TSV[file]
				if len(lines) != len(names) {
					t.Fatalf("%s: %d lines, want %d", file, len(lines), len(names))
				}
				for i, l := range lines {
					if !slices.Equal(l, []string{strconv.Itoa(i), names[i]}) {
						t.Errorf("%s line %d: %q", file, i, l)
					}
				}
			}
			_, rows := testCones(t, m)
			for i, l := range r.TSV["cones.tsv"] {
				if w := []string{strconv.FormatInt(rows[i].ID, 10), rows[i].Type, strconv.Itoa(int(rows[i].Branch))}; !slices.Equal(l, w) {
					t.Errorf("cones.tsv line %d: %q, want %q", i, l, w)
				}
			}
			if len(r.TSV["cones.tsv"]) != len(rows) {
				t.Errorf("cones.tsv: %d lines, want %d", len(r.TSV["cones.tsv"]), len(rows))
			}
		})
	}
}

// TestNPYNoNames: without names there are no entities.tsv and relations.tsv, and the
// manifest says the names come from nowhere.
func TestNPYNoNames(t *testing.T) {
	dir := export(t, NPY, testModel(t, model.RoConE), false, false)
	for _, f := range []string{"entities.tsv", "relations.tsv", "cones_axis.npy"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s written", f)
		}
	}
	var man Manifest
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	if man.Names != "" || man.Format != NPY || man.Checkpoint.Model != "rocone" || man.Checkpoint.Dim != testDim {
		t.Errorf("manifest %+v", man)
	}
	for _, f := range man.Files {
		if _, err := os.Stat(filepath.Join(dir, f.File)); err != nil {
			t.Errorf("manifest lists %s: %v", f.File, err)
		}
	}
}

// TestWriteRefuses: names that do not fit the model, or that a TSV line cannot hold, are
// refused before anything is written.
func TestWriteRefuses(t *testing.T) {
	m := testModel(t, model.RoConE)
	if _, _, err := Model(m, testNames("e", testEntities-1), nil); err == nil || !strings.Contains(err.Error(), "10 entity names for 11 entities") {
		t.Errorf("Model: %v", err)
	}
	if _, _, err := Model(m, nil, testNames("r", testRelations+1)); err == nil || !strings.Contains(err.Error(), "7 relation names for 6 relations") {
		t.Errorf("Model: %v", err)
	}
	// Names a TSV line cannot hold, and names that are not UTF-8 (a Latin-1 entities.tsv),
	// which Parquet's strings and Python's text files cannot hold: readers fail on them
	// (UnicodeDecodeError), or take them in replaced.
	for _, tc := range []struct{ name, want string }{
		{"a\tb", `entities row 4: name "a\tb" holds a tab or a line break`},
		{"a\rb", `entities row 4: name "a\rb" holds a tab or a line break`},
		{"Z\xfcrich", `entities row 4: name "Z\xfcrich" is not valid UTF-8`},
	} {
		names := testNames("e", testEntities)
		names[4] = tc.name
		tables, params, err := Model(m, names, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []Format{NPY, Parquet} {
			parent := t.TempDir()
			d, err := outfile.CreateDir(filepath.Join(parent, "x"), false)
			if err != nil {
				t.Fatal(err)
			}
			err = Write(d, f, Manifest{}, tables, params)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s %q: %v, want %s", f, tc.name, err, tc.want)
			}
			d.Abort()
			if es, _ := os.ReadDir(parent); len(es) != 0 {
				t.Errorf("%s: left %s", f, es[0].Name())
			}
		}
	}
	if _, err := ParseFormat("csv"); err == nil || !strings.Contains(err.Error(), `unknown export format "csv" (known: npy, parquet)`) {
		t.Errorf("ParseFormat: %v", err)
	}
}

// parquetRead is what scripts/arrow-check/parquet.mjs prints.
type parquetRead struct {
	Rows      int
	RowGroups int `json:"row_groups"`
	Columns   []string
	Metadata  map[string]string
	Data      []map[string]any
}

// readWithHyparquet reads a Parquet file with the npm package hyparquet (not this
// project's code, nor Arrow's). It skips without node or scripts/arrow-check's
// node_modules, unless ARROW_CHECK_JS is set (make test-js), which makes that a failure.
func readWithHyparquet(t *testing.T, path string) parquetRead {
	t.Helper()
	node, script := arrowcheck.Script(t, "parquet.mjs", "hyparquet")
	cmd := exec.Command(node, script, path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("parquet.mjs %s: %v\n%s", path, err, stderr.String())
	}
	var r parquetRead
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("parquet.mjs printed %.200q: %v", out, err)
	}
	return r
}

// sameVector checks that a list value read by hyparquet holds exactly the float32 values
// want (a float32 widened to a double, printed as the shortest decimal, parses back to it).
func sameVector(t *testing.T, what string, got any, want []float32) {
	t.Helper()
	list, ok := got.([]any)
	if !ok || len(list) != len(want) {
		t.Fatalf("%s: read %v, want %d values", what, got, len(want))
	}
	for i, v := range list {
		f, ok := v.(float64)
		if !ok || float32(f) != want[i] || float64(float32(f)) != f {
			t.Fatalf("%s[%d]: read %v, want %v", what, i, v, want[i])
		}
	}
}

// TestParquetReadByHyparquet: for every variant, hyparquet reads each table of a Parquet
// export with the columns the manifest lists, every row's id, name and vectors equal to
// the Go model's (angles from its angle map, raw parameters), the cones table's int64
// ids beyond 2^32, and params.parquet's tensors; without names, the name column is null.
func TestParquetReadByHyparquet(t *testing.T) {
	for _, v := range model.Variants {
		for _, named := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s names=%v", v, named), func(t *testing.T) {
				if named { // and row groups of two or three rows
					defer func(b int) { parquetRowGroupBytes = b }(parquetRowGroupBytes)
					parquetRowGroupBytes = 100
				}
				m := testModel(t, v)
				dir := export(t, Parquet, m, named, named)
				var man Manifest
				b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(b, &man); err != nil {
					t.Fatal(err)
				}
				arrays := wantArrays(t, m, named)
				names := map[string][]string{"entities": testNames("ent", testEntities), "relations": testNames("rel", testRelations)}
				prefix := map[string]string{"entities": "entity_", "relations": "relation_", "cones": "cones_"}
				var files []string
				for _, f := range man.Files {
					files = append(files, f.File)
					r := readWithHyparquet(t, filepath.Join(dir, f.File))
					var cols []string
					for _, c := range f.Columns {
						cols = append(cols, c.Name)
					}
					if !slices.Equal(r.Columns, cols) || r.Rows != *f.Rows || len(r.Data) != r.Rows {
						t.Fatalf("%s: read columns %v and %d rows, the manifest %v and %d", f.File, r.Columns, r.Rows, cols, *f.Rows)
					}
					if named && f.File != "params.parquet" && r.RowGroups < 2 {
						t.Errorf("%s: %d row groups, want several", f.File, r.RowGroups)
					}
					if f.File == "params.parquet" {
						for i, row := range r.Data {
							name, _ := row["name"].(string)
							w, ok := arrays["params/"+name+".npy"]
							if !ok || row["rows"] != strconv.Itoa(w.shape[0]) || row["cols"] != strconv.Itoa(w.shape[1]) {
								t.Fatalf("params.parquet row %d: %v %v×%v", i, name, row["rows"], row["cols"])
							}
							sameVector(t, "params "+name, row["values"], w.f32)
							delete(arrays, "params/"+name+".npy")
						}
						continue
					}
					if r.Metadata["unit.axis"] != Radians || r.Metadata["model"] != string(v) || r.Metadata["dim"] != strconv.Itoa(testDim) {
						t.Errorf("%s: metadata %v", f.File, r.Metadata)
					}
					for i, row := range r.Data {
						for _, c := range cols {
							switch c {
							case "id":
								want := strconv.Itoa(i) // int32 ids: numbers
								if f.Table == "cones" {
									want = strconv.FormatInt(int64(i)<<36, 10) // int64: decimal strings
									if row[c] != want {
										t.Fatalf("%s row %d: id %v, want %s", f.File, i, row[c], want)
									}
								} else if fmt.Sprint(row[c]) != want {
									t.Fatalf("%s row %d: id %v, want %s", f.File, i, row[c], want)
								}
							case "name":
								if named && row[c] != names[f.Table][i] || !named && row[c] != nil {
									t.Fatalf("%s row %d: name %v", f.File, i, row[c])
								}
							case "type":
								if row[c] != []string{"1p", "2u-DM"}[i%2] {
									t.Fatalf("%s row %d: type %v", f.File, i, row[c])
								}
							case "branch":
								if row[c] != float64(i%2) {
									t.Fatalf("%s row %d: branch %v", f.File, i, row[c])
								}
							default:
								w, ok := arrays[prefix[f.Table]+c+".npy"]
								if !ok {
									t.Fatalf("%s: unexpected column %s", f.File, c)
								}
								sameVector(t, fmt.Sprintf("%s row %d %s", f.File, i, c), row[c], w.f32[i*testDim:(i+1)*testDim])
							}
						}
					}
					for _, c := range cols {
						delete(arrays, prefix[f.Table]+c+".npy")
					}
				}
				if len(arrays) != 0 {
					t.Errorf("not in any Parquet file: %v", slices.Sorted(maps.Keys(arrays)))
				}
				want := []string{"entities.parquet", "relations.parquet"}
				if named {
					want = append(want, "cones.parquet")
				}
				if want = append(want, "params.parquet"); !slices.Equal(files, want) {
					t.Errorf("files %v, want %v", files, want)
				}
			})
		}
	}
}

// TestEmptyCones: a cones artifact of no rows exports as arrays of shape (0, d) and (0,)
// that NumPy loads, and as Parquet files of no rows that hyparquet reads.
func TestEmptyCones(t *testing.T) {
	meta := artifact.ConesMeta{Dim: testDim, Aperture: "half", Model: "rocone"}
	for _, f := range []Format{NPY, Parquet} {
		out := filepath.Join(t.TempDir(), "export")
		d, err := outfile.CreateDir(out, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := Write(d, f, Manifest{Cones: NewConesInfo("c.arrow", meta, 0)}, []Table{Cones(meta, nil)}, nil); err != nil {
			t.Fatal(err)
		}
		if err := d.Commit(); err != nil {
			t.Fatal(err)
		}
		if f == Parquet {
			if r := readWithHyparquet(t, filepath.Join(out, "cones.parquet")); r.Rows != 0 || len(r.Data) != 0 || len(r.Columns) != 5 {
				t.Errorf("cones.parquet: %+v", r)
			}
			continue
		}
		r := readWithNumPy(t, out)
		if len(r.Errors) > 0 {
			t.Fatal(r.Errors)
		}
		for name, shape := range map[string][]int{"cones_axis.npy": {0, testDim}, "cones_aperture.npy": {0, testDim}, "cones_id.npy": {0}, "cones_branch.npy": {0}} {
			if got := r.Files[name]; !slices.Equal(got.Shape, shape) || len(got.Values) != 0 {
				t.Errorf("%s: numpy read shape %v, %d values", name, got.Shape, len(got.Values))
			}
		}
	}
}

// TestParquetMetadata reads the key-value metadata of every Parquet file of an export
// (with Arrow's Parquet reader, so it needs no node): with a checkpoint, model, dim,
// embedding_range and angle_map in every file; with cones alone, the cones' model and
// dim (no angle map: the cones are angles already); unit.COLUMN for each column with a
// unit. The README's "export folder" lists these keys.
func TestParquetMetadata(t *testing.T) {
	m := testModel(t, model.RoConE)
	ck := NewCheckpointInfo("m.arrow", "ab", artifact.CheckpointMeta{Dataset: "toy", Step: 7}, m.Config)
	meta, rows := testCones(t, m)
	meta.Model = "rocone-se" // told apart from the checkpoint's
	conesOnly := filepath.Join(t.TempDir(), "export")
	d, err := outfile.CreateDir(conesOnly, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Abort()
	if err := Write(d, Parquet, Manifest{Cones: NewConesInfo("c.arrow", meta, len(rows))}, []Table{Cones(meta, rows)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, dir string
		want      map[string]string
		files     int
	}{
		{"checkpoint and cones", export(t, Parquet, m, true, true), map[string]string{"model": "rocone", "dim": strconv.Itoa(testDim),
			"embedding_range": strconv.FormatFloat(ck.EmbeddingRange, 'g', -1, 64), "angle_map": ck.AngleMap}, 4},
		{"cones alone", conesOnly, map[string]string{"model": "rocone-se", "dim": strconv.Itoa(testDim)}, 1},
	} {
		b, err := os.ReadFile(filepath.Join(c.dir, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		var man Manifest
		if err := json.Unmarshal(b, &man); err != nil {
			t.Fatal(err)
		}
		if len(man.Files) != c.files {
			t.Fatalf("%s: %d files, want %d", c.name, len(man.Files), c.files)
		}
		for _, f := range man.Files {
			want := maps.Clone(c.want)
			for _, col := range f.Columns {
				if col.Unit != "" {
					want["unit."+col.Name] = col.Unit
				}
			}
			got := parquetKeyValues(t, filepath.Join(c.dir, f.File))
			delete(got, "ARROW:schema") // pqarrow's copy of the Arrow schema
			if !maps.Equal(got, want) {
				t.Errorf("%s: %s: key-value metadata %v, want %v", c.name, f.File, got, want)
			}
		}
	}
}

// parquetKeyValues returns a Parquet file's key-value metadata.
func parquetKeyValues(t *testing.T, path string) map[string]string {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	kv := r.MetaData().KeyValueMetadata()
	out := map[string]string{}
	for i, k := range kv.Keys() {
		out[k] = kv.Values()[i]
	}
	return out
}

// TestModelRelationColumns: the relations table has, per variant, the columns its
// projection stores, and says what they mean under that projection: a rotation and an
// aperture offset (rocone, rocone-trunc), a rotation and a shift (rocone-se), or the
// angles ConE's MLP takes in (cone).
func TestModelRelationColumns(t *testing.T) {
	const (
		rotation = "axis rotation θax = π·tanh(raw/R): projecting a cone by the relation"
		offset   = "aperture offset φ = π·tanh(raw/R): the half aperture h becomes "
		shift    = "aperture shift s (stored and used as is, no angle map): the half aperture h becomes "
		mlpAxis  = "axis angle θax = π·tanh(raw/R): ConE's projection MLP"
		mlpAper  = "aperture angle θap = π·tanh(raw/R): ConE's projection MLP"
	)
	for _, c := range []struct {
		v     model.Variant
		names []string
		about map[string]string // column -> the start of its About
	}{
		{model.RoConE, []string{"id", "name", "axis", "axis_raw", "aperture", "aperture_raw"}, map[string]string{"axis": rotation, "aperture": offset}},
		{model.RoConETrunc, []string{"id", "name", "axis", "axis_raw", "aperture", "aperture_raw"}, map[string]string{"axis": rotation, "aperture": offset}},
		{model.RoConESE, []string{"id", "name", "axis", "axis_raw", "shift"}, map[string]string{"axis": rotation, "shift": shift}},
		{model.ConE, []string{"id", "name", "axis", "axis_raw", "aperture", "aperture_raw"}, map[string]string{"axis": mlpAxis, "aperture": mlpAper}},
	} {
		t.Run(string(c.v), func(t *testing.T) {
			tables, _, err := Model(testModel(t, c.v), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			rel := tables[1]
			var names []string
			for _, col := range rel.Columns {
				names = append(names, col.Name)
				if want, ok := c.about[col.Name]; ok && !strings.HasPrefix(col.About, want) {
					t.Errorf("relations column %s: about %q, want it to begin %q", col.Name, col.About, want)
				}
			}
			if rel.Name != "relations" || !slices.Equal(names, c.names) {
				t.Errorf("table %s, columns %v; want relations, %v", rel.Name, names, c.names)
			}
		})
	}
}

// TestTableCheck: Write refuses, before it writes anything, a table whose columns do not
// hold its row count of values (Width of them a row for a vector) or hold none at all;
// a string column with no values (unknown names) is allowed.
func TestTableCheck(t *testing.T) {
	for _, c := range []struct {
		name string
		col  Column
		want string // "" accepts
	}{
		{"vector", Column{Name: "v", Width: 3, F32: make([]float32, 6)}, ""},
		{"int64", Column{Name: "i", I64: []int64{1, 2}}, ""},
		{"int32", Column{Name: "i", I32: []int32{1, 2}}, ""},
		{"int8", Column{Name: "i", I8: []int8{1, 2}}, ""},
		{"strings", Column{Name: "s", IsStr: true, Str: []string{"a", "b"}}, ""},
		{"unknown strings", Column{Name: "s", IsStr: true}, ""},
		{"short vector", Column{Name: "v", Width: 3, F32: make([]float32, 5)}, "t column v: 5 values for 2 rows of 3"},
		{"vector of rows", Column{Name: "v", Width: 3, F32: make([]float32, 2)}, "t column v: 2 values for 2 rows of 3"},
		{"long int64", Column{Name: "i", I64: []int64{1, 2, 3}}, "t column i: 3 values for 2 rows"},
		{"short int32", Column{Name: "i", I32: []int32{1}}, "t column i: 1 values for 2 rows"},
		{"short int8", Column{Name: "i", I8: []int8{1}}, "t column i: 1 values for 2 rows"},
		{"empty int8", Column{Name: "i", I8: []int8{}}, "t column i: 0 values for 2 rows"},
		{"short strings", Column{Name: "s", IsStr: true, Str: []string{"a"}}, "t column s: 1 values for 2 rows"},
		{"no values", Column{Name: "x"}, "t column x: no values"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tab := Table{Name: "t", Rows: 2, Columns: []Column{c.col}}
			err := tab.check()
			if c.want == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
			} else if err == nil || err.Error() != c.want {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

// TestParamAbout: the manifest says what each parameter tensor is, by its name.
func TestParamAbout(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"modulus", "the modulus m in the logit γ − m·distance, as stored"},
		{"intersection.w1", "intersection layer w1 (W [out, in] or bias [1, out]): "},
		{"projection.b2", "ConE's projection MLP layer b2 (W [out, in] or bias [1, out]): "},
		{"other", "parameter other"},
	} {
		if got := paramAbout(c.name); !strings.HasPrefix(got, c.want) {
			t.Errorf("paramAbout(%q) = %q, want it to begin %q", c.name, got, c.want)
		}
	}
}
