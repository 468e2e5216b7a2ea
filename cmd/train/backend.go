package main

import (
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/compute/device"
)

// backend returns the kernels for --device (pkg/compute/device: the fast CPU backend that
// embed and rank use too, so that training's validation ranks like the rank stage). On
// CUDA, the kernels run on the GPU call by call; the device-resident training loop is not
// wired in yet (see the README).
func backend(name string, workers int) (compute.Kernels[float32], error) {
	return device.Backend(name, workers)
}
