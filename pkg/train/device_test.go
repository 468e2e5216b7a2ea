//go:build cgo

package train_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/gputest"
	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/gpu/gpumodel"
	. "github.com/rocone/rocone/pkg/train"
)

// Training with the model resident on a CUDA device (Options.Device, CUDA), here on package
// emu's launch emulator: the same kernels and host code as on a GPU, on the CPU. The GPU
// check (scripts/cuda/gpu-check.sh) runs the CLI's equivalent on a real device.

// curveTolerance says how far two runs' train logs may drift apart: each train loss by
// lossRel relative to the first run's, each validation MRR by mrrAbs plus mrrFlips over
// the row's query count (mrrFlips = 1 lets one query's reciprocal rank change by up to
// 1, say from rank 1 to rank 2 and back on another query, which a drifted trajectory
// does on tiny's ~20 validation queries per type).
type curveTolerance struct {
	lossRel, mrrAbs, mrrFlips float64
}

// closeCurves fails unless two train logs have the same rows with train losses and
// validation MRRs within tol of each other (the device sums in another order, so they
// drift apart by rounding).
func closeCurves(t *testing.T, a, b []artifact.TrainLogRow, tol curveTolerance) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d and %d log rows", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Step != y.Step || x.Kind != y.Kind || x.Type != y.Type || x.LR != y.LR {
			t.Fatalf("row %d: %+v against %+v", i, x, y)
		}
		if x.Kind == artifact.LogTrain && !(math.Abs(x.Loss-y.Loss) <= tol.lossRel*math.Abs(x.Loss)) {
			t.Errorf("step %d: loss %.9g on the CPU, %.9g on the device", x.Step, x.Loss, y.Loss)
		}
		if x.Kind == artifact.LogValid && !(math.Abs(x.MRR-y.MRR) <= tol.mrrAbs+tol.mrrFlips/float64(max(x.Queries, 1))) {
			t.Errorf("step %d: valid %s MRR %.6f on the CPU, %.6f on the device (%d queries)", x.Step, x.Type, x.MRR, y.MRR, x.Queries)
		}
	}
}

// emulatorCurves: the emulator computes as the CPU does bar the summation order.
var emulatorCurves = curveTolerance{lossRel: 1e-4, mrrAbs: 1e-3}

// TestDeviceTrainingMatchesCPU trains the tiny configuration on the CPU and on the
// (emulated) device, across both lr drops and Adam resets, and compares the loss curves;
// rocone also with every choice of gpu.Reverts turned back, as a device run's A/B rows
// train (scripts/cuda/bench.sh).
func TestDeviceTrainingMatchesCPU(t *testing.T) {
	train, valid := Files(t)
	allReverts := gpu.Reverts{GemmCost: true, EntityTable: true, Stacked: true}
	for _, c := range []struct {
		variant string
		reverts gpu.Reverts
	}{{"rocone", gpu.Reverts{}}, {"cone", gpu.Reverts{}}, {"rocone", allReverts}} {
		name := c.variant
		if c.reverts != (gpu.Reverts{}) {
			name += "/reverts=" + c.reverts.String()
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := TinyConfig(c.variant)
			cfg.LR = 1e-3 // at 1e-2 a rounding difference soon flips a ReLU or a union's branch
			cpuRun := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "cpu.arrow"), Log: filepath.Join(dir, "cpu-log.arrow")}
			RunT(t, cfg, cpuRun)
			dev := gputest.Emulator(t)
			dev.SetReverts(c.reverts)
			devRun := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "dev.arrow"), Log: filepath.Join(dir, "dev-log.arrow"),
				Device: gpumodel.TrainDevice(dev)}
			RunT(t, cfg, devRun)
			closeCurves(t, LogCurves(t, cpuRun.Log), LogCurves(t, devRun.Log), emulatorCurves)
		})
	}
}

