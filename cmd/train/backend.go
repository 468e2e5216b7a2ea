package main

import (
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/device"
	"github.com/rocone/rocone/pkg/gpu"
)

// backend returns the kernels for --device (pkg/device: the fast CPU backend that
// embed and rank use too, so that training's validation ranks like the rank stage) and,
// for cuda, the GPU on which the whole update runs (package gpumodel).
func backend(name string, workers int) (compute.Kernels[float32], *gpu.Device, error) {
	return device.Open(name, workers)
}
