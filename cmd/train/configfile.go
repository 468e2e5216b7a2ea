package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
	"gopkg.in/yaml.v3"

	"github.com/rocone/rocone/pkg/train"
)

// configSource reads a YAML (.yaml, .yml) or TOML (.toml) config file into an altsrc input
// source for the flags. Keys are flag names; underscores may stand for dashes
// (eval_every). Unknown keys are an error rather than silently ignored, and numbers are
// converted to the flag's type (a YAML 30 sets the float --gamma; a TOML integer the int
// --dim), which altsrc's own loaders do not do.
func configSource(path string, flags []cli.Flag) (altsrc.InputSourceContext, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	raw := map[string]any{}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".toml":
		if _, err := toml.Decode(string(data), &raw); err != nil {
			return nil, fmt.Errorf("--config %s: %w", path, err)
		}
	case ".yaml", ".yml":
		if err := yaml.Unmarshal(data, &raw); err != nil {
			return nil, fmt.Errorf("--config %s: %w", path, err)
		}
	default:
		return nil, fmt.Errorf("--config %s: want a .yaml, .yml or .toml file", path)
	}

	kinds := map[string]cli.Flag{}
	var known []string
	for _, f := range flags {
		if _, ok := f.(altsrc.FlagInputSourceExtension); ok {
			kinds[f.Names()[0]] = f
			known = append(known, f.Names()[0])
		}
	}
	sort.Strings(known)
	values := map[any]any{}
	for k, v := range raw {
		name := strings.ReplaceAll(k, "_", "-")
		f, ok := kinds[name]
		if !ok {
			return nil, fmt.Errorf("--config %s: unknown key %q (known: %s)", path, k, strings.Join(known, ", "))
		}
		conv, err := convert(f, v)
		if err != nil {
			return nil, fmt.Errorf("--config %s: %s: %w", path, k, err)
		}
		values[name] = conv
	}
	return altsrc.NewMapInputSource(path, values), nil
}

// convert turns a decoded YAML or TOML value into the type altsrc expects for the flag.
func convert(f cli.Flag, v any) (any, error) {
	var x float64
	isNum := true
	switch n := v.(type) {
	case int:
		x = float64(n)
	case int64:
		x = float64(n)
	case uint64:
		x = float64(n)
	case float64:
		x = n
	default:
		isNum = false
	}
	integral := func() error {
		switch {
		case isNum && x == math.Trunc(x) && math.Abs(x) > 1<<53:
			return fmt.Errorf("%v is too large (at most 2^53)", v)
		case !isNum || x != math.Trunc(x):
			return fmt.Errorf("want an integer, got %s", train.ValueText(v))
		}
		return nil
	}
	switch f.(type) {
	case *altsrc.StringFlag:
		if s, ok := v.(string); ok {
			// As on the command line (cliargs.NotEmpty): an empty value would pass for
			// the key's default; only log "" means something, no log.
			if s == "" && f.Names()[0] != "log" {
				return nil, fmt.Errorf("an empty value; give one, or leave the key out for the default")
			}
			return s, nil
		}
		return nil, fmt.Errorf("want a string, got %s", train.ValueText(v))
	case *altsrc.BoolFlag:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, fmt.Errorf("want true or false, got %s", train.ValueText(v))
	case *altsrc.Float64Flag:
		if !isNum {
			return nil, fmt.Errorf("want a number, got %s", train.ValueText(v))
		}
		return x, nil
	case *altsrc.IntFlag:
		if err := integral(); err != nil {
			return nil, err
		}
		return int(x), nil
	case *altsrc.Uint64Flag:
		if err := integral(); err != nil || x < 0 {
			return nil, fmt.Errorf("want a non-negative integer, got %v", v)
		}
		if n, ok := v.(uint64); ok {
			return n, nil
		}
		return uint64(x), nil
	}
	return nil, fmt.Errorf("unsupported flag type %T", f)
}
