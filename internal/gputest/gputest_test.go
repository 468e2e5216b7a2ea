package gputest_test

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/rocone/rocone/internal/gputest"
	"github.com/rocone/rocone/pkg/gpu"
)

// TestNullDriver: the null driver hands out distinct, page-aligned addresses far from
// zero, counts launches, and downloads Fill bytes, on a Device as the benchmarks use it.
func TestNullDriver(t *testing.T) {
	n := &gputest.NullDriver{Fill: 1}
	seen := map[uint64]bool{}
	for _, bytes := range []int{1, 4096, 10000, 0} {
		p, err := n.Alloc(bytes)
		if err != nil || p < 1<<40 || p%4096 != 0 || seen[p] {
			t.Fatalf("Alloc(%d) = %#x, %v (before: %v)", bytes, p, err, seen)
		}
		seen[p] = true
	}
	for i := 0; i < 3; i++ {
		if err := n.Launch("k", [3]int{1, 1, 1}, [3]int{1, 1, 1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := n.Launches(); got != 3 {
		t.Fatalf("Launches() = %d, want 3", got)
	}
	var out [3]int32
	if err := n.CopyOut(unsafe.Pointer(&out[0]), 0, len(out)*4); err != nil {
		t.Fatal(err)
	}
	if want := [3]int32{16843009, 16843009, 16843009}; out != want {
		t.Fatalf("CopyOut gave %v, want %v", out, want)
	}
	b, err := gpu.FromHost(gpu.NewDevice(n), []float32{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.ToHost(); err != nil || len(got) != 3 || got[0] == 1 {
		t.Fatalf("a buffer on the null driver reads back %v, %v: want Fill bytes", got, err)
	}
}

// TestEmulator: a buffer uploaded to the emulator device reads back unchanged. Without
// cgo it fails with the message that says what to install.
func TestEmulator(t *testing.T) {
	d := gputest.Emulator(t)
	in := []float32{1, -2.5, 3e-7, 4}
	b, err := gpu.FromHost(d, in)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	got, err := b.ToHost()
	if err != nil || !slices.Equal(got, in) {
		t.Fatalf("read back %v, %v; want %v", got, err, in)
	}
}
