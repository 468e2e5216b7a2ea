//go:build cgo

package emu

/*
#cgo CXXFLAGS: -std=c++17 -O2 -fno-fast-math -pthread -fsanitize=alignment,bounds-strict
#cgo LDFLAGS: -pthread -lm
#include <stdlib.h>
#include "emu_api.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/rocone/rocone/pkg/gpu/kernels"
)

// guard is the size of the guard zones on either side of every allocation.
const guard = 64

// Kernel is one kernel the emulator can run.
type Kernel struct {
	Name   string
	Params string // one kernels.Param* letter per parameter
}

var (
	kernelIndex = map[string]int{}
	kernelList  []Kernel
)

func init() {
	for i := 0; i < int(C.emu_num_kernels()); i++ {
		k := Kernel{Name: C.GoString(C.emu_kernel_name(C.int(i))), Params: C.GoString(C.emu_kernel_params(C.int(i)))}
		kernelIndex[k.Name] = i
		kernelList = append(kernelList, k)
	}
	_ = kernels.NVCCFlags // the sources this package compiles belong to package kernels
}

// Kernels lists the kernels compiled into the emulator.
func Kernels() []Kernel { return append([]Kernel(nil), kernelList...) }

type alloc struct {
	base unsafe.Pointer // start of the guarded block
	size int            // user bytes
}

// Device is an emulated GPU. Its methods are safe for concurrent use; launches run one
// at a time.
type Device struct {
	mu         sync.Mutex
	allocs     map[uint64]alloc // user pointer → allocation
	workers    int
	closed     bool
	lateCopies bool // cp.async copies land as late as their waits allow (SetLateCopies)
	reversed   bool // a block's threads run last to first between barriers (SetReverseThreads)
	fill       byte // the guard zones' bytes (SetGuardFill)

	markMu sync.Mutex
	marks  []time.Time // Mark's timestamps, since the last ResetMarks
}

// New returns an emulated device. Blocks run on min(GOMAXPROCS, 4) OS threads, or
// $ROCONE_EMU_THREADS.
func New() (*Device, error) {
	w := min(runtime.GOMAXPROCS(0), 4)
	if s := os.Getenv("ROCONE_EMU_THREADS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			w = n
		}
	}
	return &Device{allocs: map[uint64]alloc{}, workers: w, fill: GuardNaN}, nil
}

// SetGuardFill sets the byte the guard zones hold, GuardNaN (the default) or GuardMark,
// refilling the zones of the live allocations. A launch that writes into a zone fails
// either way, unless it writes the fill itself; a read of a zone reads the fill. The
// tests run the parity suite with both.
func (d *Device) SetGuardFill(b byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fill = b
	for _, a := range d.allocs {
		fillGuards(a, b)
	}
}

// SetLateCopies sets when the kernels' cp.async copies (the pipelined GEMMs') land in
// the launches that follow: false (the default), at once, as if the copy engine were
// instantaneous, which shows a copy into shared memory that another thread may still be
// reading; true, only when a wait requires it, the latest a device may land them, which
// shows a read of shared memory that no wait covered. The tests run those kernels both
// ways.
func (d *Device) SetLateCopies(late bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lateCopies = late
}

// SetReverseThreads sets the order in which the launches that follow run a block's
// threads between two barriers: false (the default), by index, first to last; true, last
// to first. CUDA orders them only by __syncthreads, so a kernel must give the same
// results either way: one that reads shared memory another thread writes in the same
// interval (a missing barrier) reads the value written in one order and the old value in
// the other, and so fails its parity test in one of the two wherever its results depend
// on it. The tests run the kernels both ways.
func (d *Device) SetReverseThreads(reversed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reversed = reversed
}

// Name describes the device.
func (d *Device) Name() string {
	return fmt.Sprintf("CPU launch emulator (%d worker threads, fibers per block)", d.workers)
}

// Alloc allocates bytes of zeroed device memory between two guard zones.
func (d *Device) Alloc(bytes int) (uint64, error) {
	if bytes < 0 {
		return 0, fmt.Errorf("emu: alloc of %d bytes", bytes)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, fmt.Errorf("emu: device closed")
	}
	base := C.malloc(C.size_t(bytes + 2*guard))
	if base == nil {
		return 0, fmt.Errorf("emu: out of memory allocating %d bytes", bytes)
	}
	a := alloc{base: base, size: bytes}
	clear(unsafe.Slice((*byte)(unsafe.Add(base, guard)), bytes))
	fillGuards(a, d.fill)
	p := uint64(uintptr(base)) + guard
	d.allocs[p] = a
	return p, nil
}

func fillGuards(a alloc, fill byte) {
	b := unsafe.Slice((*byte)(a.base), a.size+2*guard)
	for i := 0; i < guard; i++ {
		b[i], b[guard+a.size+i] = fill, fill
	}
}

// Free releases an allocation, reporting a guard zone that a kernel overwrote.
func (d *Device) Free(ptr uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, ok := d.allocs[ptr]
	if !ok {
		return fmt.Errorf("emu: free of 0x%x, which is not an allocation", ptr)
	}
	err := checkGuards(ptr, a, d.fill)
	delete(d.allocs, ptr)
	C.free(a.base)
	return err
}

func checkGuards(ptr uint64, a alloc, fill byte) error {
	b := unsafe.Slice((*byte)(a.base), a.size+2*guard)
	for i := 0; i < guard; i++ {
		if b[i] != fill {
			return fmt.Errorf("emu: write before the start of the %d-byte allocation at 0x%x", a.size, ptr)
		}
		if b[guard+a.size+i] != fill {
			return fmt.Errorf("emu: write past the end of the %d-byte allocation at 0x%x", a.size, ptr)
		}
	}
	return nil
}

// find returns the allocation holding [p, p+n), if any.
func (d *Device) find(p uint64, n int) (alloc, uint64, bool) {
	for base, a := range d.allocs {
		if p >= base && p+uint64(n) <= base+uint64(a.size) {
			return a, base, true
		}
	}
	return alloc{}, 0, false
}

func (d *Device) span(p uint64, n int, what string) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	a, base, ok := d.find(p, n)
	if !ok {
		return nil, fmt.Errorf("emu: %s of %d bytes at 0x%x: not inside one allocation", what, n, p)
	}
	return unsafe.Slice((*byte)(unsafe.Add(a.base, guard+int(p-base))), n), nil
}

// CopyIn copies bytes from host memory src to device memory dst.
func (d *Device) CopyIn(dst uint64, src unsafe.Pointer, bytes int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.span(dst, bytes, "copy to device")
	if err != nil {
		return err
	}
	copy(b, unsafe.Slice((*byte)(src), bytes))
	return nil
}

// CopyOut copies bytes from device memory src to host memory dst.
func (d *Device) CopyOut(dst unsafe.Pointer, src uint64, bytes int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.span(src, bytes, "copy from device")
	if err != nil {
		return err
	}
	copy(unsafe.Slice((*byte)(dst), bytes), b)
	return nil
}

// Copy copies bytes between device buffers.
func (d *Device) Copy(dst, src uint64, bytes int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	bd, err := d.span(dst, bytes, "device copy destination")
	if err != nil {
		return err
	}
	bs, err := d.span(src, bytes, "device copy source")
	if err != nil {
		return err
	}
	copy(bd, bs)
	return nil
}

// Zero sets bytes of device memory to zero.
func (d *Device) Zero(dst uint64, bytes int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.span(dst, bytes, "memset")
	if err != nil {
		return err
	}
	clear(b)
	return nil
}

// Launch runs a kernel to completion, with CUDA's launch checks: the kernel exists, the
// argument count matches, 1 ≤ grid ≤ (2³¹−1, 65535, 65535), 1 ≤ block ≤ (1024, 1024,
// 64) with at most 1024 threads, and every pointer argument is NULL or inside a live
// allocation. During it, the reads that emu_require_inside checks (a GEMM operand's
// chunks) must lie inside one live allocation. After it the guard zones are checked.
func (d *Device) Launch(kernel string, grid, block [3]int, args []uint64) error {
	i, ok := kernelIndex[kernel]
	if !ok {
		return fmt.Errorf("emu: no kernel named %q", kernel)
	}
	params := kernelList[i].Params
	if len(args) != len(params) {
		return fmt.Errorf("emu: %s takes %d arguments, got %d", kernel, len(params), len(args))
	}
	maxGrid := [3]int{1<<31 - 1, 65535, 65535}
	maxBlock := [3]int{1024, 1024, 64}
	for k := 0; k < 3; k++ {
		if grid[k] < 1 || grid[k] > maxGrid[k] || block[k] < 1 || block[k] > maxBlock[k] {
			return fmt.Errorf("emu: %s: invalid launch configuration grid %v block %v", kernel, grid, block)
		}
	}
	if block[0]*block[1]*block[2] > 1024 {
		return fmt.Errorf("emu: %s: block %v has more than 1024 threads", kernel, block)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("emu: device closed")
	}
	for k, c := range params {
		if c == kernels.ParamPtr && args[k] != 0 {
			if _, _, ok := d.find(args[k], 0); !ok {
				return fmt.Errorf("emu: %s: argument %d (0x%x) is not a device pointer", kernel, k, args[k])
			}
		}
	}
	cargs := (*C.uint64_t)(C.malloc(C.size_t(8 * max(len(args), 1))))
	defer C.free(unsafe.Pointer(cargs))
	ab := unsafe.Slice((*byte)(unsafe.Pointer(cargs)), 8*len(args))
	for k, a := range args {
		binary.NativeEndian.PutUint64(ab[8*k:], a)
	}
	cg := (*C.uint)(C.malloc(C.size_t(6 * 4)))
	defer C.free(unsafe.Pointer(cg))
	dims := unsafe.Slice((*C.uint)(cg), 6)
	for k := 0; k < 3; k++ {
		dims[k], dims[3+k] = C.uint(grid[k]), C.uint(block[k])
	}
	ptrs := make([]uint64, 0, len(d.allocs))
	for p := range d.allocs {
		ptrs = append(ptrs, p)
	}
	slices.Sort(ptrs)
	cranges := (*C.uint64_t)(C.malloc(C.size_t(16 * max(len(ptrs), 1))))
	defer C.free(unsafe.Pointer(cranges))
	ranges := unsafe.Slice((*uint64)(unsafe.Pointer(cranges)), 2*len(ptrs))
	for k, p := range ptrs {
		ranges[2*k], ranges[2*k+1] = p, p+uint64(d.allocs[p].size)
	}
	var errbuf [256]C.char
	late, reversed := C.int(0), C.int(0)
	if d.lateCopies {
		late = 1
	}
	if d.reversed {
		reversed = 1
	}
	if C.emu_launch(C.int(i), &dims[0], &dims[3], cargs, cranges, C.int(len(ptrs)), C.int(d.workers), late, reversed,
		&errbuf[0], C.int(len(errbuf))) != 0 {
		return fmt.Errorf("emu: %s: %s", kernel, C.GoString(&errbuf[0]))
	}
	for _, p := range ptrs {
		if err := checkGuards(p, d.allocs[p], d.fill); err != nil {
			return fmt.Errorf("emu: after %s: %w", kernel, err)
		}
	}
	return nil
}

// Sync waits for outstanding work: launches are synchronous here.
func (d *Device) Sync() error { return nil }

// Close frees every allocation.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for p, a := range d.allocs {
		C.free(a.base)
		delete(d.allocs, p)
	}
	d.closed = true
	return nil
}

// Mark takes a timestamp on the host clock: launches are synchronous here, so marks
// around a launch time it (cuda.Timer, for profiling).
func (d *Device) Mark() (int, error) {
	t := time.Now()
	d.markMu.Lock()
	defer d.markMu.Unlock()
	d.marks = append(d.marks, t)
	return len(d.marks) - 1, nil
}

// Elapsed returns the seconds from mark from[i] to mark to[i].
func (d *Device) Elapsed(from, to []int) ([]float64, error) {
	if len(from) != len(to) {
		return nil, fmt.Errorf("emu: Elapsed: %d start marks, %d end marks", len(from), len(to))
	}
	d.markMu.Lock()
	defer d.markMu.Unlock()
	out := make([]float64, len(from))
	for i := range from {
		a, b := from[i], to[i]
		if a < 0 || b < 0 || a >= len(d.marks) || b >= len(d.marks) {
			return nil, fmt.Errorf("emu: Elapsed: marks %d, %d: %d marks taken", a, b, len(d.marks))
		}
		out[i] = d.marks[b].Sub(d.marks[a]).Seconds()
	}
	return out, nil
}

// ResetMarks forgets the marks.
func (d *Device) ResetMarks() error {
	d.markMu.Lock()
	defer d.markMu.Unlock()
	d.marks = d.marks[:0]
	return nil
}
