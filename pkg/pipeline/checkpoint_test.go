package pipeline

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/model"
)

// TestCheckpointRefused: every stage that uses a model (embed, rank, metrics patterns,
// embed export) opens its checkpoint through one function, so each refuses, with the same
// message and no file changed, a checkpoint given as stdin (it used to say "open -: no
// such file or directory") and one whose recorded training configuration holds a value
// training never writes or that disagrees with the model, under a valid checksum (a
// "matmul":"fp8" was accepted and carried into the ranks' train_config).
func TestCheckpointRefused(t *testing.T) {
	dir := t.TempDir()
	queries := fixture(t, dir)
	good := filepath.Join(dir, "good.arrow")
	writeCheckpoint(t, good, model.RoConE, 8, 1)
	withConfig := func(name, config string) string {
		path := filepath.Join(dir, name)
		editCheckpoint(t, good, path, func(k *artifact.Checkpoint) { k.Meta.Config = config })
		return path
	}
	valid := withConfig("valid.arrow", `{"model":"rocone","dim":8,"matmul":"fp32","keep_best":true,"best_metric":"mrr:avg","seed":1}`)
	tests := []struct {
		name, checkpoint, want string
	}{
		{"stdin", "-", "--checkpoint -: a checkpoint is read from a file only, not from stdin: give its path"},
		{"matmul fp8", withConfig("fp8.arrow", `{"model":"rocone","dim":8,"matmul":"fp8","seed":1}`),
			`fp8.arrow: training configuration: matmul "fp8": want fp32 or tf32`},
		{"matmul tf32 on an fp32 model", withConfig("tf32.arrow", `{"model":"rocone","dim":8,"matmul":"tf32","seed":1}`),
			"tf32.arrow: training configuration: matmul tf32, but the model's (model_config) is fp32"},
		{"unknown model", withConfig("transe.arrow", `{"model":"transe","dim":8,"seed":1}`),
			`transe.arrow: training configuration: unknown model variant "transe"`},
		{"another model", withConfig("cone.arrow", `{"model":"cone","dim":8,"seed":1}`),
			"cone.arrow: training configuration: model cone, but the checkpoint holds a rocone model (model_config)"},
		{"unknown best metric", withConfig("metric.arrow", `{"model":"rocone","dim":8,"keep_best":true,"best_metric":"auc:epfo","seed":1}`),
			`metric.arrow: training configuration: best-metric "auc:epfo": unknown measure "auc"`},
		{"model not a string", withConfig("number.arrow", `{"model":7}`), "number.arrow: training configuration: json: cannot unmarshal number"},
	}
	out := filepath.Join(dir, "out.arrow")
	ref := compute.Reference[float32]{}
	stages := []struct {
		name string
		run  func(ck string) error
	}{
		{"embed", func(ck string) error {
			return Embed(EmbedConfig{Checkpoint: ck, Queries: queries, Output: out, Kernels: ref})
		}},
		{"rank", func(ck string) error {
			return Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: out, Kernels: ref})
		}},
		{"patterns", func(ck string) error { return Patterns(PatternsConfig{Checkpoint: ck, Top: 3}, io.Discard) }},
		{"export", func(ck string) error {
			return Export(ExportConfig{Checkpoint: ck, Format: "npy", Output: filepath.Join(dir, "export")})
		}},
	}
	for _, tc := range tests {
		for _, st := range stages {
			t.Run(tc.name+"/"+st.name, func(t *testing.T) {
				before := snapshot(t, dir)
				if err := st.run(tc.checkpoint); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %v, want one containing %q", err, tc.want)
				}
				sameFiles(t, before, snapshot(t, dir))
			})
		}
	}
	// Accepted: the values training writes (fp32 spelt out too), and a configuration that
	// leaves the keys out (as imported and older checkpoints do).
	for _, ck := range []string{good, valid} {
		if err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: out, Kernels: ref}); err != nil {
			t.Errorf("%s: %v", ck, err)
		}
	}
}
