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
			out = append(out, fmt.Sprintf("%s %v vs %v", key, x, y))
		}
	}
	return out
}

// checkOverwrite refuses, for a run that is not resumed and not told to overwrite, to
// replace a checkpoint or train log that belongs to another run: a file there that is not
// such an artifact, or one trained with another configuration (apart from ResumableKeys).
// Replacing a run of the same configuration is allowed: it is the same run started again
// (as the Makefile does when the train queries change). Only regular files are checked;
// what is written to a device or a pipe replaces nothing.
func checkOverwrite(cfg Config, opts Options) error {
	if opts.Resume || opts.Overwrite {
		return nil
	}
	for _, out := range []struct {
		flag, path, kind string
		config           func(string) (string, error)
	}{
		{"--checkpoint", opts.Checkpoint, "checkpoint", func(p string) (string, error) {
			m, err := artifact.ReadCheckpointMeta(p)
			return m.Config, err
		}},
		{"--log", opts.Log, "train log", func(p string) (string, error) {
			m, _, err := artifact.ReadTrainLog(p)
			return m.Config, err
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
		js, err := out.config(out.path)
		if err != nil {
			return fmt.Errorf("%s %s exists and is not a %s this run may replace (%v); give --overwrite to replace it, or choose another path", out.flag, out.path, out.kind, err)
		}
		saved, err := ParseConfig(js)
		if err != nil {
			return fmt.Errorf("%s %s exists and its configuration does not read (%v); give --overwrite to replace it, or choose another path", out.flag, out.path, err)
		}
		if diff := Diff(saved, cfg, ResumableKeys...); len(diff) > 0 {
			return fmt.Errorf("%s %s holds the %s of another run (%s); give --overwrite to replace it, --resume to continue it, or choose another path",
				out.flag, out.path, out.kind, strings.Join(diff, ", "))
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
