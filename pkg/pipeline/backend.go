package pipeline

import (
	"fmt"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/compute/cpu"
)

// cudaBackend is set by the cuda-tagged build (backend_cuda.go); nil in a plain build.
var cudaBackend func() (compute.Backend, error)

// Backend returns the compute backend for a --device flag: "cpu" (the fast CPU kernels,
// on every core) or "cuda" (in binaries built with -tags cuda).
func Backend(device string) (compute.Backend, error) {
	switch device {
	case "", "cpu":
		return cpu.New(cpu.Options{}), nil
	case "cuda":
		if cudaBackend == nil {
			return nil, fmt.Errorf("--device cuda: this binary was built without CUDA; build one with `make build-cuda` (go build -tags cuda)")
		}
		return cudaBackend()
	}
	return nil, fmt.Errorf("--device %q: want cpu or cuda", device)
}
