package artifact

// # The checkpoint artifact (artifact=checkpoint, version=1)
//
// A trained (or training) model with everything needed to resume its training bit for
// bit. One row per tensor, and one record batch per row, so that the int32 list offsets
// of a batch bound a single tensor (fewer than 2^31 values each; the largest real tensor,
// NELL-995's entity table at d = 800, has 5·10^7), with exactly these columns in this
// order (none nullable):
//
//	name    utf8           the tensor's name, e.g. entity, relation.axis, intersection.w1, modulus
//	role    utf8           param (the parameter), adam_m (Adam's first moment), adam_v (second moment)
//	shape   list<int64>    the tensor's shape, row-major; [rows, cols] for the model's tensors
//	values  list<float32>  the values, row-major; as many as the product of shape
//
// Every (name, role) pair appears once; every adam_m or adam_v tensor has a param tensor
// of the same name and shape. Which names and shapes a model has is the model's business
// (pkg/model Params.Tensors); readers of this package check the form above, the model's
// loader checks the names and shapes against the configuration.
//
// Schema metadata:
//
//	artifact        checkpoint
//	version         1
//	model           the model variant: rocone, rocone-trunc, rocone-se or cone
//	dim             the embedding dimension d
//	dataset         the dataset's name, as in the queries artifacts it was trained on
//	num_entities    number of entities
//	num_relations   number of relation ids (inverses included)
//	step            training steps completed; the next step to run has this 0-based index
//	lr              the current learning rate (after the drops so far)
//	warm_up_steps   the step index at or after which lr is next divided by 5 (a decimal
//	                number: it grows by ×1.5, as in the reference, and need not be whole)
//	adam_step       Adam's update count since the optimiser was last created (bias correction)
//	config          JSON: the training configuration (pkg/train Config)
//	model_config    JSON: the model configuration (pkg/model Config), what a model is built from
//	state           JSON: the rest of the training state (pkg/train): RNG states (PCG, as
//	                MarshalBinary bytes in base64), the data loaders' epochs and positions,
//	                the evaluation interval, a fingerprint of the train file, timings
//
// Numbers in the metadata are decimal; floats are written in Go's shortest round-trip
// form (strconv 'g', -1), so they read back bit-exact.

import (
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Tensor roles in a checkpoint.
const (
	RoleParam = "param"  // a model parameter
	RoleAdamM = "adam_m" // Adam's first-moment estimate of the parameter of the same name
	RoleAdamV = "adam_v" // Adam's second-moment estimate
)

// CheckpointMeta is the schema metadata of a checkpoint artifact; see the schema above.
type CheckpointMeta struct {
	Model        string
	Dim          int
	Dataset      string
	NumEntities  int
	NumRelations int
	Step         int64   // steps completed
	LR           float64 // current learning rate
	WarmUpSteps  float64 // next lr drop at the first step index ≥ this
	AdamStep     int64   // Adam updates since the optimiser was created
	Config       string  // JSON training configuration
	ModelConfig  string  // JSON model configuration
	State        string  // JSON training state
	// EntitiesDigest is the train queries' entities_digest (kg.Dataset.EntityDigest of the
	// KG, metadata key entities_digest): rank --top --data checks the dataset folder's
	// entity table against it. Empty in checkpoints written before it was recorded.
	EntitiesDigest string
	// KGDigest and TrainFingerprint are the model's lineage (metadata keys kg_digest and
	// train_fingerprint): the train file's KG digest and the train file's fingerprint (the
	// one the training state records to refuse a resume on another file). Every artifact
	// made with the model carries them on. Empty for a model imported from QE-ConE.
	KGDigest         string
	TrainFingerprint string
}

// Tensor is one row of a checkpoint: a named tensor in a role.
type Tensor struct {
	Name   string
	Role   string
	Shape  []int64
	Values []float32
}

// Checkpoint is a whole checkpoint artifact.
type Checkpoint struct {
	Meta    CheckpointMeta
	Tensors []Tensor
}

// Tensor returns the tensor with the given name and role, or nil.
func (c *Checkpoint) Tensor(name, role string) *Tensor {
	for i := range c.Tensors {
		if t := &c.Tensors[i]; t.Name == name && t.Role == role {
			return t
		}
	}
	return nil
}

// Columns of the checkpoint artifact, by index.
const (
	ckptColName = iota
	ckptColRole
	ckptColShape
	ckptColValues
)

var checkpointSpec = spec{
	kind:    "checkpoint",
	version: 1,
	fields: []arrow.Field{
		ckptColName:   {Name: "name", Type: arrow.BinaryTypes.String},
		ckptColRole:   {Name: "role", Type: arrow.BinaryTypes.String},
		ckptColShape:  {Name: "shape", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int64)},
		ckptColValues: {Name: "values", Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Float32)},
	},
}

func ckptFormatFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func (m *CheckpointMeta) check(name string) error {
	switch {
	case m.Model == "":
		return fmt.Errorf("%s: checkpoint metadata: empty model", name)
	case m.Dim <= 0:
		return fmt.Errorf("%s: checkpoint metadata: dim %d is not positive", name, m.Dim)
	case m.Dataset == "":
		return fmt.Errorf("%s: checkpoint metadata: empty dataset", name)
	case m.NumEntities <= 0 || m.NumRelations <= 0:
		return fmt.Errorf("%s: checkpoint metadata: num_entities %d and num_relations %d must be positive", name, m.NumEntities, m.NumRelations)
	case m.Step < 0 || m.AdamStep < 0:
		return fmt.Errorf("%s: checkpoint metadata: negative step or adam_step", name)
	case math.IsNaN(m.LR) || math.IsInf(m.LR, 0) || m.LR < 0:
		return fmt.Errorf("%s: checkpoint metadata: lr %g is not a non-negative number", name, m.LR)
	case math.IsNaN(m.WarmUpSteps) || math.IsInf(m.WarmUpSteps, 0):
		return fmt.Errorf("%s: checkpoint metadata: warm_up_steps %g is not a number", name, m.WarmUpSteps)
	}
	for _, j := range []struct{ key, val string }{{"config", m.Config}, {"model_config", m.ModelConfig}, {"state", m.State}} {
		if !json.Valid([]byte(j.val)) {
			return fmt.Errorf("%s: checkpoint metadata: %s is not valid JSON", name, j.key)
		}
	}
	return nil
}

func (m *CheckpointMeta) metadata() map[string]string {
	return map[string]string{
		"model":         m.Model,
		"dim":           strconv.Itoa(m.Dim),
		"dataset":       m.Dataset,
		"num_entities":  strconv.Itoa(m.NumEntities),
		"num_relations": strconv.Itoa(m.NumRelations),
		"step":          strconv.FormatInt(m.Step, 10),
		"lr":            ckptFormatFloat(m.LR),
		"warm_up_steps": ckptFormatFloat(m.WarmUpSteps),
		"adam_step":     strconv.FormatInt(m.AdamStep, 10),
		"config":        m.Config,
		"model_config":  m.ModelConfig,
		"state":         m.State,

		"entities_digest":    m.EntitiesDigest,
		MetaKG:               m.KGDigest,
		MetaTrainFingerprint: m.TrainFingerprint,
	}
}

// ckptCheckTensors checks the tensors against the contract: names and roles, shapes that
// match the values (ckptCheckTensor), no (name, role) twice, moments that match their
// parameter (ckptCheckAcross).
func ckptCheckTensors(name string, ts []Tensor) error {
	for i := range ts {
		if err := ckptCheckTensor(name, i, &ts[i]); err != nil {
			return err
		}
	}
	return ckptCheckAcross(name, ts)
}

