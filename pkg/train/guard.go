package train

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/sysmem"
)

// Diff lists the configuration keys whose values differ between a and b ("dim 64 vs
// 200"), in field order, leaving out the keys in except.
func Diff(a, b Config, except ...string) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	var out []string
	for i := 0; i < t.NumField(); i++ {
		key := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
		if slices.Contains(except, key) {
			continue
		}
		x, y := va.Field(i).Interface(), vb.Field(i).Interface()
		if x != y {
			out = append(out, fmt.Sprintf("%s %v vs %v", key, shown(key, x), shown(key, y)))
		}
	}
	return out
}

// checkOverwrite refuses, for a run that is not resumed and not told to overwrite, to
// replace a checkpoint or train log that belongs to another run: a file there that is not
// such an artifact, or one trained with another configuration (apart from ResumableKeys),
// on another KG or on other train queries (kg and fingerprint are this run's). Replacing a
// run of the same configuration on the same queries is allowed: it is the same run started
// again, and is said on Progress. Only regular files are checked: what is written to a
// device or a pipe replaces nothing.
func checkOverwrite(cfg Config, opts Options, kg, fingerprint string) error {
	if opts.Resume || opts.Overwrite {
		return nil
	}
	type lineage struct{ config, kg, fingerprint string }
	ckLineage := func(p string) (lineage, error) {
		m, err := artifact.ReadCheckpointMeta(p)
		return lineage{m.Config, m.KGDigest, m.TrainFingerprint}, err
	}
	best := ""
	if cfg.KeepBest {
		best = opts.bestPath()
	}
	for _, out := range []struct {
		flag, path, kind string
		lineage          func(string) (lineage, error)
	}{
		{"--checkpoint", opts.Checkpoint, "checkpoint", ckLineage},
		{"--partial", opts.Partial, "checkpoint", ckLineage},
		{"--best", best, "checkpoint", ckLineage},
		{"--log", opts.Log, "train log", func(p string) (lineage, error) {
			m, _, err := artifact.ReadTrainLog(p)
			return lineage{m.Config, m.KGDigest, m.TrainFingerprint}, err
		}},
	} {
		if out.path == "" || out.path == "-" {
			continue
		}
		fi, err := os.Stat(out.path)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", out.flag, out.path, err)
		}
		was, err := out.lineage(out.path)
		if err != nil {
			return fmt.Errorf("%s %s exists and is not a %s this run may replace (%v); give --overwrite to replace it, or choose another path", out.flag, out.path, out.kind, err)
		}
		saved, err := ParseConfig(was.config)
		if err != nil {
			return fmt.Errorf("%s %s exists and its configuration does not read (%v); give --overwrite to replace it, or choose another path", out.flag, out.path, err)
		}
		var other string
		switch diff := Diff(saved, cfg, ResumableKeys...); {
		case len(diff) > 0:
			other = strings.Join(diff, ", ")
		case was.kg != kg:
			other = fmt.Sprintf("on another KG: digest %.12s, this run's %.12s", was.kg, kg)
		case was.fingerprint != fingerprint:
			other = fmt.Sprintf("on other train queries: fingerprint %s, this run's %s", was.fingerprint, fingerprint)
		}
		if other != "" {
			return fmt.Errorf("%s %s holds the %s of another run (%s); give --overwrite to replace it, --resume to continue it, or choose another path",
				out.flag, out.path, out.kind, other)
		}
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "replacing %s %s: the %s of an earlier run of the same configuration on the same train queries (--resume would continue it)\n", out.flag, out.path, out.kind)
		}
	}
	return nil
}

// sameRunLog checks that a train log read for a resumed run is this run's: the same
// configuration apart from ResumableKeys.
func sameRunLog(path string, meta artifact.TrainLogMeta, cfg Config) error {
	saved, err := ParseConfig(meta.Config)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if diff := Diff(saved, cfg, ResumableKeys...); len(diff) > 0 {
		return fmt.Errorf("%s is the log of another run (%s), not of the checkpoint's; give another --log (or \"\" for none) to resume without it",
			path, strings.Join(diff, ", "))
	}
	return nil
}

// memoryNeed is a lower bound, in bytes, of what a run of cfg holds at once: the
// parameters with their gradients and Adam's two moments (four float32 copies), and one
// float32 per (query, positive or negative, dimension) of an update's batch. Real use is
// higher; the bound only serves to refuse at once a configuration that cannot fit, which
// would otherwise end the process with a fatal out-of-memory after the data is loaded.
// mlp is the part of it that ConE's projection MLP (cone only, sized by --cone-hidden)
// holds, so that a refusal can blame that flag when it is the cause.
func memoryNeed(cfg Config) (need, mlp float64) {
	d, e, r := float64(cfg.Dim), float64(cfg.NumEntities), float64(cfg.NumRelations)
	params := e*d + 2*r*d + 6*d*d + 4*d
	if cfg.Model == "cone" {
		mlp = 4 * 4 * (4*coneHidden(cfg)*d + coneHidden(cfg)*coneHidden(cfg) + coneHidden(cfg) + 2*d)
	}
	return 4*4*params + mlp + 4*float64(cfg.Batch)*float64(cfg.Negatives+1)*d, mlp
}

// coneHidden is the hidden width of ConE's projection MLP a run of cfg builds (0: 1600).
func coneHidden(cfg Config) float64 {
	if cfg.ConeHidden == 0 {
		return 1600
	}
	return float64(cfg.ConeHidden)
}

// checkMemory refuses a configuration whose memoryNeed exceeds the machine's memory (or,
// where that is unknown, 1 TiB): an absurd --dim, --negatives or --cone-hidden is an
// error naming them, not a fatal out-of-memory. For a cone model the MLP's share is
// said: a hidden width of millions costs its square, whatever dim, batch and negatives.
func checkMemory(cfg Config) error {
	limit := sysmem.Physical()
	need, mlp := memoryNeed(cfg)
	if need <= limit {
		return nil
	}
	if cfg.Model == "cone" {
		return fmt.Errorf("dim %d, batch %d, negatives %d and cone-hidden %.0f on %d entities need at least %.1f GiB "+
			"(the projection MLP of hidden width %.0f alone %.1f GiB), more than this machine's %.1f GiB; lower them",
			cfg.Dim, cfg.Batch, cfg.Negatives, coneHidden(cfg), cfg.NumEntities, need/(1<<30), coneHidden(cfg), mlp/(1<<30), limit/(1<<30))
	}
	return fmt.Errorf("dim %d, batch %d and negatives %d on %d entities need at least %.1f GiB, more than this machine's %.1f GiB; lower them",
		cfg.Dim, cfg.Batch, cfg.Negatives, cfg.NumEntities, need/(1<<30), limit/(1<<30))
}
