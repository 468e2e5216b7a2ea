package main

import (
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/compute/cuda"
	"github.com/rocone/rocone/pkg/device"
)

// backend returns the kernels for --device (pkg/device: the fast CPU backend that
// embed and rank use too, so that training's validation ranks like the rank stage) and,
// for cuda, the GPU on which the whole update runs (package cudamodel).
func backend(name string, workers int) (compute.Kernels[float32], *cuda.Device, error) {
	return device.Open(name, workers)
}
