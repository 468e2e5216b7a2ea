// Package device picks what a --device flag runs on: the fast CPU kernels, or, in binaries
// built with -tags cuda, the model resident on a CUDA device (package gpumodel) beside
// them. It is the one place the stages turn the flag into a backend, so training,
// embedding and ranking always run the same code, and the seam between the stages and the
// device's packages: the train stage trains, and the embed and rank stages embed and rank,
// on a device through the train.Device and eval.RankDevice of its Choice, without
// importing them. There is one GPU path, the resident one: what the stages still compute
// on the host (the host model's bookkeeping, `rank --ask`) runs on the CPU's fast
// kernels on either device.
package device

import (
	"fmt"
	"os"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/compute/cpu"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/gpu/gpumodel"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/train"
)

// openCUDA is set by the cuda-tagged build (cuda.go); nil in a plain build.
var openCUDA func() (*gpu.Device, error)

// A Choice is what a --device flag selects.
type Choice struct {
	// Kernels are the kernels a stage's host-side model computes with: the fast CPU
	// backend on either device (with cuda, the GPU's work goes through Train and Rank).
	Kernels compute.Backend
	// Train runs a run's updates with the model resident on the device (gpumodel's
	// TrainDevice); nil: on the host.
	Train train.Device
	// Rank ranks and embeds with the model resident on the device: the model is uploaded
	// without gradients or optimiser (gpumodel.NewEval) and every batch is embedded (or
	// its given cones uploaded), scored and ranked there; nil: on the host.
	Rank eval.RankDevice
}

// Open returns the Choice for name: "cpu" or "" (the fast CPU backend, nothing resident)
// or "cuda" (the resident paths, in a cuda-tagged binary, beside the fast CPU backend).
// For cuda, $ROCONE_GPU_REVERT (gpu.RevertEnv) turns the device's newest choices back,
// for a device run's A/B, and Open says so on stderr; a name it does not know is an
// error.
func Open(name string, workers int) (Choice, error) {
	kernels := cpu.New(cpu.Options{Workers: workers})
	switch name {
	case "", "cpu":
		return Choice{Kernels: kernels}, nil
	case "cuda":
		if openCUDA == nil {
			return Choice{}, fmt.Errorf("--device cuda: this binary was built without CUDA; build one with `make build-cuda` (go build -tags cuda)")
		}
		reverts, err := gpu.RevertsFromEnv()
		if err != nil {
			return Choice{}, err
		}
		dev, err := openCUDA()
		if err != nil {
			return Choice{}, err
		}
		if reverts != (gpu.Reverts{}) {
			dev.SetReverts(reverts)
			fmt.Fprintf(os.Stderr, "note: $%s=%s: %s\n", gpu.RevertEnv, reverts, reverts.Describe())
		}
		return Choice{Kernels: kernels, Train: gpumodel.TrainDevice(dev), Rank: RankDevice(dev)}, nil
	}
	return Choice{}, fmt.Errorf("--device %q: want cpu or cuda", name)
}

// RankDevice returns the eval.RankDevice of d (Choice.Rank); RankDevice(nil) is nil: rank
// on the host.
func RankDevice(d *gpu.Device) eval.RankDevice {
	if d == nil {
		return nil
	}
	return cudaRanking{d}
}

type cudaRanking struct{ dev *gpu.Device }

func (r cudaRanking) Load(m *model.Model[float32]) (eval.DeviceRanker, error) {
	dm, err := gpumodel.NewEval(r.dev, m)
	if err != nil {
		return nil, err
	}
	return dm, nil
}
