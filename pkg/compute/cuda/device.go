package cuda

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/rocone/rocone/pkg/compute/cuda/kernels"
)

// Device is a CUDA device (or its emulation) with the RoConE kernels loaded: device
// buffers, checked kernel launches and the operations built from them.
//
// A Device may be used from several goroutines; the driver serialises the calls. Its
// operations enqueue kernels and return without waiting where the driver allows it
// (the real driver, in order, on one stream); a download, Sync or Close waits, and
// reports any execution error.
type Device struct {
	drv       Driver
	entries   map[string]kernels.Entry
	maxBlocks int    // cap on the grid of element-wise kernels (they grid-stride)
	gridY     int    // cap on grid.y of the row-looping kernels (they grid-stride in y)
	arena     *Arena // where operators take temporaries from (UseArena); nil: Alloc
}

// NewDevice wraps a driver: the real one from Open, or package emu's emulator.
func NewDevice(drv Driver) *Device {
	d := &Device{drv: drv, entries: map[string]kernels.Entry{}, maxBlocks: 8192, gridY: maxGridY}
	for _, e := range kernels.Entries() {
		d.entries[e.Name] = e
	}
	return d
}

// Driver returns the underlying driver.
func (d *Device) Driver() Driver { return d.drv }

// Name describes the device.
func (d *Device) Name() string { return d.drv.Name() }

// Sync waits for every enqueued kernel and reports the first execution error.
func (d *Device) Sync() error { return d.drv.Sync() }

// Close releases the device (its context, modules and stream). Buffers must not be used
// afterwards.
func (d *Device) Close() error { return d.drv.Close() }

// ---------------------------------------------------------------------------------------
// Buffers.

// Elem is the element type of a device buffer.
type Elem interface{ ~float32 | ~int32 | ~float64 }

// Buffer is a device array of n elements of T. A nil *Buffer is a NULL pointer for the
// kernels (an optional input or a skipped gradient).
type Buffer[T Elem] struct {
	dev   *Device
	ptr   uint64
	n     int
	owned bool
}

// F32 and I32 are the usual buffers.
type (
	F32 = Buffer[float32]
	I32 = Buffer[int32]
	F64 = Buffer[float64]
)

func sizeOf[T Elem]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

// Alloc allocates a zeroed buffer of n elements.
func Alloc[T Elem](d *Device, n int) (*Buffer[T], error) {
	if n < 0 {
		return nil, fmt.Errorf("cuda: alloc of %d elements", n)
	}
	b := &Buffer[T]{dev: d, n: n, owned: true}
	if n == 0 {
		return b, nil
	}
	p, err := d.drv.Alloc(n * sizeOf[T]())
	if err != nil {
		return nil, err
	}
	b.ptr = p
	if err := d.drv.Zero(p, n*sizeOf[T]()); err != nil {
		d.drv.Free(p)
		return nil, err
	}
	return b, nil
}

// FromHost allocates a buffer holding a copy of src.
func FromHost[T Elem](d *Device, src []T) (*Buffer[T], error) {
	b, err := Alloc[T](d, len(src))
	if err != nil {
		return nil, err
	}
	if err := b.Upload(src); err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}

// Len is the number of elements.
func (b *Buffer[T]) Len() int {
	if b == nil {
		return 0
	}
	return b.n
}

// Ptr is the device address (0 for a nil or empty buffer).
func (b *Buffer[T]) Ptr() uint64 {
	if b == nil {
		return 0
	}
	return b.ptr
}

// Slice returns a view of elements [off, off+n) (not to be freed).
func (b *Buffer[T]) Slice(off, n int) *Buffer[T] {
	if off < 0 || n < 0 || off+n > b.n {
		panic(fmt.Sprintf("cuda: slice [%d, %d) of a %d-element buffer", off, off+n, b.n))
	}
	return &Buffer[T]{dev: b.dev, ptr: b.ptr + uint64(off*sizeOf[T]()), n: n}
}

// Free releases the buffer's memory (a no-op for nil buffers and views).
func (b *Buffer[T]) Free() error {
	if b == nil || !b.owned || b.ptr == 0 {
		return nil
	}
	p := b.ptr
	b.ptr, b.n = 0, 0
	return b.dev.drv.Free(p)
}

// Upload copies src into the first len(src) elements.
func (b *Buffer[T]) Upload(src []T) error {
	if len(src) > b.Len() {
		return fmt.Errorf("cuda: upload of %d elements into a %d-element buffer", len(src), b.Len())
	}
	if len(src) == 0 {
		return nil
	}
	return b.dev.drv.CopyIn(b.ptr, unsafe.Pointer(&src[0]), len(src)*sizeOf[T]())
}

// Download copies the first len(dst) elements into dst, waiting for pending kernels.
func (b *Buffer[T]) Download(dst []T) error {
	if len(dst) > b.Len() {
		return fmt.Errorf("cuda: download of %d elements from a %d-element buffer", len(dst), b.Len())
	}
	if len(dst) == 0 {
		return nil
	}
	return b.dev.drv.CopyOut(unsafe.Pointer(&dst[0]), b.ptr, len(dst)*sizeOf[T]())
}

