package device

import (
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/gputest"
	"github.com/rocone/rocone/pkg/compute/cpu"
	"github.com/rocone/rocone/pkg/gpu"
)

// TestOpen: cpu is the fast CPU kernels and nothing resident; an unknown name and cuda
// in a binary without CUDA are errors that say what to do.
func TestOpen(t *testing.T) {
	for _, name := range []string{"cpu", ""} {
		ch, err := Open(name, 1)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if _, ok := ch.Kernels.(*cpu.Backend); !ok || ch.Train != nil || ch.Rank != nil {
			t.Fatalf("%q: %#v, want the fast CPU kernels alone", name, ch)
		}
	}
	if _, err := Open("tpu", 0); err == nil || !strings.Contains(err.Error(), `"tpu"`) {
		t.Fatalf("tpu: %v", err)
	}
	if openCUDA == nil {
		if _, err := Open("cuda", 0); err == nil || !strings.Contains(err.Error(), "make build-cuda") {
			t.Fatalf("cuda without the tag: %v", err)
		}
	}
}

// TestOpenCUDA: cuda (here over a driver that executes nothing) trains, embeds and ranks
// on the device, and the host-side kernels are the CPU's fast ones: there is no per-call
// GPU backend.
func TestOpenCUDA(t *testing.T) {
	saved := openCUDA
	defer func() { openCUDA = saved }()
	openCUDA = func() (*gpu.Device, error) { return gpu.NewDevice(&gputest.NullDriver{}), nil }
	ch, err := Open("cuda", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ch.Kernels.(*cpu.Backend); !ok {
		t.Errorf("cuda's kernels are %T, want the fast CPU backend", ch.Kernels)
	}
	if ch.Train == nil || ch.Rank == nil {
		t.Errorf("cuda: Train %v, Rank %v: want both on the device", ch.Train, ch.Rank)
	}
}

// TestOpenCUDAReverts: $ROCONE_GPU_REVERT turns the device's choices back before any
// model is built on it, and a name it does not know fails the stage before the device
// opens.
func TestOpenCUDAReverts(t *testing.T) {
	saved := openCUDA
	defer func() { openCUDA = saved }()
	var dev *gpu.Device
	openCUDA = func() (*gpu.Device, error) { dev = gpu.NewDevice(&gputest.NullDriver{}); return dev, nil }
	t.Setenv(gpu.RevertEnv, "etab,gemm-cost")
	if _, err := Open("cuda", 1); err != nil {
		t.Fatal(err)
	}
	if want := (gpu.Reverts{GemmCost: true, EntityTable: true}); dev.Reverts() != want {
		t.Errorf("reverts %+v, want %+v", dev.Reverts(), want)
	}
	if got, want := dev.Name(), "null; reverted: gemm-cost,etab"; got != want {
		t.Errorf("the device's name %q, want %q (a profile's header says what was reverted)", got, want)
	}
	dev = nil
	t.Setenv(gpu.RevertEnv, "etab,fast")
	if _, err := Open("cuda", 1); err == nil || !strings.Contains(err.Error(), "$"+gpu.RevertEnv) || !strings.Contains(err.Error(), `"fast"`) {
		t.Errorf("a bad revert: %v", err)
	}
	if dev != nil {
		t.Errorf("a bad revert opened the device")
	}
	if _, err := Open("cpu", 1); err != nil {
		t.Errorf("cpu with a bad %s (which only cuda reads): %v", gpu.RevertEnv, err)
	}
}

// TestRankDeviceNil: no device gives a nil eval.RankDevice, not an interface holding a nil
// pointer, so that the rank stage, which tests it against nil, ranks on the host.
func TestRankDeviceNil(t *testing.T) {
	if r := RankDevice(nil); r != nil {
		t.Fatalf("RankDevice(nil) = %#v, want nil", r)
	}
}
