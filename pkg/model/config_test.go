package model

import (
	"math"
	"strings"
	"testing"
)

// TestConfigValidate: each field is accepted at the edge of its range and refused just
// past it, with a message naming the field and the value.
func TestConfigValidate(t *testing.T) {
	ok := Config{Variant: RoConE, NumEntities: 1, NumRelations: 1, Dim: 1, Gamma: -1.5}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a valid configuration: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*Config)
		err  string // "" when valid
	}{
		{"every variant", func(c *Config) { c.Variant = ConE }, ""},
		{"drop just under 1", func(c *Config) { c.Drop = math.Nextafter(1, 0) }, ""},
		{"cone hidden 0 (the default)", func(c *Config) { c.ConeHidden = 0 }, ""},
		{"tf32", func(c *Config) { c.Matmul = "tf32" }, ""},
		{"gamma just above -2", func(c *Config) { c.Gamma = math.Nextafter(-2, 0) }, ""},
		{"variant", func(c *Config) { c.Variant = "beta" }, `unknown model variant "beta"`},
		{"no variant", func(c *Config) { c.Variant = "" }, `unknown model variant ""`},
		{"entities", func(c *Config) { c.NumEntities = 0 }, "model: NumEntities must be positive, got 0"},
		{"relations", func(c *Config) { c.NumRelations = 0 }, "model: NumRelations must be positive, got 0"},
		{"dim", func(c *Config) { c.Dim = 0 }, "model: Dim must be positive, got 0"},
		{"gamma -2", func(c *Config) { c.Gamma = -2 }, "model: Gamma must exceed -2, got -2"},
		{"drop 1", func(c *Config) { c.Drop = 1 }, "model: Drop must be in [0, 1), got 1"},
		{"drop below 0", func(c *Config) { c.Drop = -0.01 }, "model: Drop must be in [0, 1), got -0.01"},
		{"cone hidden", func(c *Config) { c.ConeHidden = -1 }, "model: ConeHidden must not be negative, got -1"},
		{"matmul", func(c *Config) { c.Matmul = "fp16" }, `model: matmul "fp16": want fp32 or tf32`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.edit(&cfg)
			err := cfg.Validate()
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.err != "" && (err == nil || !strings.HasPrefix(err.Error(), c.err)):
				t.Fatalf("err = %v, want one starting %q", err, c.err)
			}
		})
	}
}
