package train

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/checkpoint"
	"github.com/rocone/rocone/pkg/compute"
)

// TestMatmulConfig: --matmul's values, how they are stored (FP32 as no key), and a
// resumed run keeping the checkpoint's precision.
func TestMatmulConfig(t *testing.T) {
	for _, c := range []struct {
		value, want, err string
	}{{"fp32", "", ""}, {"", "", ""}, {"tf32", "tf32", ""}, {"fp16", "", `--matmul: matmul "fp16": want fp32 or tf32`}} {
		cfg, err := NewConfig("", []Setting{{Key: "matmul", Value: c.value, Source: "--matmul"}})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("--matmul %q: error %v, want %q", c.value, err, c.err)
			}
			continue
		}
		if err != nil || cfg.Matmul != c.want {
			t.Errorf("--matmul %q: %q, %v; want %q", c.value, cfg.Matmul, err, c.want)
		}
		if got := strings.Contains(cfg.JSON(), `"matmul"`); got != (c.want != "") {
			t.Errorf("--matmul %q: JSON %s", c.value, cfg.JSON())
		}
		if cfg.ModelConfig().Matmul != compute.Matmul(c.want) {
			t.Errorf("--matmul %q: model configuration %+v", c.value, cfg.ModelConfig())
		}
	}
	if err := (Config{Model: "cone", Dim: 1, Batch: 1, Negatives: 1, LR: 1, Steps: 1, Matmul: "fp32"}).Validate(); err == nil {
		t.Error(`a configuration read with matmul "fp32" (not how it is stored) passed`)
	}
	tf, _ := NewConfig("", []Setting{{Key: "matmul", Value: "tf32", Source: "--matmul"}})
	fp, _ := NewConfig("", nil)
	for _, c := range []struct {
		saved Config
		value string
		err   string
	}{
		{tf, "tf32", ""}, {fp, "fp32", ""},
		{tf, "fp32", "--matmul conflicts with the checkpoint: it sets matmul fp32, the checkpoint was trained with matmul tf32"},
		{fp, "tf32", "--matmul conflicts with the checkpoint: it sets matmul tf32, the checkpoint was trained with matmul fp32"},
		{tf, "bf16", `matmul "bf16": want fp32 or tf32`},
	} {
		got, err := ResumeConfig(c.saved, 0, []Setting{{Key: "matmul", Value: c.value, Source: "--matmul"}})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("resume %q with --matmul %s: error %v, want %q", c.saved.Matmul, c.value, err, c.err)
			}
			continue
		}
		if err != nil || got != c.saved {
			t.Errorf("resume %q with --matmul %s: %+v, %v", c.saved.Matmul, c.value, got, err)
		}
	}
}

// TestMatmulTF32Run trains ConE with TF32 products on the CPU (the rounding reference):
// the checkpoint records the precision in both configurations, the model built from it
// computes in TF32 (as embed and rank build it), a resumed run continues bit-identically,
// and the trajectory differs from FP32's, whose configuration has no matmul key.
func TestMatmulTF32Run(t *testing.T) {
	train, valid := files(t)
	dir := t.TempDir()
	cfg := tinyConfig("cone")
	cfg.Matmul = "tf32"
	straight := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "a.arrow"), Log: filepath.Join(dir, "a-log.arrow"), Workers: 2}
	run(t, cfg, straight)
	parts := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "b.arrow"), Log: filepath.Join(dir, "b-log.arrow"), Workers: 1, StopAfter: 8}
	run(t, cfg, parts)
	parts.StopAfter = 0
	if res := resume(t, cfg.Steps, parts); res.Config.Matmul != "tf32" {
		t.Fatal("the resumed run lost --matmul tf32")
	}
	sameCheckpoints(t, straight.Checkpoint, parts.Checkpoint)

	meta, err := artifact.ReadCheckpointMeta(straight.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(meta.Config, `"matmul":"tf32"`) || !strings.Contains(meta.ModelConfig, `"Matmul":"tf32"`) {
		t.Fatalf("the checkpoint does not record TF32: config %s, model_config %s", meta.Config, meta.ModelConfig)
	}
	m, _, err := checkpoint.Load(straight.Checkpoint, compute.Reference[float32]{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Kernels.(compute.TF32Kernels[float32]); !ok {
		t.Fatalf("the model loaded from a TF32 checkpoint runs on %T", m.Kernels)
	}

	fp := cfg
	fp.Matmul = ""
	fopts := Options{Train: train, Checkpoint: filepath.Join(dir, "f.arrow"), Log: "", Workers: 2}
	run(t, fp, fopts)
	fmeta, err := artifact.ReadCheckpointMeta(fopts.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(fmeta.Config, "matmul") || strings.Contains(fmeta.ModelConfig, "Matmul") {
		t.Fatalf("an FP32 run's configuration names the precision: %s, %s", fmeta.Config, fmeta.ModelConfig)
	}
	a, err := artifact.ReadCheckpoint(straight.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	f, err := artifact.ReadCheckpoint(fopts.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	wa, wf := a.Tensor("projection.w1", artifact.RoleParam), f.Tensor("projection.w1", artifact.RoleParam)
	if wa == nil || wf == nil {
		t.Fatal("no projection.w1 tensor")
	}
	differ := false
	for i := range wa.Values {
		differ = differ || wa.Values[i] != wf.Values[i]
	}
	if !differ {
		t.Fatal("TF32 and FP32 trained the same projection weights")
	}
}
