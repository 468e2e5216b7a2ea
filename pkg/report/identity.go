package report

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
)

// RunIdentity is what a ranks artifact says about where its ranks come from: enough to
// tell whether several ranks files are seeds of one model (distinct checkpoints of one
// model and configuration, ranking the same queries) or something else.
type RunIdentity struct {
	Path string      // the ranks file, for messages
	File os.FileInfo // its stat, to catch one file given twice under two names; nil for a stream
	// Queries identifies the ranked queries (the queries artifact's content digest) with
	// their dataset and split.
	Queries, Dataset, Split string
	Model                   string // the model variant: rocone, cone, ...
	// Config is the checkpoint's training configuration (JSON); empty in ranks files
	// written before ranks recorded it, which are then compared by Model and Seed only.
	Config         string
	Seed           string // the training seed; "" when unknown
	CheckpointHash string // SHA-256 of the checkpoint file
	// KG and TrainFile are the model's lineage (artifact.RanksMeta): the digest of the KG
	// and the fingerprint of the train file it was trained on; "" when unknown (a model
	// imported from QE-ConE).
	KG, TrainFile string
}

// notConfiguration are the training configuration keys that do not make another model:
// the seed (what varies between seeds) and how often a run validated and checkpointed
// (which changes no parameter).
var notConfiguration = []string{"seed", "eval_every", "checkpoint_every"}

// CheckSeeds checks that runs are seeds of one model: distinct files, of the same queries,
// of models trained on one KG and one train file, of one model variant and one training
// configuration apart from the seed, from distinct checkpoints trained with distinct
// seeds. The error names the two runs and what differs; mixing models is what SameModel
// groups are for (one row per model).
func CheckSeeds(runs []RunIdentity) error {
	for j := 1; j < len(runs); j++ {
		if err := sameQueries(runs[0], runs[j]); err != nil {
			return err
		}
		if err := sameTrainFile(runs[0], runs[j]); err != nil {
			return err
		}
		if err := sameModel(runs[0], runs[j]); err != nil {
			return err
		}
	}
	for i := range runs {
		for j := i + 1; j < len(runs); j++ {
			if err := distinctSeeds(runs[i], runs[j]); err != nil {
				return err
			}
		}
	}
	return nil
}

func sameQueries(a, b RunIdentity) error {
	if a.Queries == b.Queries && a.Dataset == b.Dataset && a.Split == b.Split {
		return nil
	}
	return fmt.Errorf("%s holds ranks of other queries (%s %s, digest %.12s) than %s (%s %s, digest %.12s); every ranks file of one call must rank the same queries file",
		b.Path, b.Dataset, b.Split, b.Queries, a.Path, a.Dataset, a.Split, a.Queries)
}

// sameKG checks that two runs' models were trained on one KG: the same queries ranked by
// models of another KG (by its content digest) are not comparable.
func sameKG(a, b RunIdentity) error {
	if a.KG == b.KG {
		return nil
	}
	return fmt.Errorf("%s ranks a model trained on another KG (digest %.12s) than %s (digest %.12s): the ranks of one call must come from models of one KG",
		b.Path, b.KG, a.Path, a.KG)
}

// sameTrainFile checks that two runs are of one KG and one train file: seeds of a model
// differ in the seed, not in what they learnt from.
func sameTrainFile(a, b RunIdentity) error {
	if err := sameKG(a, b); err != nil {
		return err
	}
	if a.TrainFile == b.TrainFile {
		return nil
	}
	return fmt.Errorf("%s ranks a model trained on another train file (fingerprint %s) than %s (fingerprint %s): seeds of one model are trained on one train file (use --models to put them side by side)",
		b.Path, b.TrainFile, a.Path, a.TrainFile)
}

func sameModel(a, b RunIdentity) error {
	if a.Model != b.Model {
		return fmt.Errorf("%s ranks a %s model, %s a %s model: seeds must be runs of one model (use --models to put several models side by side, one row each)",
			b.Path, b.Model, a.Path, a.Model)
	}
	diff, err := configDiff(a.Config, b.Config)
	if err != nil {
		return fmt.Errorf("%s or %s: %w", a.Path, b.Path, err)
	}
	if len(diff) > 0 {
		return fmt.Errorf("%s and %s rank %s models of different configurations (%s): seeds must differ in the seed only (use --models to put several models side by side, one row each)",
			a.Path, b.Path, a.Model, strings.Join(diff, ", "))
	}
	return nil
}

