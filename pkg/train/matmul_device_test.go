//go:build cgo

package train_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/gpu/gpumodel"
	. "github.com/rocone/rocone/pkg/train"

	"github.com/rocone/rocone/internal/gputest"
	"github.com/rocone/rocone/pkg/compute"
)

// TestMatmulTF32Device trains ConE with TF32 products on the (emulated) device, whose
// GEMMs are then tf32.cu's pipelined kernels (the second run's profile lists them, and
// no other GEMM): the loss curve follows the CPU's TF32 run (the rounding reference),
// and two device runs are bit-identical. The curves may drift a little more
// than FP32's (tf32Curves): an activation that the device and the CPU compute a rounding
// apart, next to a TF32 rounding boundary, rounds to neighbours 2⁻¹⁰ apart, so one
// validation query's rank may move.
func TestMatmulTF32Device(t *testing.T) {
	train, valid := Files(t)
	dir := t.TempDir()
	cfg := TinyConfig("cone")
	cfg.LR = 1e-3 // as TestDeviceTrainingMatchesCPU: no ReLU flips from rounding
	cfg.Matmul = "tf32"
	cpuRun := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "cpu.arrow"), Log: filepath.Join(dir, "cpu-log.arrow")}
	RunT(t, cfg, cpuRun)
	var ckpts []string
	for _, name := range []string{"dev1", "dev2"} {
		dev := gputest.Emulator(t)
		o := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, name+".arrow"), Log: filepath.Join(dir, name+"-log.arrow"), Device: gpumodel.TrainDevice(dev)}
		if name == "dev2" {
			o.Profile = ProfileOptions{Path: filepath.Join(dir, "profile.md"), From: 2, Steps: 3}
		}
		RunT(t, cfg, o)
		if name == "dev2" {
			prof, err := os.ReadFile(o.Profile.Path)
			if err != nil {
				t.Fatal(err)
			}
			gemms := regexp.MustCompile("`(gemm[a-z0-9_]*)`").FindAllStringSubmatch(string(prof), -1)
			kinds := map[string]bool{}
			for _, g := range gemms {
				if !strings.HasPrefix(g[1], "gemm_tf32_pipe_") {
					t.Errorf("the TF32 step ran %s", g[1])
				}
				kinds[strings.TrimSuffix(g[1], "_64")] = true
			}
			if len(kinds) != 3 {
				t.Errorf("the TF32 step's GEMMs: %v, want gemm_tf32_pipe_nt, _nn and _tn\n%s", kinds, prof)
			}
		}
		if dev.Matmul() != compute.MatmulTF32 {
			t.Fatalf("the device computed in %s", dev.Matmul())
		}
		closeCurves(t, LogCurves(t, cpuRun.Log), LogCurves(t, o.Log), tf32Curves)
		ckpts = append(ckpts, o.Checkpoint)
	}
	SameCheckpoints(t, ckpts[0], ckpts[1])
}

// tf32Curves is emulatorCurves with one validation query's rank free to move.
var tf32Curves = curveTolerance{lossRel: 1e-4, mrrAbs: 1e-3, mrrFlips: 1}