// ToHost returns a copy of the whole buffer.
func (b *Buffer[T]) ToHost() ([]T, error) {
	out := make([]T, b.Len())
	return out, b.Download(out)
}

// Zero clears the buffer.
func (b *Buffer[T]) Zero() error {
	if b.Len() == 0 {
		return nil
	}
	return b.dev.drv.Zero(b.ptr, b.n*sizeOf[T]())
}

// CopyFrom copies src (same length) into b on the device.
func (b *Buffer[T]) CopyFrom(src *Buffer[T]) error {
	if src.Len() != b.Len() {
		return fmt.Errorf("cuda: copy of a %d-element buffer into a %d-element one", src.Len(), b.Len())
	}
	if b.n == 0 {
		return nil
	}
	return b.dev.drv.Copy(b.ptr, src.ptr, b.n*sizeOf[T]())
}

// FreeAll frees the given buffers, ignoring nils; it returns the first error.
func FreeAll(bs ...interface{ Free() error }) error {
	var first error
	for _, b := range bs {
		if b == nil {
			continue
		}
		if err := b.Free(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// ---------------------------------------------------------------------------------------
// Launches.

// arg is one kernel argument and the PTX parameter kind it is meant for.
type arg struct {
	v    uint64
	kind byte
	bad  string // why the value cannot be passed, if it cannot
}

func ptr[T Elem](b *Buffer[T]) arg { return arg{v: b.Ptr(), kind: kernels.ParamPtr} }

func i32(n int) arg {
	if n < math.MinInt32 || n > math.MaxInt32 {
		return arg{kind: kernels.ParamI32, bad: fmt.Sprintf("int %d does not fit in 32 bits", n)}
	}
	return arg{v: uint64(uint32(int32(n))), kind: kernels.ParamI32}
}

func boolArg(b bool) arg {
	if b {
		return i32(1)
	}
	return i32(0)
}

func f32(x float32) arg { return arg{v: uint64(math.Float32bits(x)), kind: kernels.ParamF32} }

func f64(x float64) arg { return arg{v: math.Float64bits(x), kind: kernels.ParamF64} }

// launch checks the arguments against the kernel's PTX signature and launches it.
func (d *Device) launch(name string, grid, block [3]int, args ...arg) error {
	e, ok := d.entries[name]
	if !ok {
		return fmt.Errorf("cuda: no kernel %q in the PTX", name)
	}
	if len(args) != len(e.Params) {
		return fmt.Errorf("cuda: %s takes %d arguments, got %d", name, len(e.Params), len(args))
	}
	packed := make([]uint64, len(args))
	for i, a := range args {
		if a.bad != "" {
			return fmt.Errorf("cuda: %s argument %d: %s", name, i, a.bad)
		}
		if a.kind != e.Params[i] {
			return fmt.Errorf("cuda: %s argument %d: passing %c for a %c parameter", name, i, a.kind, e.Params[i])
		}
		packed[i] = a.v
	}
	return d.drv.Launch(name, grid, block, packed)
}

const (
	elemThreads    = 256 // element-wise kernels
	tileThreads    = 256 // gemm.cu TILE_THREADS
	tileM, tileN   = 64, 64
	reduceThreads  = 256 // loss.cu REDUCE_THREADS
	distThreads    = 256 // distance.cu DIST_THREADS
	distCands      = 8   // DIST_CANDS
	distQB         = 4   // DIST_QB
	distBwdThreads = 128 // DIST_BWD_THREADS
	colSumColumns  = 32
	maxGridY       = 65535
)

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// each launches an element-wise (grid-stride) kernel over n elements; nothing when n = 0.
func (d *Device) each(name string, n int, args ...arg) error {
	if n <= 0 {
		return nil
	}
	g := min(ceilDiv(n, elemThreads), d.maxBlocks)
	return d.launch(name, [3]int{g, 1, 1}, [3]int{elemThreads, 1, 1}, args...)
}

// check collects length errors of an operation's buffers.
type check struct {
	op  string
	err error
}

func (c *check) len(name string, n, need int, optional, present bool) {
	if c.err != nil || (optional && !present) {
		return
	}
	if !present && need > 0 {
		c.err = fmt.Errorf("cuda: %s: %s is nil", c.op, name)
		return
	}
	if n < need {
		c.err = fmt.Errorf("cuda: %s: %s has %d elements, needs %d", c.op, name, n, need)
	}
}

func (c *check) f(name string, b *F32, need int)   { c.len(name, b.Len(), need, false, b != nil) }
func (c *check) opt(name string, b *F32, need int) { c.len(name, b.Len(), need, true, b != nil) }
func (c *check) i(name string, b *I32, need int)   { c.len(name, b.Len(), need, false, b != nil) }
func (c *check) nonneg(vals ...int) {
	for _, v := range vals {
		if c.err == nil && v < 0 {
			c.err = fmt.Errorf("cuda: %s: negative size %d", c.op, v)
		}
	}
}
