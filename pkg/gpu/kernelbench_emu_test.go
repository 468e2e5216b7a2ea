//go:build cgo && !cuda

package gpu

import (
	"testing"

	"github.com/rocone/rocone/pkg/gpu/emu"
)

// benchDevice is the launch emulator at checkSize in a build without the cuda tag: the
// benches run there for correctness (their timings are the CPU's).
func benchDevice(b *testing.B) (*Device, benchSize) {
	e, err := emu.New()
	if err != nil {
		b.Fatal(err)
	}
	d := NewDevice(e)
	b.Cleanup(func() { d.Close() })
	return d, checkSize
}
