// Package export writes a trained model's entity and relation tables, its other
// parameters, and cones artifacts in formats that Python and SQL read with nothing of
// this project: NumPy's .npy (numpy and PyTorch read it as is) and Parquet (pandas,
// polars, DuckDB). A checkpoint stores raw parameters, which mean something only through
// the model's angle map θ = π·tanh(x/R); the export applies it (model.Model.Angles, the
// very function the model computes with) and writes the angles in radians beside the raw
// values, with the id -> name tables and a manifest.json that says, for every file, its
// shape, dtype, unit and meaning under the model's variant.
//
// The package builds [Table]s from a model ([Model]) or a cones artifact ([Cones]) and
// writes them, in one format, into an output folder (outfile.Dir) with [Write]; package
// pipeline loads the inputs and checks them (embed export).
package export

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/outfile"
)

// Format is an export format.
type Format string

const (
	NPY     Format = "npy"     // one .npy file per numeric column, TSV for ids and strings
	Parquet Format = "parquet" // one .parquet file per table
)

// ParseFormat returns the format of the given name.
func ParseFormat(name string) (Format, error) {
	switch f := Format(name); f {
	case NPY, Parquet:
		return f, nil
	}
	return "", fmt.Errorf("unknown export format %q (known: npy, parquet)", name)
}

// Units of a column.
const (
	Radians = "radians"
	Raw     = "raw" // a stored parameter value, before the angle map
)

// Column is one column of a table: a vector of Width float32 values a row (F32), or one
// int64, int32, int8 or string value a row. A string column with a nil Str is unknown
// (null in Parquet, left out of the TSV).
type Column struct {
	Name  string
	Unit  string // Radians, Raw, another unit, or "" for ids and labels
	About string // what the values mean under the model
	Width int    // F32: values a row
	F32   []float32
	I64   []int64
	I32   []int32
	I8    []int8
	Str   []string
	IsStr bool
	// NPY is the column's file in the npy format ("" for none: strings, and ids that are
	// the row index). The table's TSV holds every column that is not a vector.
	NPY string
}

// Table is a set of rows: a model's entities or relations, or the rows of a cones
// artifact.
type Table struct {
	Name    string // entities, relations, cones: the Parquet file's name
	Rows    int
	TSV     string // the npy format's file of the columns that are not vectors ("" for none)
	About   string
	Columns []Column
}

// Tensor is a parameter tensor that is not an entity or relation table (the modulus,
// the intersection's and ConE's projection's layers), as stored: raw, row-major.
type Tensor struct {
	Name       string
	Rows, Cols int
	Data       []float32
}

