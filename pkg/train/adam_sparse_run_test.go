package train

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/artifact"
)

// TestSparseAdamRun trains with sparse Adam: the checkpoint's configuration records it, a
// resumed run keeps it (and continues bit-identically), a resume asking for dense Adam is
// refused, the trajectory differs from dense Adam's, a dense run's configuration has no
// sparse_adam key, and the CUDA path refuses it.
func TestSparseAdamRun(t *testing.T) {
	train, valid := files(t)
	dir := t.TempDir()
	cfg := tinyConfig("rocone")
	cfg.SparseAdam = true
	straight := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "a.arrow"), Log: filepath.Join(dir, "a-log.arrow"), Workers: 2}
	run(t, cfg, straight)
	parts := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "b.arrow"), Log: filepath.Join(dir, "b-log.arrow"), Workers: 1, StopAfter: 8}
	run(t, cfg, parts)
	parts.StopAfter = 0
	if res := resume(t, cfg.Steps, parts); !res.Config.SparseAdam {
		t.Fatal("the resumed run lost sparse Adam")
	}
	sameCheckpoints(t, straight.Checkpoint, parts.Checkpoint)

	saved, done, err := ReadCheckpointConfig(straight.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if !saved.SparseAdam {
		t.Fatal("the checkpoint's configuration does not record sparse Adam")
	}
	_, err = ResumeConfig(saved, done, []Setting{{Key: "sparse_adam", Value: false, Source: "--adam dense"}})
	if err == nil || !strings.Contains(err.Error(), "--adam dense conflicts with the checkpoint") {
		t.Fatalf("resume with --adam dense: got %v", err)
	}

	dense := cfg
	dense.SparseAdam = false
	dopts := Options{Train: train, Checkpoint: filepath.Join(dir, "d.arrow"), Log: "", Workers: 2}
	run(t, dense, dopts)
	meta, err := artifact.ReadCheckpointMeta(dopts.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(meta.Config, "sparse_adam") {
		t.Fatalf("a dense run's configuration names sparse_adam: %s", meta.Config)
	}
	a, err := artifact.ReadCheckpoint(straight.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	d, err := artifact.ReadCheckpoint(dopts.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	ea, ed := a.Tensor("entity", artifact.RoleParam).Values, d.Tensor("entity", artifact.RoleParam).Values
	differ := false
	for i := range ea {
		differ = differ || ea[i] != ed[i]
	}
	if !differ {
		t.Fatal("sparse and dense Adam trained the same entity table")
	}

	_, err = Run(context.Background(), cfg, Options{Train: train, Checkpoint: filepath.Join(dir, "c.arrow"), Device: noDevice{}})
	if err == nil || !strings.Contains(err.Error(), "CPU only") {
		t.Fatalf("sparse Adam on CUDA: got %v", err)
	}
}

// noDevice is a Device that is never used: setup refuses sparse Adam on any device first.
type noDevice struct{}

func (noDevice) Name() string                  { return "a test device" }
func (noDevice) Updater(Host) (Updater, error) { panic("noDevice.Updater called") }
