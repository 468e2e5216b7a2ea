package train

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/model"
)

// Config is the configuration of a training run: everything that fixes its trajectory.
// It is stored as JSON (these keys) in every checkpoint and train log; a resumed run
// keeps it, except for the keys of ResumableKeys.
type Config struct {
	Model      string  `json:"model"`       // rocone, rocone-trunc, rocone-se or cone
	Dim        int     `json:"dim"`         // d
	Batch      int     `json:"batch"`       // b, queries per update (each of the three per step)
	Negatives  int     `json:"negatives"`   // k, negatives per query
	Gamma      float64 `json:"gamma"`       // γ, the margin
	LR         float64 `json:"lr"`          // the initial learning rate
	Lambda     float64 `json:"lambda"`      // λ, the weight of the inside distance
	Dropout    float64 `json:"dropout"`     // intersection dropout on input apertures
	Steps      int     `json:"steps"`       // max_steps: step indices run 0 … Steps−1
	EvalEvery  int     `json:"eval_every"`  // validate at step indices s > 0, s % EvalEvery == 0 (×4 at 2·Steps//3); 0: never
	Seed       uint64  `json:"seed"`        // initialisation, sampling, shuffling and dropout
	ConeHidden int     `json:"cone_hidden"` // ConE's MLP hidden width; 0: 1600 (cone only)
	// CheckpointEvery writes a checkpoint every this many completed steps; 0: only at the end.
	CheckpointEvery int `json:"checkpoint_every"`
	// SparseAdam updates only the table rows each batch touched (train --adam sparse,
	// adam_sparse.go): a deviation from the paper's dense Adam, off by default. Left out of
	// the JSON when false, so dense runs' configurations read as before.
	SparseAdam bool `json:"sparse_adam,omitempty"`
	// Matmul is the precision of the linear layers' matrix products (train --matmul):
	// "tf32" rounds their factors to TF32 (compute.MatmulTF32; tensor cores on CUDA, the
	// rounding reference on the CPU), as PyTorch 1.7–1.11 did on A100s by default; FP32,
	// the default, is stored as "" and left out of the JSON (Set maps "fp32" to it), so
	// FP32 runs' configurations read as before.
	Matmul string `json:"matmul,omitempty"`

	// KeepBest also writes the checkpoint of the best validation so far, by BestMetric,
	// beside the last (train --keep-best, best.go). Left out of the JSON when false.
	KeepBest bool `json:"keep_best,omitempty"`
	// BestMetric is what "best" compares, in ParseBestMetric's canonical form (e.g.
	// "mrr:epfo", "hits@10:2p"); set (by Normalize, "mrr:epfo" by default) exactly when
	// KeepBest or Patience is, and left out of the JSON otherwise.
	BestMetric string `json:"best_metric,omitempty"`
	// Patience stops training after this many validations in a row without an improvement
	// of BestMetric (early stopping); 0: never. Left out of the JSON when 0.
	Patience int `json:"patience,omitempty"`

	// The knowledge graph, taken from the train file.
	Dataset      string `json:"dataset"`
	NumEntities  int    `json:"num_entities"`
	NumRelations int    `json:"num_relations"`
}

// Default is the configuration used when neither a preset nor a flag gives a value: the
// FB15k-237 preset's optimisation hyper-parameters (b 512, n 128, γ 30, lr 5e-5, λ 0.1,
// dropout 0.1) on a small, quick run: d 64, 1001 steps, validation every 250, a
// checkpoint every 1000.
func Default() Config {
	return Config{
		Model: string(model.RoConE), Dim: 64, Batch: 512, Negatives: 128,
		Gamma: 30, LR: 5e-5, Lambda: 0.1, Dropout: 0.1,
		Steps: 1001, EvalEvery: 250, CheckpointEvery: 1000,
	}
}

// Presets are docs/training.md §5.3's RoConE reproduction configurations. Keys a preset does
// not give (model, seed, checkpoint_every) keep their defaults.
var Presets = map[string]map[string]any{
	"fb15k-237": {"dim": 1600, "batch": 512, "negatives": 128, "gamma": 30.0, "lr": 5e-5,
		"lambda": 0.1, "dropout": 0.1, "steps": 300001, "eval_every": 30000},
	"nell995": {"dim": 800, "batch": 512, "negatives": 128, "gamma": 20.0, "lr": 1e-4,
		"lambda": 0.02, "dropout": 0.2, "steps": 300001, "eval_every": 60000},
}

// presetAliases are other names of the presets: the dataset folders' names.
var presetAliases = map[string]string{"nell-995": "nell995"}