// ckptCheckTensor checks tensor i on its own: a name, a known role, a shape that holds
// exactly its values.
func ckptCheckTensor(name string, i int, t *Tensor) error {
	switch {
	case t.Name == "":
		return fmt.Errorf("%s: tensor %d: empty name", name, i)
	case t.Role != RoleParam && t.Role != RoleAdamM && t.Role != RoleAdamV:
		return fmt.Errorf("%s: tensor %s: unknown role %q (want param, adam_m or adam_v)", name, t.Name, t.Role)
	}
	size := int64(1)
	for _, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("%s: tensor %s (%s): negative dimension in shape %v", name, t.Name, t.Role, t.Shape)
		}
		if d > 0 && size > math.MaxInt64/d {
			return fmt.Errorf("%s: tensor %s (%s): shape %v too large", name, t.Name, t.Role, t.Shape)
		}
		size *= d
	}
	if size != int64(len(t.Values)) {
		return fmt.Errorf("%s: tensor %s (%s): shape %v holds %d values, got %d", name, t.Name, t.Role, t.Shape, size, len(t.Values))
	}
	return nil
}

// ckptCheckAcross checks the tensors together, by their names, roles and shapes only: no
// (name, role) twice, and every moment with a parameter of its shape.
func ckptCheckAcross(name string, ts []Tensor) error {
	type key struct{ name, role string }
	seen := make(map[key]int, len(ts))
	for i := range ts {
		t := &ts[i]
		k := key{t.Name, t.Role}
		if _, dup := seen[k]; dup {
			return fmt.Errorf("%s: tensor %s (%s) appears twice", name, t.Name, t.Role)
		}
		seen[k] = i
	}
	for i := range ts {
		t := &ts[i]
		if t.Role == RoleParam {
			continue
		}
		p, ok := seen[key{t.Name, RoleParam}]
		if !ok {
			return fmt.Errorf("%s: tensor %s has %s but no param", name, t.Name, t.Role)
		}
		if !slices.Equal(ts[p].Shape, t.Shape) {
			return fmt.Errorf("%s: tensor %s: %s shape %v differs from the param's %v", name, t.Name, t.Role, t.Shape, ts[p].Shape)
		}
	}
	return nil
}

// WriteCheckpoint writes c as a checkpoint artifact at path, atomically (a temporary file
// renamed into place on success), or as an IPC stream on stdout for "-". On any error
// nothing new is left at path and a previous file there is untouched. The tensors' values
// are written without being copied.
func WriteCheckpoint(path string, c *Checkpoint) error {
	name := displayName(path, "stdout")
	if err := c.Meta.check(name); err != nil {
		return err
	}
	if err := ckptCheckTensors(name, c.Tensors); err != nil {
		return err
	}
	for i := range c.Tensors {
		if len(c.Tensors[i].Values) > math.MaxInt32 {
			return fmt.Errorf("%s: tensor %s has %d values, more than a list<float32> row holds (2^31−1)",
				name, c.Tensors[i].Name, len(c.Tensors[i].Values))
		}
	}
	schema := checkpointSpec.schema(c.Meta.metadata())
	w, err := createRecords(path, schema)
	if err != nil {
		return err
	}
	for i := range c.Tensors {
		rec := ckptRecord(schema, &c.Tensors[i])
		err := w.write(rec)
		rec.Release()
		if err != nil {
			w.abort()
			return err
		}
	}
	return w.close()
}

