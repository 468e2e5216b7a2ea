package gpu

// Device memory: typed buffers, and the arena that hands out a batch's scratch buffers
// without an allocation each.

import (
	"fmt"
	"unsafe"
)

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
	if err := d.zero(p, n*sizeOf[T]()); err != nil {
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

// Upload copies src into the first len(src) elements (recorded as "upload" when
// profiled, as UploadAsync's copies are).
func (b *Buffer[T]) Upload(src []T) error {
	if len(src) > b.Len() {
		return fmt.Errorf("cuda: upload of %d elements into a %d-element buffer", len(src), b.Len())
	}
	if len(src) == 0 {
		return nil
	}
	bytes := len(src) * sizeOf[T]()
	return b.dev.profiled("upload", Work{Bytes: int64(bytes)}, func() error {
		return b.dev.drv.CopyIn(b.ptr, unsafe.Pointer(&src[0]), bytes)
	})
}

// UploadAsync copies src into the first len(src) elements in stream order, without
// waiting for the kernels enqueued before it (AsyncCopier; recorded as "upload" when
// profiled); src may be reused at once.
// A training update's index arrays go up this way, so that the host enqueues the next
// update while the device runs the last.
func (b *Buffer[T]) UploadAsync(src []T) error {
	ac, ok := b.dev.drv.(AsyncCopier)
	if !ok {
		return b.Upload(src)
	}
	if len(src) > b.Len() {
		return fmt.Errorf("cuda: upload of %d elements into a %d-element buffer", len(src), b.Len())
	}
	if len(src) == 0 {
		return nil
	}
	bytes := len(src) * sizeOf[T]()
	return b.dev.profiled("upload", Work{Bytes: int64(bytes)}, func() error {
		return ac.CopyInAsync(b.ptr, unsafe.Pointer(&src[0]), bytes)
	})
}

// Download copies the first len(dst) elements into dst, waiting for pending kernels
// (recorded as "download" when profiled).
func (b *Buffer[T]) Download(dst []T) error {
	if len(dst) > b.Len() {
		return fmt.Errorf("cuda: download of %d elements from a %d-element buffer", len(dst), b.Len())
	}
	if len(dst) == 0 {
		return nil
	}
	bytes := len(dst) * sizeOf[T]()
	return b.dev.profiled("download", Work{Bytes: int64(bytes)}, func() error {
		return b.dev.drv.CopyOut(unsafe.Pointer(&dst[0]), b.ptr, bytes)
	})
}

// DownloadAsync enqueues a copy of the first n elements to the host (AsyncDownloader;
// recorded as "download" when profiled) and returns the function that waits for that
// copy alone (not for the work enqueued after it) and writes the elements into dst
// (len(dst) == n). Without an AsyncDownloader the copy is made at once (Download), and
// fetch only hands it over.
func (b *Buffer[T]) DownloadAsync(n int) (fetch func(dst []T) error, err error) {
	if n > b.Len() || n < 0 {
		return nil, fmt.Errorf("cuda: download of %d elements from a %d-element buffer", n, b.Len())
	}
	check := func(dst []T) error {
		if len(dst) != n {
			return fmt.Errorf("cuda: a download of %d elements fetched into %d", n, len(dst))
		}
		return nil
	}
	ad, ok := b.dev.drv.(AsyncDownloader)
	if !ok || n == 0 {
		tmp := make([]T, n)
		if err := b.Download(tmp); err != nil {
			return nil, err
		}
		return func(dst []T) error {
			if err := check(dst); err != nil {
				return err
			}
			copy(dst, tmp)
			return nil
		}, nil
	}
	var f func(unsafe.Pointer) error
	bytes := n * sizeOf[T]()
	err = b.dev.profiled("download", Work{Bytes: int64(bytes)}, func() (err error) {
		f, err = ad.CopyOutAsync(b.ptr, bytes)
		return err
	})
	if err != nil {
		return nil, err
	}
	return func(dst []T) error {
		if err := check(dst); err != nil {
			return err
		}
		return f(unsafe.Pointer(&dst[0]))
	}, nil
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
	return b.dev.zero(b.ptr, b.n*sizeOf[T]())
}

// CopyFrom copies src (same length) into b on the device.
func (b *Buffer[T]) CopyFrom(src *Buffer[T]) error {
	if src.Len() != b.Len() {
		return fmt.Errorf("cuda: copy of a %d-element buffer into a %d-element one", src.Len(), b.Len())
	}
	if b.n == 0 {
		return nil
	}
	return b.dev.copy(b.ptr, src.ptr, b.n*sizeOf[T]())
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

// Arena hands out zeroed views of one device allocation, all released together by
// Reset. A training step takes its temporaries from it: cuMemAlloc and cuMemFree cost
// tens of microseconds each and cuMemFree waits for the device, which would stall the
// host's work-ahead. When the arena runs out, further buffers are allocated separately
// (and freed at the next Reset), and the next Reset grows the arena to the high-water
// mark, so a steady state allocates nothing.
//
// The views are zeroed in bulk: Reset clears what the last cycle used with one memset, and
// Take clears only what lies beyond that (a cycle that uses more than the last). So a
// training update costs one or two memsets, not one per temporary (48 a FB15k-237 update
// took, each a launch); the bytes cleared are the same. Memsets are ordered on the stream
// with the kernels, so the clearing at Reset follows every use of the last cycle.
type Arena struct {
	d        *Device
	buf      *Buffer[float64] // 8-byte elements: every view is 8-byte aligned
	used     int              // bytes
	clean    int              // bytes [used, clean) are zero
	peak     int              // bytes asked for since the last Reset
	overflow []interface{ Free() error }
}

// arenaAlign is the alignment of every view, in bytes (the size of a float4 load and a
// cache sector's half).
const arenaAlign = 256

// NewArena creates an empty arena on d; it grows on use.
func NewArena(d *Device) *Arena { return &Arena{d: d} }

// Reset releases every view (their memory is reused) and the overflow buffers, and grows
// the arena to what the last cycle used.
func (a *Arena) Reset() error {
	err := FreeAll(a.overflow...)
	a.overflow = a.overflow[:0]
	if need := a.peak; need > a.capacity() {
		if e := a.buf.Free(); e != nil && err == nil {
			err = e
		}
		a.buf = nil
		b, e := Alloc[float64](a.d, (need+need/4)/8+1)
		if e != nil {
			return e
		}
		a.buf = b // zeroed by Alloc
		a.used, a.clean, a.peak = 0, a.capacity(), 0
		return err
	}
	if dirty := min(a.used, a.capacity()); dirty > 0 {
		if e := a.d.zero(a.buf.ptr, dirty); e != nil && err == nil {
			err = e
		}
		a.clean = max(a.clean, dirty)
	}
	a.used, a.peak = 0, 0
	return err
}

func (a *Arena) capacity() int { return a.buf.Len() * 8 }

// Free releases the arena's memory.
func (a *Arena) Free() error {
	err := FreeAll(a.overflow...)
	a.overflow = nil
	if e := a.buf.Free(); e != nil && err == nil {
		err = e
	}
	a.buf = nil
	return err
}

// Take returns a zeroed buffer of n elements of T, valid until the next Reset.
func Take[T Elem](a *Arena, n int) (*Buffer[T], error) {
	bytes := n * sizeOf[T]()
	size := (bytes + arenaAlign - 1) / arenaAlign * arenaAlign
	a.peak += size
	if a.used+size > a.capacity() {
		b, err := Alloc[T](a.d, n)
		if err != nil {
			return nil, err
		}
		a.overflow = append(a.overflow, b)
		return b.Slice(0, n), nil // a view: freeing it is a no-op, Reset frees b
	}
	v := &Buffer[T]{dev: a.d, ptr: a.buf.ptr + uint64(a.used), n: n}
	if end := a.used + bytes; end > a.clean {
		from := max(a.used, a.clean)
		if err := a.d.zero(a.buf.ptr+uint64(from), end-from); err != nil {
			return nil, err
		}
		a.clean = end
	}
	a.used += size
	return v, nil
}

// scratch is where the operators' temporaries come from: the device's arena if one is
// set (UseArena), otherwise separate allocations (to be freed by the caller; freeing an
// arena view is a no-op).
func scratch[T Elem](d *Device, n int) (*Buffer[T], error) {
	if d.arena != nil {
		return Take[T](d.arena, n)
	}
	return Alloc[T](d, n)
}

// A workspace is a device buffer that an operator overwrites before it reads it (a split
// GEMM's partial sums, the distance backward's per-pair rows), one per kind for the
// device's life: the operators run in stream order, so every call can reuse it, and,
// unlike the arena's temporaries, it is never cleared (the arena would clear it every
// cycle: at d=1600 a few hundred MB an update). It grows to the largest request.
type workspaceKind int

const (
	workSplit workspaceKind = iota // the split GEMMs' partial sums (op_linear.go)
	workPairs                      // the per-pair entity-gradient rows (op_distance.go)
	numWorkspaces
)

// workspace returns the first n floats of the device's workspace of the given kind.
func (d *Device) workspace(kind workspaceKind, n int) (*F32, error) {
	d.workMu.Lock()
	defer d.workMu.Unlock()
	return grow(d, &d.work[kind], n)
}

// grow returns the first n elements of the device-owned buffer *b, allocating it on
// first use (zeroed, by Alloc) and reallocating it larger when n outgrows it (freeing
// the smaller one, which waits for the kernels using it: during the first cycles only).
// The caller has *b to itself: it holds d.workMu for the device's own buffers (Adam's
// zero gradient is its own).
func grow[T Elem](d *Device, b **Buffer[T], n int) (*Buffer[T], error) {
	w := *b
	if w == nil || w.Len() < n {
		size := max(n, 1)
		if w != nil {
			size = max(size, w.Len()*3/2) // fewer regrowths while the first cycles find the largest
			if err := w.Free(); err != nil {
				return nil, err
			}
			*b = nil
		}
		var err error
		if w, err = Alloc[T](d, size); err != nil {
			return nil, err
		}
		*b = w
	}
	return w.Slice(0, n), nil
}

// UseArena makes the device's operators take their temporaries from a (nil: allocate
// them separately, the default).
func (d *Device) UseArena(a *Arena) { d.arena = a }