func distinctSeeds(a, b RunIdentity) error {
	switch {
	case a.File != nil && b.File != nil && os.SameFile(a.File, b.File):
		return fmt.Errorf("%s and %s are the same file: one run counted as two seeds", a.Path, b.Path)
	case a.CheckpointHash != "" && a.CheckpointHash == b.CheckpointHash:
		return fmt.Errorf("%s and %s rank the same checkpoint (sha256 %.12s): one run counted as two seeds (with and without --cones, or on two devices, give the same ranks)",
			a.Path, b.Path, a.CheckpointHash)
	case a.Seed != "" && a.Seed == b.Seed:
		return fmt.Errorf("%s and %s rank checkpoints of the same model trained with the same seed %s: one run counted as two seeds",
			a.Path, b.Path, a.Seed)
	}
	return nil
}

// configDiff lists the configuration keys, other than notConfiguration, whose values differ
// ("dim 64 vs 200"), sorted by key. An empty configuration (an older ranks file) differs
// from nothing.
func configDiff(a, b string) ([]string, error) {
	if a == "" || b == "" {
		return nil, nil
	}
	var ma, mb map[string]any
	if err := json.Unmarshal([]byte(a), &ma); err != nil {
		return nil, fmt.Errorf("training configuration %q: %w", a, err)
	}
	if err := json.Unmarshal([]byte(b), &mb); err != nil {
		return nil, fmt.Errorf("training configuration %q: %w", b, err)
	}
	var keys []string
	for k := range ma {
		keys = append(keys, k)
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var diff []string
	for _, k := range keys {
		if slices.Contains(notConfiguration, strings.ToLower(k)) {
			continue
		}
		va, oka := ma[k]
		vb, okb := mb[k]
		if oka && okb && reflect.DeepEqual(va, vb) {
			continue
		}
		diff = append(diff, fmt.Sprintf("%s %s vs %s", k, jsonValue(va, oka), jsonValue(vb, okb)))
	}
	return diff, nil
}

func jsonValue(v any, ok bool) string {
	if !ok {
		return "unset"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// ModelGroup is one model of a side-by-side table: the indices of its runs (its seeds) and
// a label.
type ModelGroup struct {
	Label string
	Runs  []int
}

// GroupModels sorts runs into models for a side-by-side table: runs of the same queries
// by models of one KG, and of the same model variant, configuration (apart from the
// seed) and train file form one model, whose seeds must then pass CheckSeeds. Groups come
// in the order of their first run. A group's label is its model variant, followed by the
// configuration keys (and train file) that tell it from another group of the same
// variant ("rocone (dim 200)").
func GroupModels(runs []RunIdentity) ([]ModelGroup, error) {
	var groups []ModelGroup
	for j := 1; j < len(runs); j++ {
		if err := sameQueries(runs[0], runs[j]); err != nil {
			return nil, err
		}
		if err := sameKG(runs[0], runs[j]); err != nil {
			return nil, err
		}
	}
	for i, r := range runs {
		found := false
		for g := range groups {
			first := runs[groups[g].Runs[0]]
			if first.Model != r.Model || first.TrainFile != r.TrainFile {
				continue
			}
			diff, err := configDiff(first.Config, r.Config)
			if err != nil {
				return nil, fmt.Errorf("%s or %s: %w", first.Path, r.Path, err)
			}
			if len(diff) == 0 {
				groups[g].Runs = append(groups[g].Runs, i)
				found = true
				break
			}
		}
		if !found {
			groups = append(groups, ModelGroup{Label: r.Model, Runs: []int{i}})
		}
	}
	for g := range groups {
		var ids []RunIdentity
		for _, i := range groups[g].Runs {
			ids = append(ids, runs[i])
		}
		if err := CheckSeeds(ids); err != nil {
			return nil, err
		}
		first := runs[groups[g].Runs[0]]
		var keys []string
		for h := range groups {
			other := runs[groups[h].Runs[0]]
			if h == g || other.Model != first.Model {
				continue
			}
			if kv := "train file " + first.TrainFile; other.TrainFile != first.TrainFile && !slices.Contains(keys, kv) {
				keys = append(keys, kv)
			}
			diff, _ := configDiff(first.Config, other.Config)
			for _, d := range diff {
				k, v, _ := strings.Cut(d, " ")
				v, _, _ = strings.Cut(v, " vs ")
				if kv := k + " " + v; !slices.Contains(keys, kv) {
					keys = append(keys, kv)
				}
			}
		}
		if len(keys) > 0 {
			groups[g].Label += " (" + strings.Join(keys, ", ") + ")"
		}
	}
	return groups, nil
}
