// Package emu runs the CUDA kernels of package kernels on the CPU, for tests on machines
// without a GPU or a CUDA installation.
//
// The kernel sources (../kernels/*.cu) are compiled through cgo as C++ with emu.h, which
// defines the CUDA built-ins they use; a launch runs the grid's blocks on a few OS
// threads and each block's threads as cooperative fibers with a real barrier for
// __syncthreads, so shared-memory tiling and block reductions are exercised as on the
// device. Device memory is C memory with guard zones, checked after every launch, and
// every pointer argument must point into a live allocation. The zones hold 0xFF bytes, so
// that a read past a buffer reads a NaN (an int −1) that shows in the results, or 0xA5
// bytes, which show a write of all-ones bytes that 0xFF hides (SetGuardFill). A GEMM
// operand's reads (cp.async's source, rt_load4) must lie inside one live allocation
// (emu_require_inside): their values past an operand's edge reach only outputs that are
// never written, so a read past the end would show nowhere else. Every load
// and store is checked for its type's alignment (compiled with -fsanitize=alignment, the
// handler in emu.cc), and cp.async's and ldmatrix's addresses for their 16 bytes
// (emu_require_aligned): an access at an address the device would fault on fails the
// launch with "misaligned address", where the CPU would just do it. So does an index past
// an array of known size, a __shared__ tile, a thread's own array or a struct's last
// array member (compiled with -fsanitize=bounds-strict, the handler in emu.cc), where the
// CPU would read or write a neighbouring variable. Between barriers a block's threads run
// in index order, or last to first (SetReverseThreads), so that a missing barrier shows
// in one order or the other.
//
// *Device implements cuda.Driver (structurally: this package does not import package
// cuda), so cuda.NewDevice(emu.New()) gives the GPU code path, host side included, on
// the CPU. It needs cgo (gcc/g++); without cgo New returns an error.
package emu
