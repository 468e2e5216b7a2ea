//go:build cgo

package cudatest

import (
	"testing"

	"github.com/rocone/rocone/pkg/compute/cuda"
	"github.com/rocone/rocone/pkg/compute/cuda/emu"
)

// EmulatorDriver opens package emu's launch emulator as a driver, for a test that wraps
// it (to inject failures) before it makes a Device of it; closing the Device closes it.
func EmulatorDriver(t testing.TB) cuda.Driver {
	t.Helper()
	e, err := emu.New()
	if err != nil {
		t.Fatal(err)
	}
	return e
}
