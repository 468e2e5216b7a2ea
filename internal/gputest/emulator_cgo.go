//go:build cgo

package gputest

import (
	"testing"

	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/gpu/emu"
)

// EmulatorDriver opens package emu's launch emulator as a driver, for a test that wraps
// it (to inject failures) before it makes a Device of it; closing the Device closes it.
func EmulatorDriver(t testing.TB) gpu.Driver {
	t.Helper()
	e, err := emu.New()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// reversedDriver is EmulatorDriver running each block's threads last to first, its guard
// zones holding emu.GuardMark (pkg/gpu's TestEmulatorReverseThreads does the same).
func reversedDriver(t testing.TB) gpu.Driver {
	t.Helper()
	e := EmulatorDriver(t).(*emu.Device)
	e.SetReverseThreads(true)
	e.SetGuardFill(emu.GuardMark)
	return e
}
