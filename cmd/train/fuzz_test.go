package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzConfig writes data as a config file with extension ext and reads it with the train
// command's flags: no panic, and either a source or an error naming --config and the file.
func fuzzConfig(f *testing.F, ext string, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "c"+ext)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := configSource(path, flags())
		if err != nil && !strings.HasPrefix(err.Error(), "--config "+path) {
			t.Fatalf("error %q does not name the file", err)
		}
	})
}

func FuzzConfigYAML(f *testing.F) {
	fuzzConfig(f, ".yaml",
		"dim: 12\nlr: 0.02\ngamma: 9\nnegatives: 3\nbatch: 8\nsteps: 2\neval_every: 0\nquiet: true\n",
		"model: rocone\ndim: 1e3\n", "dim: [1, 2]\n", "a: &a [*a]\n", "dim: 99999999999999999999999\n", "- 1\n- 2\n", "dim: !!binary aGVsbG8=\n")
}

func FuzzConfigTOML(f *testing.F) {
	fuzzConfig(f, ".toml",
		"dim = 12\nlr = 0.02\ngamma = 9\nnegatives = 3\nbatch = 8\nsteps = 2\neval-every = 0\nquiet = true\n",
		"model = \"rocone\"\n", "dim = [1, 2]\n", "[table]\nx = 1\n", "dim = 1e400\n", "dim = 9223372036854775807\n")
}
