package pipeline

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rocone/rocone/internal/gputest"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/model"
)

var errFakeDevice = errors.New("fake device: an illegal memory access was encountered")

// failingKernels computes like the reference kernels but, like gpu.Backend after a device
// error, records an error once it has run `after` kernel calls and reports it through Err
// only (compute.DeferredErrors): the results stay correct, so only a stage that checks Err
// notices.
type failingKernels struct {
	ref   compute.Reference[float32] // not embedded: every call goes through the methods below
	after int64
	calls atomic.Int64
}

func (k *failingKernels) Err() error {
	if k.calls.Load() > k.after {
		return errFakeDevice
	}
	return nil
}

func (k *failingKernels) LinearForward(y, x, w, b []float32, rows, in, out int) {
	k.calls.Add(1)
	k.ref.LinearForward(y, x, w, b, rows, in, out)
}

func (k *failingKernels) LinearBackward(dx, dw, db, dy, x, w []float32, rows, in, out int) {
	k.calls.Add(1)
	k.ref.LinearBackward(dx, dw, db, dy, x, w, rows, in, out)
}

func (k *failingKernels) DistanceForward(dist, axis, half, ent []float32, cand []int32, queries, cands, dim int, lambda float32) {
	k.calls.Add(1)
	k.ref.DistanceForward(dist, axis, half, ent, cand, queries, cands, dim, lambda)
}

func (k *failingKernels) DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent []float32, cand []int32, queries, cands, dim int, lambda float32) {
	k.calls.Add(1)
	k.ref.DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent, cand, queries, cands, dim, lambda)
}

// failingDriver is a GPU whose every kernel launch fails: gpu.Backend over it records the
// error and computes every call on the CPU (gpu.Backend's documented fallback).
type failingDriver struct{ *gputest.NullDriver }

func (failingDriver) Launch(string, [3]int, [3]int, []uint64) error {
	return errors.New("CUDA_ERROR_LAUNCH_FAILED")
}

// TestDeviceErrorFailsStage: embed and rank through a backend that records a device error
// instead of returning it (the CUDA backend of `embed --device cuda` and of `rank --device
// cuda --top K` or `--cones`, whose kernels then fall back to the CPU) fail with that
// error and write no output, where they used to finish silently on the CPU. The same runs
// with a backend that records no error write their output (the control).
func TestDeviceErrorFailsStage(t *testing.T) {
	dir := t.TempDir()
	queries := fixture(t, dir)
	ck := filepath.Join(dir, "cone.arrow")
	writeCheckpoint(t, ck, model.ConE, 12, 3)
	cones := filepath.Join(dir, "cones.arrow")
	if err := Embed(EmbedConfig{Checkpoint: ck, Queries: queries, Output: cones, Kernels: compute.Reference[float32]{}}); err != nil {
		t.Fatal(err)
	}

	backends := []struct {
		name    string
		kernels func() compute.Backend
		wantErr string // "" for none
		is      error
	}{
		{"fake, fails after its first kernel call", func() compute.Backend { return &failingKernels{after: 0} }, "fake device", errFakeDevice},
		{"fake, fails after 5 kernel calls (mid-run)", func() compute.Backend { return &failingKernels{after: 5} }, "fake device", errFakeDevice},
		{"cuda backend, failing launches", func() compute.Backend {
			return gpu.NewBackend(gpu.NewDevice(failingDriver{&gputest.NullDriver{}}))
		}, "CUDA_ERROR_LAUNCH_FAILED", nil},
		{"control: fake, no error", func() compute.Backend { return &failingKernels{after: math.MaxInt64} }, "", nil},
	}
	stages := []struct {
		name string
		run  func(k compute.Backend, out string) error
	}{
		{"embed", func(k compute.Backend, out string) error {
			return Embed(EmbedConfig{Checkpoint: ck, Queries: queries, Output: out, Kernels: k})
		}},
		{"rank --top", func(k compute.Backend, out string) error {
			return Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: out, TopK: 3, Kernels: k})
		}},
		{"rank --cones", func(k compute.Backend, out string) error {
			return Rank(RankConfig{Checkpoint: ck, Queries: queries, Cones: cones, Output: out, Kernels: k})
		}},
		{"rank", func(k compute.Backend, out string) error {
			return Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: out, Kernels: k, Workers: 2})
		}},
	}
	for _, st := range stages {
		for _, b := range backends {
			t.Run(st.name+"/"+b.name, func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "out.arrow")
				err := st.run(b.kernels(), out)
				_, statErr := os.Stat(out)
				if b.wantErr == "" {
					if err != nil || statErr != nil {
						t.Fatalf("control run: %v; output: %v", err, statErr)
					}
					return
				}
				if err == nil {
					t.Fatal("no error: the device error passed silently")
				}
				if !strings.Contains(err.Error(), b.wantErr) || !strings.Contains(err.Error(), "compute backend failed") {
					t.Errorf("error %q does not report the device error %q", err, b.wantErr)
				}
				if b.is != nil && !errors.Is(err, b.is) {
					t.Errorf("errors.Is does not find the device error in %q", err)
				}
				if !errors.Is(statErr, os.ErrNotExist) {
					t.Errorf("%s exists after a failed run (%v)", out, statErr)
				}
				if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
					t.Errorf("the output folder holds %d entries after a failed run, want none", len(entries))
				}
			})
		}
	}
}