// Model returns a model's tables: entities (the anchor angle in radians and the raw
// value) and relations (per variant: the axis rotation and aperture offset, or rocone-se's
// axis rotation and aperture shift, with the raw values), and its other parameters as
// tensors. Names, when given, must have one entry per id; nil leaves them unknown.
func Model(m *model.Model[float32], entityNames, relationNames []string) ([]Table, []Tensor, error) {
	cfg, p, d := m.Config, m.Params, m.Config.Dim
	if entityNames != nil && len(entityNames) != cfg.NumEntities {
		return nil, nil, fmt.Errorf("%d entity names for %d entities", len(entityNames), cfg.NumEntities)
	}
	if relationNames != nil && len(relationNames) != cfg.NumRelations {
		return nil, nil, fmt.Errorf("%d relation names for %d relations", len(relationNames), cfg.NumRelations)
	}
	proj, err := cfg.Variant.Projection()
	if err != nil {
		return nil, nil, err
	}
	info, err := proj.Info()
	if err != nil {
		return nil, nil, err
	}
	ids := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(i)
		}
		return out
	}
	entities := Table{Name: "entities", Rows: cfg.NumEntities, TSV: "entities.tsv",
		About: "one row per entity id; an entity is a point: a cone of half aperture 0 at its axis",
		Columns: []Column{
			{Name: "id", I32: ids(cfg.NumEntities), About: "entity id (the row)"},
			{Name: "name", IsStr: true, Str: entityNames, About: "entity name (--data's entities.tsv)"},
			{Name: "axis", Unit: Radians, Width: d, F32: m.Angles(p.Entity), NPY: "entity_axis.npy",
				About: "the entity's angle θ = π·tanh(raw/R) per dimension, in (−π, π): the axis of its point cone as a query anchor, and the point scored against query cones"},
			{Name: "axis_raw", Unit: Raw, Width: d, F32: p.Entity, NPY: "entity_axis_raw.npy", About: "the stored parameter (checkpoint tensor entity)"},
		}}
	rel := []Column{
		{Name: "id", I32: ids(cfg.NumRelations), About: "relation id (the row): 2k is a relation, 2k+1 its inverse"},
		{Name: "name", IsStr: true, Str: relationNames, About: "relation name (--data's relations.tsv)"},
	}
	// Every rotation rule (fold, trunc, shift) rotates the axis alike; ConE's MLP takes it in.
	axisAbout := "axis rotation θax = π·tanh(raw/R): projecting a cone by the relation maps its axis a to wrap(a + θax) into [−π, π)"
	if proj == model.ProjectMLP {
		axisAbout = "axis angle θax = π·tanh(raw/R): ConE's projection MLP (params projection.*) takes the cone's axis a as a + θax"
	}
	rel = append(rel,
		Column{Name: "axis", Unit: Radians, Width: d, F32: m.Angles(p.RelAxis), NPY: "relation_axis.npy", About: axisAbout},
		Column{Name: "axis_raw", Unit: Raw, Width: d, F32: p.RelAxis, NPY: "relation_axis_raw.npy", About: "the stored parameter (checkpoint tensor relation.axis)"})
	if proj == model.ProjectShift {
		rel = append(rel, Column{Name: "shift", Unit: "logit", Width: d, F32: p.RelShift, NPY: "relation_shift.npy",
			About: "aperture shift s (stored and used as is, no angle map): the half aperture h becomes " + info.Half + " (checkpoint tensor relation.shift)"})
	} else {
		apAbout := "aperture offset φ = π·tanh(raw/R): the half aperture h becomes " + info.Half
		if proj == model.ProjectMLP {
			apAbout = "aperture angle θap = π·tanh(raw/R): ConE's projection MLP takes the cone's half aperture h as h + θap"
		}
		rel = append(rel,
			Column{Name: "aperture", Unit: Radians, Width: d, F32: m.Angles(p.RelAperture), NPY: "relation_aperture.npy", About: apAbout},
			Column{Name: "aperture_raw", Unit: Raw, Width: d, F32: p.RelAperture, NPY: "relation_aperture_raw.npy", About: "the stored parameter (checkpoint tensor relation.aperture)"})
	}
	relations := Table{Name: "relations", Rows: cfg.NumRelations, TSV: "relations.tsv",
		About: "one row per relation id, inverses included", Columns: rel}

	var params []Tensor
	for _, t := range p.Tensors() {
		switch t.Name {
		case "entity", "relation.axis", "relation.aperture", "relation.shift":
			continue // in the tables
		}
		params = append(params, Tensor{Name: t.Name, Rows: t.Rows, Cols: t.Cols, Data: t.Data})
	}
	return []Table{entities, relations}, params, nil
}

