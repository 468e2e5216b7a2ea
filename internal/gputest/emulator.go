package gputest

import (
	"testing"

	"github.com/rocone/rocone/pkg/gpu"
)

// Emulator is a Device over the launch emulator (EmulatorDriver), closed when the test
// ends. Its launches are profiled (untimed) for the whole test: when the test ends, a
// launch that states no work (gpu.Work, gpu.CheckWork) fails it. A test may attach a
// profiler of its own meanwhile (Device.Profile); the launches it records are not
// checked here.
func Emulator(t testing.TB) *gpu.Device {
	t.Helper()
	return emulator(t, EmulatorDriver(t))
}

// EmulatorReversed is Emulator with each block's threads run last to first between
// barriers (emu.Device.SetReverseThreads): the device orders them only by its barriers,
// so a test that passes on both finds no missing barrier that either order would show.
// Its guard zones hold the other fill (emu.GuardMark), which shows a write of all-ones
// bytes past a buffer that Emulator's NaN fill hides.
func EmulatorReversed(t testing.TB) *gpu.Device {
	t.Helper()
	return emulator(t, reversedDriver(t))
}

func emulator(t testing.TB, drv gpu.Driver) *gpu.Device {
	t.Helper()
	d := gpu.NewDevice(drv)
	p := gpu.NewProfiler(d, false)
	d.Profile(p)
	t.Cleanup(func() {
		d.Close()
		recs, err := p.Records()
		if err == nil {
			err = gpu.CheckWork(recs)
		}
		if err != nil {
			t.Error(err)
		}
	})
	return d
}
