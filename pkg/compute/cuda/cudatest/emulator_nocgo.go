//go:build !cgo

package cudatest

import (
	"testing"

	"github.com/rocone/rocone/pkg/compute/cuda"
	"github.com/rocone/rocone/pkg/compute/cuda/emu"
)

// EmulatorDriver fails the test without cgo: the emulator is C++ built through cgo, and
// a device test that passed without it would have tested nothing. The message says what
// to install (emu.NoCgoHelp).
func EmulatorDriver(t testing.TB) cuda.Driver {
	t.Helper()
	t.Fatalf("cudatest.EmulatorDriver: %s", emu.NoCgoHelp)
	return nil
}