// Cones returns the table of a cones artifact's rows: query id, type and DNF branch, and
// the cone's axis and half aperture in radians, as stored (they are angles already).
func Cones(meta artifact.ConesMeta, rows []artifact.Cone) Table {
	n, d := len(rows), meta.Dim
	id, typ, branch := make([]int64, n), make([]string, n), make([]int8, n)
	axis, half := make([]float32, 0, n*d), make([]float32, 0, n*d)
	for i, c := range rows {
		id[i], typ[i], branch[i] = c.ID, c.Type, c.Branch
		axis = append(axis, c.Axis...)
		half = append(half, c.Aperture...)
	}
	return Table{Name: "cones", Rows: n, TSV: "cones.tsv",
		About: "one row per query and DNF branch, in the artifact's order",
		Columns: []Column{
			{Name: "id", I64: id, NPY: "cones_id.npy", About: "the query's id in its queries artifact"},
			{Name: "type", IsStr: true, Str: typ, About: "the query's type (1p ... pni, 2u-DM, up-DM, custom)"},
			{Name: "branch", I8: branch, NPY: "cones_branch.npy", About: "DNF branch, 0.. (one for a conjunctive query)"},
			{Name: "axis", Unit: Radians, Width: d, F32: axis, NPY: "cones_axis.npy", About: "the cone's axis per dimension, in [−π, π)"},
			{Name: "aperture", Unit: Radians, Width: d, F32: half, NPY: "cones_aperture.npy", About: "the HALF aperture h per dimension, in [0, π]: the cone spans axis ± h"},
		}}
}

// Manifest is manifest.json: what was exported, from what, and every file's contents.
type Manifest struct {
	Format     Format          `json:"format"`
	WrittenBy  string          `json:"written_by"`
	Checkpoint *CheckpointInfo `json:"checkpoint,omitempty"`
	Cones      *ConesInfo      `json:"cones,omitempty"`
	// Names is the dataset folder the entity and relation names come from; "" when none
	// was given (the name columns are then null and no entities.tsv or relations.tsv is
	// written).
	Names string     `json:"names_from"`
	Files []FileInfo `json:"files"`
}

// CheckpointInfo describes the exported model.
type CheckpointInfo struct {
	Path           string  `json:"path"`
	SHA256         string  `json:"sha256"`
	Model          string  `json:"model"`
	Dataset        string  `json:"dataset"`
	Dim            int     `json:"dim"`
	NumEntities    int     `json:"num_entities"`
	NumRelations   int     `json:"num_relations"`
	Step           int64   `json:"step"`
	Gamma          float64 `json:"gamma"`
	EmbeddingRange float64 `json:"embedding_range"`
	AngleMap       string  `json:"angle_map"`
	// The model's lineage (artifact.CheckpointMeta): the KG and train file it was trained on.
	KGDigest         string `json:"kg_digest"`
	TrainFingerprint string `json:"train_fingerprint"`
}

// ConesInfo describes the exported cones artifact.
type ConesInfo struct {
	Path             string `json:"path"`
	Model            string `json:"model"`
	Dataset          string `json:"dataset"`
	Split            string `json:"split"`
	Dim              int    `json:"dim"`
	Rows             int    `json:"rows"`
	Checkpoint       string `json:"checkpoint"`
	CheckpointSHA256 string `json:"checkpoint_sha256"`
	Queries          string `json:"queries"`
	QueriesDigest    string `json:"queries_digest"`
	KGDigest         string `json:"kg_digest"`
	TrainFingerprint string `json:"train_fingerprint"`
	Shard            string `json:"shard,omitempty"`
}

// NewCheckpointInfo describes a model loaded from the checkpoint at path (its SHA-256
// sha and metadata meta).
func NewCheckpointInfo(path, sha string, meta artifact.CheckpointMeta, cfg model.Config) *CheckpointInfo {
	return &CheckpointInfo{Path: path, SHA256: sha, Model: string(cfg.Variant), Dataset: meta.Dataset, Dim: cfg.Dim,
		NumEntities: cfg.NumEntities, NumRelations: cfg.NumRelations, Step: meta.Step, Gamma: cfg.Gamma,
		EmbeddingRange: float64(float32(cfg.EmbeddingRange())),
		AngleMap:       "angle = pi * tanh(raw / embedding_range), embedding_range = (gamma + 2) / dim, computed in float32",
		KGDigest:       meta.KGDigest, TrainFingerprint: meta.TrainFingerprint}
}

