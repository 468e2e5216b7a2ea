//go:build cuda

package gpumodel

import (
	"testing"

	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/model"
)

// TestGPUStepMatchesCPU is TestEmulatorMatchesCPU on a real device (scripts/cuda/gpu-check.sh).
func TestGPUStepMatchesCPU(t *testing.T) {
	dev, err := gpu.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	for _, v := range model.Variants {
		for _, dim := range []int{8, 64} {
			t.Run(string(v), func(t *testing.T) { checkStepMatchesCPU(t, dev, v, dim) })
		}
	}
}

// TestGPURankMatchesCPU is TestEmulatorRankMatchesCPU on a real device, at a larger size.
func TestGPURankMatchesCPU(t *testing.T) {
	dev, err := gpu.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	for _, v := range model.Variants {
		t.Run(string(v), func(t *testing.T) { checkRankMatchesCPU(t, dev, v, 3000, 96) })
	}
}

// TestGPUEmbedMatchesCPU is TestEmulatorEmbedMatchesCPU on a real device (embed --device
// cuda's EmbedBatch against the CPU's cones, and batch-invariant).
func TestGPUEmbedMatchesCPU(t *testing.T) {
	dev, err := gpu.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	for _, v := range model.Variants {
		t.Run(string(v), func(t *testing.T) { checkEmbedMatchesCPU(t, dev, v, 96) })
	}
}
