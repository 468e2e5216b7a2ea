package qecone

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nlpodyssey/gopickle/pytorch"
	"github.com/nlpodyssey/gopickle/types"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/picklescan"
)

// ImportOptions says what Import reads.
type ImportOptions struct {
	// Checkpoint is QE-ConE's checkpoint: the file main.py's save_model writes with
	// torch.save (named `checkpoint`), or the folder holding it.
	Checkpoint string
	// Config is QE-ConE's config.json (main.py writes it beside the checkpoint, with the
	// run's arguments). "" means the config.json beside the checkpoint, if there is one.
	Config string
	// Lambda is ConE's center_reg (λ), which the checkpoint does not hold; nil means
	// config.json's center_reg (an error if there is none). When both are given they must
	// agree.
	Lambda *float64
	// Dataset names the dataset in the artifact; "" means KG's name, else config.json's
	// data_path's last element, else "qecone".
	Dataset string
	// KG, if not nil, is the KG the model was trained on: its sizes must be the
	// checkpoint's, and its digest is recorded as the checkpoint's lineage (KGDigest), so
	// that rank, embed and metrics check queries and datasets against it as they do for a
	// model trained here. nil records none (those stages then warn).
	KG *kg.Dataset
}

// stateDictNames maps QE-ConE's KGReasoning state_dict keys to this project's tensor
// names (model.Params.Tensors). PyTorch's nn.Linear weight is [out][in], row-major, the
// project's layout.
var stateDictNames = map[string]string{
	"entity_embedding":                     "entity",
	"axis_embedding":                       "relation.axis",
	"arg_embedding":                        "relation.aperture",
	"modulus":                              "modulus",
	"cone_intersection.layer_axis1.weight": "intersection.w1",
	"cone_intersection.layer_axis1.bias":   "intersection.b1",
	"cone_intersection.layer_axis2.weight": "intersection.w2",
	"cone_intersection.layer_axis2.bias":   "intersection.b2",
	"cone_intersection.layer_arg1.weight":  "intersection.w3",
	"cone_intersection.layer_arg1.bias":    "intersection.b3",
	"cone_intersection.layer_arg2.weight":  "intersection.w4",
	"cone_intersection.layer_arg2.bias":    "intersection.b4",
	"cone_proj.layer1.weight":              "projection.w1",
	"cone_proj.layer1.bias":                "projection.b1",
	"cone_proj.layer2.weight":              "projection.w2",
	"cone_proj.layer2.bias":                "projection.b2",
	"cone_proj.layer0.weight":              "projection.w3",
	"cone_proj.layer0.bias":                "projection.b3",
}

// constants are the state_dict entries that are not trained (requires_grad=False), so not
// in the optimiser's parameter list.
var constants = map[string]bool{"gamma": true, "embedding_range": true}

