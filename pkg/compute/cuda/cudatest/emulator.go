package cudatest

import (
	"testing"

	"github.com/rocone/rocone/pkg/compute/cuda"
)

// Emulator is a Device over the launch emulator (EmulatorDriver), closed when the test
// ends.
func Emulator(t testing.TB) *cuda.Device {
	t.Helper()
	d := cuda.NewDevice(EmulatorDriver(t))
	t.Cleanup(func() { d.Close() })
	return d
}