// ckptRecord builds the one-row record batch of a tensor. The values buffer wraps the
// tensor's memory.
func ckptRecord(schema *arrow.Schema, t *Tensor) arrow.Record {
	mem := memory.DefaultAllocator
	nameB := array.NewStringBuilder(mem)
	nameB.Append(t.Name)
	names := nameB.NewArray()
	nameB.Release()
	roleB := array.NewStringBuilder(mem)
	roleB.Append(t.Role)
	roles := roleB.NewArray()
	roleB.Release()

	shapeB := array.NewListBuilderWithField(mem, arrow.Field{Name: "item", Type: arrow.PrimitiveTypes.Int64})
	shapeB.Append(true)
	shapeB.ValueBuilder().(*array.Int64Builder).AppendValues(t.Shape, nil)
	shapes := shapeB.NewArray()
	shapeB.Release()

	raw := []byte{}
	if len(t.Values) > 0 {
		raw = arrow.Float32Traits.CastToBytes(t.Values)
	}
	vals := array.NewData(arrow.PrimitiveTypes.Float32, len(t.Values),
		[]*memory.Buffer{nil, memory.NewBufferBytes(raw)}, nil, 0, 0)
	offsets := arrow.Int32Traits.CastToBytes([]int32{0, int32(len(t.Values))})
	listData := array.NewData(checkpointSpec.fields[ckptColValues].Type, 1,
		[]*memory.Buffer{nil, memory.NewBufferBytes(offsets)}, []arrow.ArrayData{vals}, 0, 0)
	values := array.MakeFromData(listData)
	listData.Release()
	vals.Release()

	cols := []arrow.Array{names, roles, shapes, values}
	rec := array.NewRecord(schema, cols, 1)
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// ReadCheckpointMeta reads only the schema metadata of the checkpoint at path ("-" for
// stdin), after checking its kind, version and columns. From a file it reads the footer
// and schema, not the tensors.
func ReadCheckpointMeta(path string) (CheckpointMeta, error) {
	r, err := Open(path)
	if err != nil {
		return CheckpointMeta{}, err
	}
	defer r.Close()
	return checkpointMeta(r)
}

func checkpointMeta(r *Reader) (CheckpointMeta, error) {
	var m CheckpointMeta
	if err := checkpointSpec.check(r.name, r.Schema()); err != nil {
		return m, err
	}
	md := r.Schema().Metadata()
	name := r.name
	var err error
	str := func(key string, dst *string) {
		if err == nil {
			*dst, err = metaString(name, md, key)
		}
	}
	count := func(key string, dst *int) {
		if err == nil {
			*dst, err = metaCount(name, md, key)
		}
	}
	count64 := func(key string, dst *int64) {
		var n int
		count(key, &n)
		*dst = int64(n)
	}
	float := func(key string, dst *float64) {
		var s string
		str(key, &s)
		if err == nil {
			if *dst, err = strconv.ParseFloat(s, 64); err != nil {
				err = fmt.Errorf("%s: schema metadata %s=%q is not a number", name, key, s)
			}
		}
	}
	str("model", &m.Model)
	count("dim", &m.Dim)
	str("dataset", &m.Dataset)
	count("num_entities", &m.NumEntities)
	count("num_relations", &m.NumRelations)
	count64("step", &m.Step)
	float("lr", &m.LR)
	float("warm_up_steps", &m.WarmUpSteps)
	count64("adam_step", &m.AdamStep)
	str("config", &m.Config)
	str("model_config", &m.ModelConfig)
	str("state", &m.State)
	str(MetaKG, &m.KGDigest)
	str(MetaTrainFingerprint, &m.TrainFingerprint)
	if err != nil {
		return m, err
	}
	m.EntitiesDigest, _ = md.GetValue("entities_digest") // optional: absent in older files
	return m, m.check(name)
}

// ReadCheckpoint reads the whole checkpoint at path ("-" for stdin) and checks it against
// the contract. The tensors' values point into the buffers read, which are not reused.
func ReadCheckpoint(path string) (*Checkpoint, error) { return readCheckpoint(path, true) }

// ReadCheckpointParams is ReadCheckpoint for the stages that use a trained model but not
// its optimiser (embed, rank, metrics): the whole file is read and checked alike, but only
// the parameters are kept; each Adam moment is dropped as soon as its record is checked,
// so that memory holds the parameters (a third of a checkpoint with moments) rather than
// the whole file.
func ReadCheckpointParams(path string) (*Checkpoint, error) { return readCheckpoint(path, false) }

// bigTensor is the number of values (64 MiB) from which ReadCheckpointParams collects a
// dropped moment's memory at once.
const bigTensor = 1 << 24

func readCheckpoint(path string, moments bool) (*Checkpoint, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	meta, err := checkpointMeta(r)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{Meta: meta}
	for r.Next() {
		first := len(c.Tensors)
		if err := ckptDecode(r.name, r.Record(), &c.Tensors); err != nil {
			return nil, err
		}
		for i := first; i < len(c.Tensors); i++ {
			if err := ckptCheckTensor(r.name, i, &c.Tensors[i]); err != nil {
				return nil, err
			}
			if !moments && c.Tensors[i].Role != RoleParam {
				n := len(c.Tensors[i].Values)
				c.Tensors[i].Values = nil // checked; the shape stays for the checks across tensors
				if n >= bigTensor {
					// Collect it now: left to the pacer, the dropped moments pile up to twice
					// the live heap before a collection (see pipeline.loadModel for what it
					// saves).
					runtime.GC()
				}
			}
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if err := ckptCheckAcross(r.name, c.Tensors); err != nil {
		return nil, err
	}
	if !moments {
		c.Tensors = slices.DeleteFunc(c.Tensors, func(t Tensor) bool { return t.Role != RoleParam })
	}
	return c, nil
}

// ckptDecode appends the tensors of one record batch.
func ckptDecode(name string, rec arrow.Record, out *[]Tensor) error {
	first := int64(len(*out))
	for i, col := range rec.Columns() {
		if err := checkNoNulls(name, checkpointSpec.fields[i].Name, col, first); err != nil {
			return err
		}
	}
	names, err := stringValues(name, "name", rec.Column(ckptColName).(*array.String))
	if err != nil {
		return err
	}
	roles, err := stringValues(name, "role", rec.Column(ckptColRole).(*array.String))
	if err != nil {
		return err
	}
	shapeList := rec.Column(ckptColShape).(*array.List)
	shapeOff, err := ckptOffsets(name, "shape", shapeList)
	if err != nil {
		return err
	}
	shapeVals := shapeList.ListValues().(*array.Int64).Int64Values()
	valList := rec.Column(ckptColValues).(*array.List)
	valOff, err := ckptOffsets(name, "values", valList)
	if err != nil {
		return err
	}
	vals := valList.ListValues().(*array.Float32).Float32Values()
	if int(shapeOff[len(shapeOff)-1]) > len(shapeVals) || int(valOff[len(valOff)-1]) > len(vals) {
		return fmt.Errorf("%s: corrupt list offsets", name)
	}
	for k := 0; k < int(rec.NumRows()); k++ {
		a, b := valOff[k], valOff[k+1]
		sa, sb := shapeOff[k], shapeOff[k+1]
		*out = append(*out, Tensor{
			Name:   strings.Clone(names.Value(k)),
			Role:   strings.Clone(roles.Value(k)),
			Shape:  append([]int64(nil), shapeVals[sa:sb]...),
			Values: vals[a:b:b],
		})
	}
	return nil
}

// ckptOffsets returns a list array's offsets, one more than its length, checked to be in
// order (the IPC readers do not check, and slicing must not panic on a corrupt file).
func ckptOffsets(name, col string, a *array.List) ([]int32, error) {
	n := a.Len()
	all := a.Offsets()
	start := a.Data().Offset()
	if n == 0 {
		return []int32{0}, nil
	}
	if start+n+1 > len(all) {
		return nil, fmt.Errorf("%scolumn %s: corrupt list offsets", named(name), col)
	}
	off := all[start : start+n+1]
	limit := a.ListValues().Len()
	if err := checkOffsets(off, limit); err != nil {
		return nil, fmt.Errorf("%scolumn %s: %w", named(name), col, err)
	}
	if off[0] < 0 {
		return nil, fmt.Errorf("%scolumn %s: corrupt list offsets", named(name), col)
	}
	return off, nil
}