// Import converts a QE-ConE checkpoint (ConE, KGReasoning) into this project's checkpoint
// artifact for the cone variant: parameters under the project's names, Adam's moments,
// and metadata from which embed, rank and metrics rebuild the model. What the PyTorch
// file does not hold (λ, the dataset's name, the training configuration) comes from
// config.json or the options. The result is for scoring: it has no training state (RNG
// streams, loader positions), so `train --resume` refuses it.
func Import(opts ImportOptions) (*artifact.Checkpoint, error) {
	path := opts.Checkpoint
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "checkpoint")
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("QE-ConE checkpoint: %w", err)
	}
	cfg, cfgPath, err := readConfig(opts.Config, filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	top, err := loadTorch(path)
	if err != nil {
		return nil, err
	}
	// fail prefixes the file's name; a %w in format keeps the cause visible to errors.As.
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%s: "+format, append([]any{path}, a...)...)
	}
	sd, err := dictGet(top, "model_state_dict")
	if err != nil {
		return nil, fail("%w (not a checkpoint written by QE-ConE's save_model?)", err)
	}
	state, ok := sd.(*types.OrderedDict)
	if !ok {
		return nil, fail("model_state_dict is a %s, want an OrderedDict", picklescan.PyType(sd))
	}

	// The state_dict, in order (the optimiser numbers the trainable ones in this order).
	var entries []sdEntry
	byKey := map[string]*sdEntry{}
	for el := state.List.Front(); el != nil; el = el.Next() {
		e := el.Value.(*types.OrderedDictEntry)
		k, ok := e.Key.(string)
		if !ok {
			return nil, fail("model_state_dict key %v is not a string", e.Key)
		}
		shape, vals, err := tensorValues(e.Value)
		if err != nil {
			return nil, fail("model_state_dict[%q]: %w", k, err)
		}
		entries = append(entries, sdEntry{k, shape, vals})
	}
	for i := range entries {
		byKey[entries[i].key] = &entries[i]
	}
	for _, e := range entries {
		if _, known := stateDictNames[e.key]; !known && !constants[e.key] {
			return nil, fail("model_state_dict has %q, which ConE's KGReasoning (2-layer projection MLP) does not", e.key)
		}
	}
	for k := range stateDictNames {
		if byKey[k] == nil {
			return nil, fail("model_state_dict has no %q", k)
		}
	}
	for k := range constants {
		if e := byKey[k]; e == nil || len(e.vals) != 1 {
			return nil, fail("model_state_dict has no scalar %q", k)
		}
	}

	ent := byKey["entity_embedding"]
	if len(ent.shape) != 2 {
		return nil, fail("entity_embedding has shape %v, want [entities, d]", ent.shape)
	}
	nE, d := ent.shape[0], ent.shape[1]
	rel := byKey["axis_embedding"]
	if len(rel.shape) != 2 || rel.shape[1] != d {
		return nil, fail("axis_embedding has shape %v, want [relations, %d]", rel.shape, d)
	}
	nR := rel.shape[0]
	l1 := byKey["cone_proj.layer1.weight"]
	if len(l1.shape) != 2 {
		return nil, fail("cone_proj.layer1.weight has shape %v", l1.shape)
	}
	hidden := l1.shape[0]
	gamma := float64(byKey["gamma"].vals[0])
	// The angle scale: the project derives R = (γ + 2)/d; QE-ConE stores it.
	if r, want := byKey["embedding_range"].vals[0], float32((gamma+2)/float64(d)); r != want {
		return nil, fail("embedding_range %g is not (gamma + 2)/d = %g: not ConE's angle scale", r, want)
	}

	// config.json is main.py's arguments for the run that wrote the checkpoint: one of
	// another run (another dimension, γ or KG) would record that run's λ and training
	// configuration under this model.
	if err := crossCheck(cfg, cfgPath, path, []implied{{"hidden_dim", float64(d), "dim d"}, {"gamma", gamma, "gamma"},
		{"nentity", float64(nE), "entity count"}, {"nrelation", float64(nR), "relation count"}}); err != nil {
		return nil, err
	}
	lambda, err := pickLambda(opts.Lambda, cfg, cfgPath)
	if err != nil {
		return nil, err
	}
	drop := cfg.float("drop", 0)
	mc := model.Config{Variant: model.ConE, NumEntities: nE, NumRelations: nR, Dim: d, Gamma: gamma,
		CenterReg: lambda, Drop: drop, ConeHidden: hidden}
	if err := mc.Validate(); err != nil {
		return nil, fail("%w", err)
	}
	params := model.NewParams[float32](mc)
	var tensors []artifact.Tensor
	names := map[string]string{} // project name → state_dict key
	for k, n := range stateDictNames {
		names[n] = k
	}
	for _, t := range params.Tensors() {
		e := byKey[names[t.Name]]
		if len(e.vals) != t.Rows*t.Cols {
			return nil, fail("%s has shape %v, the model (d %d, hidden %d) needs %d×%d", e.key, e.shape, d, hidden, t.Rows, t.Cols)
		}
		if len(e.shape) == 2 && (e.shape[0] != t.Rows || e.shape[1] != t.Cols) {
			return nil, fail("%s has shape %v, the model (d %d, hidden %d) needs [%d %d]", e.key, e.shape, d, hidden, t.Rows, t.Cols)
		}
		for i, v := range e.vals {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fail("%s[%d] is %v", e.key, i, v)
			}
		}
		tensors = append(tensors, artifact.Tensor{Name: t.Name, Role: artifact.RoleParam,
			Shape: []int64{int64(t.Rows), int64(t.Cols)}, Values: e.vals})
	}

	// Adam: optimizer_state_dict's state is keyed by the index of the parameter among the
	// trainable ones, in state_dict order.
	var trainable []string
	for _, e := range entries {
		if !constants[e.key] {
			trainable = append(trainable, e.key)
		}
	}
	adamStep, moments, err := adamState(top, trainable, byKey)
	if err != nil {
		return nil, fail("%w", err)
	}
	for _, t := range params.Tensors() {
		if m, ok := moments[names[t.Name]]; ok {
			shape := []int64{int64(t.Rows), int64(t.Cols)}
			tensors = append(tensors,
				artifact.Tensor{Name: t.Name, Role: artifact.RoleAdamM, Shape: shape, Values: m[0]},
				artifact.Tensor{Name: t.Name, Role: artifact.RoleAdamV, Shape: shape, Values: m[1]})
		}
	}

	step, _ := dictNumber(top, "step")
	lr, hasLR := dictNumber(top, "current_learning_rate")
	if !hasLR {
		lr = cfg.float("learning_rate", 0)
	}
	warm, hasWarm := dictNumber(top, "warm_up_steps")
	if !hasWarm {
		warm = 0
	}
	dataset := opts.Dataset
	var kgDigest string
	if g := opts.KG; g != nil {
		if g.NumEntities != nE || g.NumRelations != nR {
			return nil, fail("%d entities and %d relations, but the KG %s has %d and %d: not the KG the model was trained on",
				nE, nR, g.Dir, g.NumEntities, g.NumRelations)
		}
		kgDigest = g.Digest()
		if dataset == "" {
			dataset = g.Name
		}
	}
	if dataset == "" {
		dataset = "qecone"
		if dp, ok := cfg["data_path"].(string); ok && dp != "" {
			dataset = filepath.Base(strings.TrimRight(dp, "/"))
		}
	}
	if err := kg.CheckName(dataset); err != nil {
		if opts.Dataset != "" {
			return nil, fmt.Errorf("--dataset %q: %w", opts.Dataset, err)
		}
		return nil, fail("dataset name %q (from --data or config.json's data_path): %w; name it with --dataset", dataset, err)
	}
	// The training configuration, in pkg/train's keys, from QE-ConE's arguments.
	trainCfg := map[string]any{
		"model": string(model.ConE), "dim": d, "gamma": gamma, "lambda": lambda, "dropout": drop,
		"batch": int(cfg.float("batch_size", 0)), "negatives": int(cfg.float("negative_sample_size", 0)),
		"lr": cfg.float("learning_rate", lr), "steps": int(cfg.float("max_steps", step+1)),
		"eval_every": 0, "checkpoint_every": 0, "seed": uint64(max(cfg.float("seed", 0), 0)),
		"cone_hidden": hidden, "dataset": dataset, "num_entities": nE, "num_relations": nR,
	}
	cj, err := json.Marshal(trainCfg)
	if err != nil {
		return nil, err
	}
	mj, err := json.Marshal(mc)
	if err != nil {
		return nil, err
	}
	sj, err := json.Marshal(map[string]any{"imported_from": "QE-ConE", "source": path, "qecone_step": step})
	if err != nil {
		return nil, err
	}
	return &artifact.Checkpoint{
		Meta: artifact.CheckpointMeta{
			Model: string(model.ConE), Dim: d, Dataset: dataset, NumEntities: nE, NumRelations: nR,
			// QE-ConE saves after running step index `step`: step+1 steps are done.
			Step: int64(step) + 1, LR: lr, WarmUpSteps: warm, AdamStep: adamStep,
			Config: string(cj), ModelConfig: string(mj), State: string(sj), KGDigest: kgDigest,
		},
		Tensors: tensors,
	}, nil
}

