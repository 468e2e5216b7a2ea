//go:build !cgo

package gputest

import (
	"testing"

	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/gpu/emu"
)

// EmulatorDriver fails the test without cgo: the emulator is C++ built through cgo, and
// a device test that passed without it would have tested nothing. The message says what
// to install (emu.NoCgoHelp).
func EmulatorDriver(t testing.TB) gpu.Driver {
	t.Helper()
	t.Fatalf("gputest.EmulatorDriver: %s", emu.NoCgoHelp)
	return nil
}

func reversedDriver(t testing.TB) gpu.Driver { return EmulatorDriver(t) }