// NewConesInfo describes the cones artifact at path.
func NewConesInfo(path string, meta artifact.ConesMeta, rows int) *ConesInfo {
	info := &ConesInfo{Path: path, Model: meta.Model, Dataset: meta.Dataset, Split: meta.Split, Dim: meta.Dim, Rows: rows,
		Checkpoint: meta.Checkpoint, CheckpointSHA256: meta.CheckpointHash, Queries: meta.Queries, QueriesDigest: meta.QueriesHash,
		KGDigest: meta.KGDigest, TrainFingerprint: meta.TrainFingerprint}
	if !meta.Shard.Whole() {
		info.Shard = meta.Shard.String()
	}
	return info
}

// FileInfo describes one file of the export. An .npy file has DType and Shape; a
// Parquet or TSV file has Rows and Columns.
type FileInfo struct {
	File    string       `json:"file"`
	Table   string       `json:"table,omitempty"`
	DType   string       `json:"dtype,omitempty"`
	Shape   []int        `json:"shape,omitempty"`
	Unit    string       `json:"unit,omitempty"`
	About   string       `json:"about"`
	Rows    *int         `json:"rows,omitempty"`
	Columns []ColumnInfo `json:"columns,omitempty"`
}

// ColumnInfo describes a column of a Parquet or TSV file.
type ColumnInfo struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Unit  string `json:"unit,omitempty"`
	About string `json:"about"`
}

// Write writes tables and params in format f into the output folder d, with
// manifest.json (man, its Files filled in here) last. d is neither committed nor aborted.
func Write(d *outfile.Dir, f Format, man Manifest, tables []Table, params []Tensor) error {
	for _, t := range tables {
		if err := t.check(); err != nil {
			return err
		}
	}
	man.Format = f
	var files []FileInfo
	var err error
	switch f {
	case NPY:
		files, err = writeNPY(d, tables, params)
	case Parquet:
		files, err = writeParquet(d, &man, tables, params)
	default:
		_, err = ParseFormat(string(f))
	}
	if err != nil {
		return err
	}
	man.Files = files
	return d.WriteFile("manifest.json", func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(man)
	})
}

// check refuses a table whose columns do not have its row count, a string that a TSV
// line cannot hold, and a string that is not UTF-8 (a Latin-1 entities.tsv, which kg
// reads as bytes): Parquet's strings and Python's text files are UTF-8, and their readers
// fail on such a name (UnicodeDecodeError) or replace it.
func (t *Table) check() error {
	for _, c := range t.Columns {
		var n int
		switch {
		case c.IsStr:
			if c.Str == nil {
				continue
			}
			n = len(c.Str)
			for i, s := range c.Str {
				if strings.ContainsAny(s, "\t\n\r") {
					return fmt.Errorf("%s row %d: %s %q holds a tab or a line break, which %s cannot hold", t.Name, i, c.Name, s, t.TSV)
				}
				if !utf8.ValidString(s) {
					return fmt.Errorf("%s row %d: %s %q is not valid UTF-8, which Parquet and %s are written in (convert the names of --data to UTF-8)", t.Name, i, c.Name, s, t.TSV)
				}
			}
		case c.Width > 0:
			if len(c.F32) != t.Rows*c.Width {
				return fmt.Errorf("%s column %s: %d values for %d rows of %d", t.Name, c.Name, len(c.F32), t.Rows, c.Width)
			}
			continue
		case c.I64 != nil:
			n = len(c.I64)
		case c.I32 != nil:
			n = len(c.I32)
		case c.I8 != nil:
			n = len(c.I8)
		default:
			return fmt.Errorf("%s column %s: no values", t.Name, c.Name)
		}
		if n != t.Rows {
			return fmt.Errorf("%s column %s: %d values for %d rows", t.Name, c.Name, n, t.Rows)
		}
	}
	return nil
}

// npyDType is the numpy dtype name of a column's values.
func (c *Column) npyDType() string {
	switch {
	case c.Width > 0:
		return "float32"
	case c.I64 != nil:
		return "int64"
	case c.I32 != nil:
		return "int32"
	case c.I8 != nil:
		return "int8"
	}
	return "str"
}