// qeConfig is QE-ConE's config.json (main.py's arguments), or empty.
type qeConfig map[string]any

func (c qeConfig) float(key string, def float64) float64 {
	if v, ok := c[key].(float64); ok {
		return v
	}
	return def
}

func readConfig(path, dir string) (qeConfig, string, error) {
	explicit := path != ""
	if !explicit {
		path = filepath.Join(dir, "config.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return qeConfig{}, "", nil
		}
		return nil, "", fmt.Errorf("QE-ConE config: %w", err)
	}
	var c qeConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, "", fmt.Errorf("QE-ConE config %s: not a JSON object: %w", path, err)
	}
	return c, path, nil
}

// implied is a value the checkpoint's tensors give, under its config.json key.
type implied struct {
	key  string
	val  float64
	what string
}

// crossCheck refuses a config.json whose keys disagree with what the checkpoint's
// tensors imply. γ is stored as float32 in the checkpoint: compared in float32.
func crossCheck(cfg qeConfig, cfgPath, ckPath string, want []implied) error {
	for _, w := range want {
		raw, present := cfg[w.key]
		if !present {
			continue
		}
		v, ok := raw.(float64)
		if !ok {
			return fmt.Errorf("%s's %s is %v, not a number", cfgPath, w.key, raw)
		}
		if float32(v) != float32(w.val) {
			return fmt.Errorf("%s's %s %g disagrees with the checkpoint %s, whose %s is %g: a config.json of another run? (give the run's own with --config)",
				cfgPath, w.key, v, ckPath, w.what, w.val)
		}
	}
	return nil
}