// TestResumeAcrossDevices trains 7 steps on the CPU, resumes on the device up to 14, and
// on the CPU again up to 20: the curve follows the straight CPU run's. Two device runs
// from the same checkpoint are bit-identical (no atomics in the device's sums).
func TestResumeAcrossDevices(t *testing.T) {
	train, valid := Files(t)
	dir := t.TempDir()
	cfg := TinyConfig("rocone")
	cfg.LR = 1e-3
	straight := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "a.arrow"), Log: filepath.Join(dir, "a-log.arrow")}
	RunT(t, cfg, straight)

	dev := gputest.Emulator(t)
	for _, name := range []string{"b", "c"} {
		parts := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, name+".arrow"), Log: filepath.Join(dir, name+"-log.arrow"),
			StopAfter: 7}
		RunT(t, cfg, parts)
		parts.StopAfter, parts.Device = 14, gpumodel.TrainDevice(dev)
		if res := ResumeT(t, cfg.Steps, parts); res.StepsDone != 14 {
			t.Fatalf("stopped after %d steps, want 14", res.StepsDone)
		}
		at14 := filepath.Join(dir, name+"14.arrow")
		copyFile(t, parts.Checkpoint, at14)
		if name == "c" {
			SameCheckpoints(t, filepath.Join(dir, "b14.arrow"), at14)
		}
		parts.StopAfter, parts.Device = 0, nil
		if res := ResumeT(t, cfg.Steps, parts); res.StepsDone != 20 {
			t.Fatalf("ended after %d steps, want 20", res.StepsDone)
		}
		closeCurves(t, LogCurves(t, straight.Log), LogCurves(t, parts.Log), emulatorCurves)
	}
}

// TestDeviceDropCheckpointsDeviceMoments resumes a CPU run's checkpoint after step 7 on
// the device and stops after step 10, whose learning-rate drop makes a new Adam: the
// checkpoint holds the device's fresh moments (zero) and step count, not the host's copy,
// which still holds step 7's moments (a device run's drop leaves it to Download).
func TestDeviceDropCheckpointsDeviceMoments(t *testing.T) {
	train, valid := Files(t)
	dir := t.TempDir()
	cfg := TinyConfig("rocone")
	opts := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "c.arrow"), Log: filepath.Join(dir, "l.arrow"), StopAfter: 7}
	RunT(t, cfg, opts)
	opts.StopAfter, opts.Device = 11, gpumodel.TrainDevice(gputest.Emulator(t))
	ResumeT(t, cfg.Steps, opts)
	NewAdamAfter10(t, opts.Checkpoint, cfg.LR/5)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// failingDriver fails every launch after the first ok launches of kernels named with the
// prefix counted, as a device that runs out of memory or faults mid-run would. Counting
// one kernel's launches (Adam's, which only updates launch) puts the failure inside an
// update however many launches the kernels around it take.
type failingDriver struct {
	gpu.Driver
	counted string
	ok      int
}

func (f *failingDriver) Launch(kernel string, grid, block [3]int, args []uint64) error {
	if f.ok == 0 {
		return errors.New("injected launch failure")
	}
	if strings.HasPrefix(kernel, f.counted) {
		f.ok--
	}
	return f.Driver.Launch(kernel, grid, block, args)
}

// TestDeviceErrorKeepsCheckpoint: a device error in the middle of a resumed run is an
// error naming the step, the pool and the device's message, and the checkpoint on disk is
// left exactly as it was.
func TestDeviceErrorKeepsCheckpoint(t *testing.T) {
	train, valid := Files(t)
	dir := t.TempDir()
	cfg := TinyConfig("rocone")
	opts := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "m.arrow"), Log: filepath.Join(dir, "m-log.arrow"), StopAfter: 5}
	RunT(t, cfg, opts)
	before, err := os.ReadFile(opts.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	dev := gpu.NewDevice(&failingDriver{Driver: gputest.EmulatorDriver(t), counted: "adam_", ok: 2})
	defer dev.Close()
	saved, done, err := ReadCheckpointConfig(opts.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := ResumeConfig(saved, done, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.StopAfter, opts.Resume, opts.Device = 0, true, gpumodel.TrainDevice(dev)
	_, err = Run(context.Background(), rc, opts)
	if err == nil {
		t.Fatal("a failing device did not stop training")
	}
	for _, want := range []string{"step ", "-pool update", "injected launch failure", "left as it was"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	after, err := os.ReadFile(opts.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the checkpoint changed")
	}
}
