package main

import (
	"fmt"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/compute/cpu"
	"github.com/rocone/rocone/pkg/compute/cuda"
)

// backend returns the kernels for --device: on the CPU, the fast backend of
// pkg/compute/cpu (what the embed and rank stages use, so that training's validation
// ranks like the rank stage does); its results do not depend on the number of workers.
// This is the one place train picks its kernels; pkg/train takes any
// compute.Kernels[float32].
func backend(device string, workers int) (compute.Kernels[float32], error) {
	switch device {
	case "cpu":
		return cpu.New(cpu.Options{Workers: workers}), nil
	case "cuda":
		if !cuda.Built {
			return nil, fmt.Errorf("--device cuda: this binary was built without CUDA; build it with `make build-cuda` (go build -tags cuda)")
		}
		return nil, fmt.Errorf("--device cuda: training on CUDA is not wired into train yet; use --device cpu")
	}
	return nil, fmt.Errorf("--device %q: want cpu or cuda", device)
}