func pickLambda(flag *float64, cfg qeConfig, cfgPath string) (float64, error) {
	v, ok := cfg["center_reg"].(float64)
	// As train's lambda: ConE's loss weighs the inside distance by it.
	bad := func(l float64) bool { return math.IsNaN(l) || math.IsInf(l, 0) || l < 0 }
	switch {
	case flag != nil && bad(*flag):
		return 0, fmt.Errorf("--lambda %g: λ (ConE's center_reg, the weight of the inside distance) must be a finite number ≥ 0", *flag)
	case ok && bad(v):
		return 0, fmt.Errorf("%s's center_reg %g: λ (the weight of the inside distance) must be a finite number ≥ 0", cfgPath, v)
	case cfg["center_reg"] != nil && !ok:
		return 0, fmt.Errorf("%s's center_reg is %v, not a number", cfgPath, cfg["center_reg"])
	case flag != nil && ok && *flag != v:
		return 0, fmt.Errorf("--lambda %g disagrees with %s's center_reg %g", *flag, cfgPath, v)
	case flag != nil:
		return *flag, nil
	case ok:
		return v, nil
	case cfgPath == "":
		return 0, fmt.Errorf("λ (ConE's center_reg) is not in a QE-ConE checkpoint: give --lambda, or --config with QE-ConE's config.json")
	}
	return 0, fmt.Errorf("%s has no center_reg: give --lambda", cfgPath)
}

// loadTorch reads a torch.save file, turning gopickle's panics on malformed input into
// errors.
func loadTorch(path string) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: not a readable PyTorch file: %v", path, r)
		}
	}()
	if err := checkTorchFile(path); err != nil {
		return nil, fmt.Errorf("%s: not a readable PyTorch file: %w", path, err)
	}
	v, err = pytorch.Load(path)
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable PyTorch file: %w", path, err)
	}
	return v, nil
}

// dictGet returns d[key] for a pickled dict. A pickle may set a key more than once;
// Python keeps the last value, where gopickle's Dict keeps every entry and its Get
// returns the first.
func dictGet(d any, key string) (any, error) {
	switch m := d.(type) {
	case *types.Dict:
		for i := len(*m) - 1; i >= 0; i-- {
			if k, ok := (*m)[i].Key.(string); ok && k == key {
				return (*m)[i].Value, nil
			}
		}
	case *types.OrderedDict:
		if v, ok := m.Get(key); ok {
			return v, nil
		}
	default:
		return nil, fmt.Errorf("the file holds a %s, not a dict", picklescan.PyType(d))
	}
	return nil, fmt.Errorf("no %q entry", key)
}

// dictNumber returns d[key] as a number (int, float or a one-element tensor).
func dictNumber(d any, key string) (float64, bool) {
	v, err := dictGet(d, key)
	if err != nil {
		return 0, false
	}
	return number(v)
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case *pytorch.Tensor:
		_, vals, err := tensorValues(x)
		if err == nil && len(vals) == 1 {
			return float64(vals[0]), true
		}
	}
	return 0, false
}