// PresetName returns the preset a name means: a preset's own name, or an alias (the
// dataset folder's name, nell-995 for nell995).
func PresetName(name string) string {
	if p, ok := presetAliases[name]; ok {
		return p
	}
	return name
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(Presets))
	for n := range Presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ResumableKeys are the keys a resumed run may change: how long it runs and how often it
// validates and checkpoints. None of them changes what a step computes. (Changing steps
// moves the ×4 point of the validation interval, 2·steps//3; the learning-rate schedule
// continues from the checkpoint's bookkeeping, as the reference does on restore.)
//
// patience may change too: it only decides when the run stops (a run that stopped early
// continues when resumed with a larger patience, or 0), never what a step computes.
var ResumableKeys = []string{"steps", "eval_every", "checkpoint_every", "patience"}

// Setting is one configuration value given by the user: the Config key (its JSON name),
// the value, and where it came from (a flag, a preset) for error messages.
type Setting struct {
	Key    string
	Value  any
	Source string
}

// configField returns the field of c with the given JSON key.
func configField(c *Config, key string) (reflect.Value, bool) {
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if strings.Split(t.Field(i).Tag.Get("json"), ",")[0] == key {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// Get returns the value of the key.
func (c Config) Get(key string) (any, error) {
	f, ok := configField(&c, key)
	if !ok {
		return nil, fmt.Errorf("unknown configuration key %q", key)
	}
	return f.Interface(), nil
}

// Set sets the key to value, which must be convertible to the field's type without loss
// (an integral float for an integer field, a non-negative integer for the seed).
func (c *Config) Set(key string, value any) error {
	f, ok := configField(c, key)
	if !ok {
		return fmt.Errorf("unknown configuration key %q", key)
	}
	v := reflect.ValueOf(value)
	if key == "matmul" {
		str, ok := value.(string)
		if !ok {
			return fmt.Errorf("%s: want fp32 or tf32, got %s", key, ValueText(value))
		}
		m, err := compute.ParseMatmul(str)
		if err != nil {
			return err
		}
		f.SetString(canonicalMatmul(m))
		return nil
	}
	if key == "best_metric" {
		str, ok := value.(string)
		if !ok {
			return fmt.Errorf("%s: want a metric such as mrr:epfo, got %s", key, ValueText(value))
		}
		if str == "" {
			f.SetString("")
			return nil
		}
		m, err := ParseBestMetric(str)
		if err != nil {
			return err
		}
		f.SetString(m.String())
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		if v.Kind() != reflect.String {
			return fmt.Errorf("%s: want a string, got %s", key, ValueText(value))
		}
		f.SetString(v.String())
	case reflect.Bool:
		if v.Kind() != reflect.Bool {
			return fmt.Errorf("%s: want true or false, got %s", key, ValueText(value))
		}
		f.SetBool(v.Bool())
	case reflect.Float64:
		switch {
		case v.CanFloat():
			f.SetFloat(v.Float())
		case v.CanInt():
			f.SetFloat(float64(v.Int()))
		case v.CanUint():
			f.SetFloat(float64(v.Uint()))
		default:
			return fmt.Errorf("%s: want a number, got %s", key, ValueText(value))
		}
	case reflect.Int, reflect.Uint64:
		var x float64
		switch {
		case v.CanInt():
			if f.Kind() == reflect.Uint64 && v.Int() < 0 {
				return fmt.Errorf("%s: want a non-negative integer, got %s", key, ValueText(value))
			}
			if f.Kind() == reflect.Int {
				f.SetInt(v.Int())
			} else {
				f.SetUint(uint64(v.Int()))
			}
			return nil
		case v.CanUint():
			if f.Kind() == reflect.Int {
				if v.Uint() > math.MaxInt64 {
					return fmt.Errorf("%s: %v is too large", key, value)
				}
				f.SetInt(int64(v.Uint()))
			} else {
				f.SetUint(v.Uint())
			}
			return nil
		case v.CanFloat():
			x = v.Float()
		default:
			return fmt.Errorf("%s: want an integer, got %s", key, ValueText(value))
		}
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 || (f.Kind() == reflect.Uint64 && x < 0) {
			return fmt.Errorf("%s: want an integer, got %s", key, ValueText(value))
		}
		if f.Kind() == reflect.Int {
			f.SetInt(int64(x))
		} else {
			f.SetUint(uint64(x))
		}
	default:
		return fmt.Errorf("%s: unsupported field type", key)
	}
	return nil
}

// canonicalMatmul is how Config stores a precision: "" for FP32, "tf32".
func canonicalMatmul(m compute.Matmul) string {
	if m.TF32() {
		return string(m)
	}
	return ""
}

// shown is a configuration value as a message shows it: FP32 by its name.
func shown(key string, v any) any {
	if key == "matmul" && v == "" {
		return compute.MatmulFP32
	}
	return v
}

// NewConfig builds a fresh run's configuration: the defaults, overlaid by the preset (if
// not empty), overlaid by the settings, in that order of precedence (settings win).
func NewConfig(preset string, settings []Setting) (Config, error) {
	c := Default()
	if preset != "" {
		p, ok := Presets[PresetName(preset)]
		if !ok {
			return c, fmt.Errorf("unknown preset %q (known: %s)", preset, strings.Join(PresetNames(), ", "))
		}
		for k, v := range p {
			if err := c.Set(k, v); err != nil {
				return c, err
			}
		}
	}
	for _, s := range settings {
		if err := c.Set(s.Key, s.Value); err != nil {
			return c, fmt.Errorf("%s: %w", s.Source, err)
		}
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	c.Normalize()
	return c, nil
}

// Normalize fills in what the other values imply: the default BestMetric, mrr:epfo,
// when KeepBest or Patience asks for a best validation and none is named.
func (c *Config) Normalize() {
	if (c.KeepBest || c.Patience > 0) && c.BestMetric == "" {
		c.BestMetric = DefaultBestMetric
	}
}

// ResumeConfig is the configuration of a run resumed from a checkpoint saved with saved
// after stepsDone steps: saved itself, with the keys of ResumableKeys changed where the
// settings give them. A setting of any other key must equal the saved value; otherwise
// the error names the setting's source. A preset given on resume is checked the same
// way: pass its values as settings (for keys no flag gives). steps may be raised, but
// not set below stepsDone.
func ResumeConfig(saved Config, stepsDone int, settings []Setting) (Config, error) {
	c := saved
	for _, s := range settings {
		resumable := false
		for _, k := range ResumableKeys {
			resumable = resumable || k == s.Key
		}
		if resumable {
			if err := c.Set(s.Key, s.Value); err != nil {
				return c, fmt.Errorf("%s: %w", s.Source, err)
			}
			continue
		}
		var probe Config = saved
		if err := probe.Set(s.Key, s.Value); err != nil {
			return c, fmt.Errorf("%s: %w", s.Source, err)
		}
		want, _ := saved.Get(s.Key)
		got, _ := probe.Get(s.Key)
		if want != got {
			return c, fmt.Errorf("%s conflicts with the checkpoint: it sets %s %v, the checkpoint was trained with %s %v "+
				"(a resumed run keeps its configuration; only %s may change)",
				s.Source, s.Key, shown(s.Key, got), s.Key, shown(s.Key, want), strings.Join(ResumableKeys, ", "))
		}
	}
	if c.Steps < stepsDone {
		return c, fmt.Errorf("steps %d is below the %d steps the checkpoint has done", c.Steps, stepsDone)
	}
	if c.Patience > 0 && saved.BestMetric == "" {
		return c, fmt.Errorf("patience %d: the checkpoint's run kept no best validation to count from (it was started "+
			"with neither --keep-best nor --patience); early stopping must be asked for when a run starts", c.Patience)
	}
	return c, c.Validate()
}

// Validate checks the configuration's values. The KG's fields may be unset (they come
// from the train file).
func (c Config) Validate() error {
	if _, err := model.ParseVariant(c.Model); err != nil {
		return err
	}
	switch {
	case c.Dim <= 0:
		return fmt.Errorf("dim must be positive, got %d", c.Dim)
	case c.Batch <= 0:
		return fmt.Errorf("batch must be positive, got %d", c.Batch)
	case c.Negatives <= 0:
		return fmt.Errorf("negatives must be positive, got %d", c.Negatives)
	case !(c.Gamma >= 0) || math.IsInf(c.Gamma, 0):
		return fmt.Errorf("gamma (the margin) must be a finite number ≥ 0, got %g", c.Gamma)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("lr must be a finite number > 0, got %g", c.LR)
	case !(c.Lambda >= 0) || math.IsInf(c.Lambda, 0):
		return fmt.Errorf("lambda (the weight of the inside distance) must be a finite number ≥ 0, got %g", c.Lambda)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return fmt.Errorf("dropout must be in [0, 1), got %g", c.Dropout)
	case c.Steps <= 0:
		return fmt.Errorf("steps must be positive, got %d", c.Steps)
	case c.EvalEvery < 0:
		return fmt.Errorf("eval-every must not be negative, got %d", c.EvalEvery)
	case c.CheckpointEvery < 0:
		return fmt.Errorf("checkpoint-every must not be negative, got %d", c.CheckpointEvery)
	case c.ConeHidden < 0:
		return fmt.Errorf("cone-hidden must not be negative, got %d", c.ConeHidden)
	case c.ConeHidden != 0 && c.Model != string(model.ConE):
		return fmt.Errorf("cone-hidden %d: the hidden width of ConE's projection MLP applies to --model cone only, not %s", c.ConeHidden, c.Model)
	case c.Matmul != "" && c.Matmul != string(compute.MatmulTF32):
		return fmt.Errorf("matmul %q: want fp32 (stored as no value) or tf32", c.Matmul)
	case c.Patience < 0:
		return fmt.Errorf("patience must not be negative (0: no early stopping), got %d", c.Patience)
	case c.Patience > 0 && c.EvalEvery == 0:
		return fmt.Errorf("patience %d counts validations during training, but eval-every is 0 (validation only after the last step): give --eval-every N", c.Patience)
	case c.KeepBest && c.EvalEvery == 0:
		return fmt.Errorf("keep-best: with eval-every 0 the only validation is after the last step, so the best checkpoint would be the last one: give --eval-every N")
	case c.BestMetric != "" && !c.KeepBest && c.Patience == 0:
		return fmt.Errorf("best-metric %s chooses what --keep-best and --patience compare: give --keep-best or --patience N with it", c.BestMetric)
	}
	if c.BestMetric != "" {
		if _, err := ParseBestMetric(c.BestMetric); err != nil {
			return err
		}
	}
	return nil
}

// CheckRecorded checks the enumerated values of the training configuration a checkpoint
// records (its config key, JSON), for the stages that use the model without training it
// (embed, rank, metrics patterns, embed export): they carry that configuration on into
// what they write (ranks' train_config, metrics, results), so a value training never
// writes ("matmul":"fp8" under a valid checksum) must not pass as one. model, matmul and
// best_metric must each be a value training writes, and model and matmul must be those
// of the model itself (mc, the model_config the model is built from). A key left out is
// not an error: imported and older checkpoints record fewer keys, and train checks the
// whole configuration when it resumes one (ResumeConfig).
func CheckRecorded(configJSON string, mc model.Config) error {
	if configJSON == "" {
		return nil
	}
	var c struct {
		Model      *string `json:"model"`
		Matmul     *string `json:"matmul"`
		BestMetric *string `json:"best_metric"`
	}
	if err := json.Unmarshal([]byte(configJSON), &c); err != nil {
		return fmt.Errorf("training configuration: %w", err)
	}
	if c.Model != nil {
		v, err := model.ParseVariant(*c.Model)
		if err != nil {
			return fmt.Errorf("training configuration: %w", err)
		}
		if v != mc.Variant {
			return fmt.Errorf("training configuration: model %s, but the checkpoint holds a %s model (model_config)", v, mc.Variant)
		}
	}
	if c.Matmul != nil {
		m, err := compute.ParseMatmul(*c.Matmul)
		if err != nil {
			return fmt.Errorf("training configuration: %w", err)
		}
		if m.TF32() != mc.Matmul.TF32() {
			return fmt.Errorf("training configuration: matmul %s, but the model's (model_config) is %s", m, shown("matmul", string(mc.Matmul)))
		}
	}
	if c.BestMetric != nil && *c.BestMetric != "" {
		if _, err := ParseBestMetric(*c.BestMetric); err != nil {
			return fmt.Errorf("training configuration: %w", err)
		}
	}
	return nil
}

// ModelConfig is the model configuration of the run.
func (c Config) ModelConfig() model.Config {
	return model.Config{
		Variant:      model.Variant(c.Model),
		NumEntities:  c.NumEntities,
		NumRelations: c.NumRelations,
		Dim:          c.Dim,
		Gamma:        c.Gamma,
		CenterReg:    c.Lambda,
		Drop:         c.Dropout,
		ConeHidden:   c.ConeHidden,
		Seed:         c.Seed,
		Matmul:       compute.Matmul(c.Matmul),
	}
}

// JSON returns the configuration as JSON.
func (c Config) JSON() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // plain fields only
	}
	return string(b)
}

// ParseConfig reads a configuration from JSON, refusing unknown keys.
func ParseConfig(s string) (Config, error) {
	var c Config
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("training configuration: %w", err)
	}
	return c, nil
}

// ValueText shows a configuration value as it was given (a setting, a config file's
// value): a string quoted, so that "8" in quotes reads as the string it is, not as the
// number the key wants.
func ValueText(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("the string %q", s)
	}
	return fmt.Sprintf("%v", v)
}