// data is the column's values as WriteNPY takes them.
func (c *Column) data() any {
	switch {
	case c.Width > 0:
		return c.F32
	case c.I64 != nil:
		return c.I64
	case c.I32 != nil:
		return c.I32
	}
	return c.I8
}

// cell formats row i of a scalar column for the TSV.
func (c *Column) cell(i int) string {
	switch {
	case c.IsStr:
		return c.Str[i]
	case c.I64 != nil:
		return strconv.FormatInt(c.I64[i], 10)
	case c.I32 != nil:
		return strconv.Itoa(int(c.I32[i]))
	}
	return strconv.Itoa(int(c.I8[i]))
}

// writeNPY writes each table's numeric columns as .npy files, its columns that are not
// vectors (ids, names, types) as a TSV (no header line; the manifest names the columns),
// and each tensor as params/NAME.npy.
func writeNPY(d dirWriter, tables []Table, params []Tensor) ([]FileInfo, error) {
	var files []FileInfo
	for _, t := range tables {
		var tsv []*Column
		for i := range t.Columns {
			c := &t.Columns[i]
			if c.Width == 0 && (!c.IsStr || c.Str != nil) {
				tsv = append(tsv, c)
			}
			if c.NPY == "" {
				continue
			}
			shape := []int{t.Rows}
			if c.Width > 0 {
				shape = append(shape, c.Width)
			}
			if err := d.WriteFile(c.NPY, func(w io.Writer) error { return WriteNPY(w, shape, c.data()) }); err != nil {
				return nil, err
			}
			files = append(files, FileInfo{File: c.NPY, Table: t.Name, DType: c.npyDType(), Shape: shape, Unit: c.Unit, About: c.About})
		}
		// A TSV of ids only (entities without names) says nothing the row index does not.
		if t.TSV == "" || (len(tsv) == 1 && tsv[0].Name == "id") || len(tsv) == 0 {
			continue
		}
		err := d.WriteFile(t.TSV, func(w io.Writer) error {
			line := make([]string, len(tsv))
			for i := range t.Rows {
				for j, c := range tsv {
					line[j] = c.cell(i)
				}
				if _, err := io.WriteString(w, strings.Join(line, "\t")+"\n"); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		rows := t.Rows
		fi := FileInfo{File: t.TSV, Table: t.Name, Rows: &rows, About: t.About + "; UTF-8, tab-separated, no header line, each line ended by \\n (split at \\n only: a name may hold characters that Python's str.splitlines also splits at), row i is row i of the table's .npy files"}
		for _, c := range tsv {
			fi.Columns = append(fi.Columns, ColumnInfo{Name: c.Name, Type: c.npyDType(), Unit: c.Unit, About: c.About})
		}
		files = append(files, fi)
	}
	for _, p := range params {
		name := "params/" + p.Name + ".npy"
		shape := []int{p.Rows, p.Cols}
		if err := d.WriteFile(name, func(w io.Writer) error { return WriteNPY(w, shape, p.Data) }); err != nil {
			return nil, err
		}
		files = append(files, FileInfo{File: name, DType: "float32", Shape: shape, Unit: Raw, About: paramAbout(p.Name)})
	}
	return files, nil
}

// paramAbout says what a parameter tensor is, in the model's terms.
func paramAbout(name string) string {
	switch {
	case name == "modulus":
		return "the modulus m in the logit γ − m·distance, as stored"
	case strings.HasPrefix(name, "intersection."):
		return "intersection layer " + strings.TrimPrefix(name, "intersection.") + " (W [out, in] or bias [1, out]): w1/b1 and w2/b2 the attention over branches, w3/b3 and w4/b4 the aperture's DeepSets gate"
	case strings.HasPrefix(name, "projection."):
		return "ConE's projection MLP layer " + strings.TrimPrefix(name, "projection.") + " (W [out, in] or bias [1, out]): [a + θax ; h + θap] → ReLU(w1) → ReLU(w2) → w3 → [u ; v], a' = π·tanh(u), h' = (π/2)·tanh(2v) + π/2"
	}
	return "parameter " + name
}
