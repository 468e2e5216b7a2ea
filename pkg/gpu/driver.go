package gpu

import (
	"errors"
	"unsafe"
)

// Driver is what the host code needs from a CUDA device: memory and launches. The real
// implementation (built with -tags cuda) wraps the CUDA driver API; package emu's
// *Device implements it on the CPU.
//
// Pointers are device addresses as uint64. Kernel arguments are packed one per uint64:
// pointers whole, int and float in the low 32 bits, double as its bits (see Device's
// launch). Launch may be asynchronous: an execution error may only surface at a later
// Sync or copy.
type Driver interface {
	Name() string
	Alloc(bytes int) (uint64, error)
	Free(ptr uint64) error
	CopyIn(dst uint64, src unsafe.Pointer, bytes int) error  // host → device, synchronous
	CopyOut(dst unsafe.Pointer, src uint64, bytes int) error // device → host, synchronous
	Copy(dst, src uint64, bytes int) error                   // device → device
	Zero(dst uint64, bytes int) error
	Launch(kernel string, grid, block [3]int, args []uint64) error
	Sync() error
	Close() error
}

// AsyncCopier is a Driver that can enqueue a host → device copy in stream order, after the
// work enqueued before it and before the work enqueued after it, without waiting for the
// device. src may be reused as soon as CopyInAsync returns: the driver stages it. The CUDA
// driver stages through page-locked memory (staging_cuda.go); a driver without it (the
// emulator, which runs every launch before returning) copies with CopyIn, which is then
// the same thing (Buffer.UploadAsync).
type AsyncCopier interface {
	CopyInAsync(dst uint64, src unsafe.Pointer, bytes int) error
}

// AsyncDownloader is a Driver that can enqueue a device → host copy in stream order and
// wait for that copy alone: the work enqueued after it goes on meanwhile. fetch copies the
// bytes to dst once the copy has landed; it must be called once, before many more
// downloads (the CUDA driver's ring of page-locked slots refuses a stale fetch).
type AsyncDownloader interface {
	CopyOutAsync(src uint64, bytes int) (fetch func(dst unsafe.Pointer) error, err error)
}

// ErrNotBuilt is returned by Open in a binary built without the cuda build tag.
var ErrNotBuilt = errors.New("cuda: this binary was built without GPU support (rebuild with -tags cuda; see scripts/cuda/install-deps.sh)")

// ErrNoDevice is returned by Open when the driver reports no CUDA device.
var ErrNoDevice = errors.New("cuda: no CUDA device found")
