// Package device picks the compute backend for a --device flag: the fast CPU kernels, or
// the CUDA kernels in binaries built with -tags cuda. It is the one place the stages turn a
// flag into kernels, so training, embedding and ranking always run the same code, and the
// seam between the stages and the device's packages: the rank stage ranks on a device
// through the eval.RankDevice that RankDevice gives, without importing them.
package device

import (
	"fmt"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/compute/cpu"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/gpu/gpumodel"
	"github.com/rocone/rocone/pkg/model"
)

// openCUDA is set by the cuda-tagged build (cuda.go); nil in a plain build.
var openCUDA func() (*gpu.Device, error)

// Backend returns the kernels for name: "cpu" (the fast CPU backend; workers goroutines,
// 0 for every core; its results do not depend on workers) or "cuda".
func Backend(name string, workers int) (compute.Backend, error) {
	k, _, err := Open(name, workers)
	return k, err
}

// Open is Backend that also returns, for "cuda", the device the kernels run on (nil for
// "cpu"), for the stages that keep data resident there (training).
func Open(name string, workers int) (compute.Backend, *gpu.Device, error) {
	switch name {
	case "", "cpu":
		return cpu.New(cpu.Options{Workers: workers}), nil, nil
	case "cuda":
		if openCUDA == nil {
			return nil, nil, fmt.Errorf("--device cuda: this binary was built without CUDA; build one with `make build-cuda` (go build -tags cuda)")
		}
		dev, err := openCUDA()
		if err != nil {
			return nil, nil, err
		}
		return gpu.NewBackend(dev), dev, nil
	}
	return nil, nil, fmt.Errorf("--device %q: want cpu or cuda", name)
}

// RankDevice returns the eval.RankDevice of d, for `rank --device cuda`: the model is
// uploaded without gradients or optimiser (gpumodel.NewEval) and every batch is scored
// and ranked there (gpumodel.Model.RankBatch). RankDevice(nil) is nil: rank on the host.
// With it the rank stage needs no import of the device's packages.
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
