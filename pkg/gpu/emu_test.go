//go:build cgo

package gpu

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/computetest"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/gpu/emu"
)

var _ Timer = (*emu.Device)(nil)

// emuDevice is a device over the launch emulator, wrapped by wrap (nil: none), closed
// when the test ends. (Package gputest has the same for the packages above this one,
// which this package's tests cannot import.) Every launch of the test is profiled
// (untimed): when the test ends, one that states no work (Work) fails it, so every test
// on the emulator checks that its kernels' launch sites state their work.
func emuDevice(t *testing.T, wrap func(Driver) Driver) *Device {
	t.Helper()
	e, err := emu.New()
	if err != nil {
		t.Fatal(err)
	}
	var drv Driver = e
	if wrap != nil {
		drv = wrap(e)
	}
	d := NewDevice(drv)
	p := NewProfiler(d, false)
	d.Profile(p)
	t.Cleanup(func() {
		d.Close()
		recs, err := p.Records()
		if err == nil {
			err = CheckWork(recs)
		}
		if err != nil {
			t.Error(err)
		}
	})
	return d
}

// TestEmulatorParity runs the parity suite on the CPU launch emulator.
func TestEmulatorParity(t *testing.T) { runParity(t, emuDevice(t, nil)) }

// faultyDriver fails every launch after the first ok ones.
type faultyDriver struct {
	Driver
	ok int
}

func (f *faultyDriver) Launch(kernel string, grid, block [3]int, args []uint64) error {
	if f.ok == 0 {
		return errors.New("injected launch failure")
	}
	f.ok--
	return f.Driver.Launch(kernel, grid, block, args)
}

// TestBackendFallback: after a device error, Backend's results still equal the
// reference's, computed on the CPU, and Err reports the error.
func TestBackendFallback(t *testing.T) {
	d := emuDevice(t, func(e Driver) Driver { return &faultyDriver{Driver: e, ok: 2} })
	b := NewBackend(d)
	x, w, bias := []float32{1, 2, 3, 4}, []float32{1, 0, -1, 2, 0.5, 1}, []float32{0.5, -1, 2}
	want := make([]float32, 6)
	compute.Reference[float32]{}.LinearForward(want, x, w, bias, 2, 2, 3)
	for i := 0; i < 4; i++ {
		y := make([]float32, 6)
		dx, dw := []float32{1, 1, 1, 1}, make([]float32, 6)
		b.LinearForward(y, x, w, bias, 2, 2, 3)
		compare(t, "y", want, y)
		// Backward through the fallback must not double-count a partial device result.
		dx1, dw1 := []float32{1, 1, 1, 1}, make([]float32, 6)
		compute.Reference[float32]{}.LinearBackward(dx1, dw1, nil, want, x, w, 2, 2, 3)
		b.LinearBackward(dx, dw, nil, want, x, w, 2, 2, 3)
		compare(t, "dx", dx1, dx)
		compare(t, "dw", dw1, dw)
	}
	if err := b.Err(); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("Err() = %v", err)
	}
	if b.Fallbacks() == 0 {
		t.Fatal("no fallbacks counted")
	}
}

// TestEmulatorTF32RoundNaN: under the emulator tf32_round is the C twin of
// compute.RoundTF32, equal bit for bit on every hand-picked pattern, NaNs included (the
// parity case TF32Round, which also runs on the device, compares NaNs by kind only).
func TestEmulatorTF32RoundNaN(t *testing.T) {
	h := &harness{t: t, d: emuDevice(t, nil)}
	var in []uint32
	for _, c := range computetest.TF32Cases {
		in = append(in, c.In)
	}
	got := roundOnDevice(h, in)
	for i, c := range computetest.TF32Cases {
		if g := math.Float32bits(got[i]); g != c.Out {
			t.Errorf("%s: tf32_round(%#08x) = %#08x, want %#08x", c.Name, c.In, g, c.Out)
		}
	}
}
