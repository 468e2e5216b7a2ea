//go:build !cgo

package emu

import (
	"testing"
)

// TestEmulatorNeedsCgo fails a build without cgo, which leaves out this package's tests
// of the device path under the CUDA launch emulator (named in the message), so that they
// cannot vanish without a word (emu.NoCgoHelp).
func TestEmulatorNeedsCgo(t *testing.T) {
	t.Fatalf("left out: emu_test.go (TestKernelsMatchPTX, TestLaunchAndChecks, TestBarrier): %s", NoCgoHelp)
}
