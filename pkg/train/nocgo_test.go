//go:build !cgo

package train

import (
	"testing"

	"github.com/rocone/rocone/pkg/gpu/emu"
)

// TestEmulatorNeedsCgo fails a build without cgo, which leaves out this package's tests
// of the device path under the CUDA launch emulator (named in the message: emu.NoCgoLeftOut), so that they
// cannot vanish without a word (emu.NoCgoHelp).
func TestEmulatorNeedsCgo(t *testing.T) {
	left, err := emu.NoCgoLeftOut(".")
	if err != nil {
		t.Fatal(err)
	}
	t.Fatalf("left out: %s: %s", left, emu.NoCgoHelp)
}