// tensorValues returns a float32 tensor's shape and values, row-major.
func tensorValues(v any) ([]int, []float32, error) {
	t, ok := v.(*pytorch.Tensor)
	if !ok {
		return nil, nil, fmt.Errorf("a %s, not a tensor", picklescan.PyType(v))
	}
	st, ok := t.Source.(*pytorch.FloatStorage)
	if !ok {
		return nil, nil, fmt.Errorf("a %s tensor, not torch.float32", picklescan.TorchDtype(t.Source))
	}
	n := 1
	for _, s := range t.Size {
		n *= s
	}
	// Row-major strides of the size: the only layout state_dicts hold here.
	want := make([]int, len(t.Size))
	acc := 1
	for i := len(t.Size) - 1; i >= 0; i-- {
		want[i] = acc
		acc *= t.Size[i]
	}
	if n > 1 && !slices.Equal(t.Stride, want) {
		return nil, nil, fmt.Errorf("strides %v for size %v: not a contiguous tensor", t.Stride, t.Size)
	}
	if t.StorageOffset < 0 || t.StorageOffset+n > len(st.Data) {
		return nil, nil, fmt.Errorf("size %v at offset %d overruns its storage of %d values", t.Size, t.StorageOffset, len(st.Data))
	}
	return slices.Clone(t.Size), slices.Clone(st.Data[t.StorageOffset : t.StorageOffset+n]), nil
}

// sdEntry is one state_dict tensor.
type sdEntry struct {
	key   string
	shape []int
	vals  []float32
}

// adamState reads torch.optim.Adam's state_dict: per trainable parameter (numbered in
// state_dict order) its step and moments. It returns the largest step (this project's
// adam_step; a parameter PyTorch skipped while it had no gradient has a smaller one, which
// the artifact cannot say: it matters only to a resumed run, which an import is not) and
// the moments by state_dict key. A parameter without state (never stepped) has none.
func adamState(top any, trainable []string, byKey map[string]*sdEntry) (int64, map[string][2][]float32, error) {
	out := map[string][2][]float32{}
	osd, err := dictGet(top, "optimizer_state_dict")
	if err != nil {
		return 0, out, nil // no optimiser state: the moments are left out
	}
	st, err := dictGet(osd, "state")
	if err != nil {
		return 0, nil, fmt.Errorf("optimizer_state_dict: %w", err)
	}
	state, ok := st.(*types.Dict)
	if !ok {
		return 0, nil, fmt.Errorf("optimizer_state_dict state is a %s, want a dict", picklescan.PyType(st))
	}
	steps := map[string]int64{} // by parameter: the last entry of an index is the one Python keeps
	for _, e := range *state {
		idx, ok := e.Key.(int)
		if !ok || idx < 0 || idx >= len(trainable) {
			return 0, nil, fmt.Errorf("optimizer_state_dict state key %v: want a parameter index in [0,%d)", e.Key, len(trainable))
		}
		key := trainable[idx]
		step, ok := dictNumber(e.Value, "step")
		if !ok {
			return 0, nil, fmt.Errorf("optimizer state of %s has no step", key)
		}
		steps[key] = int64(step)
		var mv [2][]float32
		for j, name := range []string{"exp_avg", "exp_avg_sq"} {
			v, err := dictGet(e.Value, name)
			if err != nil {
				return 0, nil, fmt.Errorf("optimizer state of %s: %w", key, err)
			}
			_, vals, err := tensorValues(v)
			if err != nil {
				return 0, nil, fmt.Errorf("optimizer state of %s, %s: %w", key, name, err)
			}
			if len(vals) != len(byKey[key].vals) {
				return 0, nil, fmt.Errorf("optimizer state of %s, %s: %d values for a parameter of %d", key, name, len(vals), len(byKey[key].vals))
			}
			mv[j] = vals
		}
		out[key] = mv
	}
	var maxStep int64
	for _, step := range steps {
		maxStep = max(maxStep, step)
	}
	return maxStep, out, nil
}
