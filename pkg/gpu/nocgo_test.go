//go:build !cgo

package gpu

import (
	"testing"

	"github.com/rocone/rocone/pkg/gpu/emu"
)

// TestEmulatorNeedsCgo fails a build without cgo, which leaves out this package's tests
// of the device path under the CUDA launch emulator (named in the message), so that they
// cannot vanish without a word (emu.NoCgoHelp).
func TestEmulatorNeedsCgo(t *testing.T) {
	t.Fatalf("left out: emu_test.go (TestEmulatorParity, TestEmulatorTF32RoundNaN), batched_emu_test.go (TestBatchedLaunches): %s", emu.NoCgoHelp)
}
