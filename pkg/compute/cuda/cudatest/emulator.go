package cudatest

import (
	"testing"

	"github.com/rocone/rocone/pkg/compute/cuda"
)

// Emulator is a Device over the launch emulator (EmulatorDriver), closed when the test
// ends. Its launches are profiled (untimed) for the whole test: when the test ends, a
// launch that states no work (cuda.Work, cuda.CheckWork) fails it. A test may attach a
// profiler of its own meanwhile (Device.Profile); the launches it records are not
// checked here.
func Emulator(t testing.TB) *cuda.Device {
	t.Helper()
	d := cuda.NewDevice(EmulatorDriver(t))
	p := cuda.NewProfiler(d, false)
	d.Profile(p)
	t.Cleanup(func() {
		d.Close()
		recs, err := p.Records()
		if err == nil {
			err = cuda.CheckWork(recs)
		}
		if err != nil {
			t.Error(err)
		}
	})
	return d
}
