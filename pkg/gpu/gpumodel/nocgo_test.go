//go:build !cgo

package gpumodel

import (
	"testing"

	"github.com/rocone/rocone/pkg/gpu/emu"
)

// TestEmulatorNeedsCgo fails a build without cgo, which leaves out this package's tests
// of the device path under the CUDA launch emulator (named in the message), so that they
// cannot vanish without a word (emu.NoCgoHelp).
func TestEmulatorNeedsCgo(t *testing.T) {
	t.Fatalf("left out: model_test.go (TestEmulatorMatchesCPU), rank_test.go (TestEmulatorRankMatchesCPU, TestEmulatorEmbedMatchesCPU) and host_test.go (BenchmarkHostShare): %s", emu.NoCgoHelp)
}
