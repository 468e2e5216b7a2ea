//go:build cgo

package train

import (
	"path/filepath"
	"testing"

	"github.com/rocone/rocone/internal/gputest"
	"github.com/rocone/rocone/pkg/compute"
)

// TestMatmulTF32Device trains ConE with TF32 products on the (emulated) device, whose
// GEMMs are then tf32.cu's: the loss curve follows the CPU's TF32 run (the rounding
// reference), and two device runs are bit-identical. The curves may drift a little more
// than FP32's (tf32Curves): an activation that the device and the CPU compute a rounding
// apart, next to a TF32 rounding boundary, rounds to neighbours 2⁻¹⁰ apart, so one
// validation query's rank may move.
func TestMatmulTF32Device(t *testing.T) {
	train, valid := files(t)
	dir := t.TempDir()
	cfg := tinyConfig("cone")
	cfg.LR = 1e-3 // as TestDeviceTrainingMatchesCPU: no ReLU flips from rounding
	cfg.Matmul = "tf32"
	cpuRun := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "cpu.arrow"), Log: filepath.Join(dir, "cpu-log.arrow")}
	run(t, cfg, cpuRun)
	var ckpts []string
	for _, name := range []string{"dev1", "dev2"} {
		dev := gputest.Emulator(t)
		o := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, name+".arrow"), Log: filepath.Join(dir, name+"-log.arrow"), Device: CUDA(dev)}
		run(t, cfg, o)
		if dev.Matmul() != compute.MatmulTF32 {
			t.Fatalf("the device computed in %s", dev.Matmul())
		}
		closeCurves(t, logCurves(t, cpuRun.Log), logCurves(t, o.Log), tf32Curves)
		ckpts = append(ckpts, o.Checkpoint)
	}
	sameCheckpoints(t, ckpts[0], ckpts[1])
}

// tf32Curves is emulatorCurves with one validation query's rank free to move.
var tf32Curves = curveTolerance{lossRel: 1e-4, mrrAbs: 1e-3, mrrFlips: 1}
