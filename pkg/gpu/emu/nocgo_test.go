//go:build !cgo

package emu

import (
	"testing"
)

// TestEmulatorNeedsCgo fails a build without cgo, which leaves out this package's tests
// of the device path under the CUDA launch emulator (named in the message: emu.NoCgoLeftOut), so that they
// cannot vanish without a word (emu.NoCgoHelp).
func TestEmulatorNeedsCgo(t *testing.T) {
	left, err := NoCgoLeftOut(".")
	if err != nil {
		t.Fatal(err)
	}
	t.Fatalf("left out: %s: %s", left, NoCgoHelp)
}
