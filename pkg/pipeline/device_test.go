//go:build cgo

package pipeline

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rocone/rocone/internal/gputest"
	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/device"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/model"
)

// TestRankOnDevice: `rank --device cuda` ranks on the device (here package emu's
// emulator) and writes the same artifact rows as the CPU, for every variant.
func TestRankOnDevice(t *testing.T) {
	dir := t.TempDir()
	queries := fixture(t, dir)
	for _, variant := range model.Variants {
		t.Run(string(variant), func(t *testing.T) {
			ck := filepath.Join(dir, string(variant)+".arrow")
			writeCheckpoint(t, ck, variant, 12, 3)
			dev := gputest.Emulator(t)
			cpu, onGPU := filepath.Join(dir, "cpu.arrow"), filepath.Join(dir, "gpu.arrow")
			if err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: cpu, Kernels: compute.Reference[float32]{}}); err != nil {
				t.Fatal(err)
			}
			if err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: onGPU, Kernels: gpu.NewBackend(dev), Device: device.RankDevice(dev), Batch: 64}); err != nil {
				t.Fatal(err)
			}
			_, a, err := artifact.ReadRanks(cpu)
			if err != nil {
				t.Fatal(err)
			}
			_, b, err := artifact.ReadRanks(onGPU)
			if err != nil {
				t.Fatal(err)
			}
			if len(a) != len(b) || len(a) == 0 {
				t.Fatalf("%d rows from the CPU, %d from the device", len(a), len(b))
			}
			for i := range a {
				if fmt.Sprint(a[i]) != fmt.Sprint(b[i]) {
					t.Fatalf("row %d: CPU %+v, device %+v", i, a[i], b[i])
				}
			}
		})
	}
}
