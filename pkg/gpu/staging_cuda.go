//go:build cuda

package gpu

/*
#cgo linux CFLAGS: -I/usr/local/cuda/include
#cgo linux LDFLAGS: -L/usr/local/cuda/lib64 -L/usr/local/cuda/lib64/stubs -lcuda
#include <cuda.h>

static CUresult stagingAlloc(void** p, size_t bytes) { return cuMemAllocHost(p, bytes); }
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// staging is the page-locked host memory through which CopyInAsync enqueues its copies: a
// ring of slots, each a buffer and the event recorded after the copy that last read it. A
// copy from pageable memory (CopyIn) has to wait for the stream, so that every update's
// index upload would drain the device's queue; from a slot it is enqueued like a kernel,
// and the host can prepare and enqueue the next update while the device runs the last.
// A slot is reused stagingSlots copies later, after its event: the copy that read it has
// then landed.
//
// Downloads (CopyOutAsync) have a ring of their own: a copy to a slot is enqueued, and
// its fetch waits for that copy's event alone, not for the work enqueued after it.
type staging struct {
	slots [stagingSlots]stagingSlot
	next  int
	down  [stagingSlots]stagingSlot
	nextD int
	// off: page-locked memory could not be had (cuMemAllocHost failed once); the copies
	// are then made synchronously, as CopyIn and CopyOut make them.
	off bool
}

// errNoPinned marks a failed cuMemAllocHost: the copy falls back to the synchronous path.
type errNoPinned struct{ error }

type stagingSlot struct {
	host  unsafe.Pointer // cuMemAllocHost'd, bytes long; nil until first used
	bytes int
	ev    cu.Event
	armed bool   // ev was recorded after a copy from (or to) host
	gen   uint64 // downloads: the copies made through the slot, to refuse a stale fetch
}

// stagingSlots is the ring's length: three uploads an update (the walk's two and Adam's
// programs), three updates a step, two steps in flight (train reads a step's losses after
// the next step is enqueued): 18, and room to spare, so that reusing a slot never waits
// in the steady state.
const stagingSlots = 32

// stagingMin is a slot's smallest buffer; buffers grow to the next power of two.
const stagingMin = 1 << 20

// cuResult is a CUresult from a call made here (not through gorgonia.org/cu): an int
// kind, so that code and wrap explain it as they do cu's.
type cuResult int

func (r cuResult) Error() string { return fmt.Sprintf("CUDA error %d", int(r)) }

// CopyInAsync implements AsyncCopier: src is copied into the next slot, whose copy to dst
// is then enqueued on the stream.
func (d *cuDriver) CopyInAsync(dst uint64, src unsafe.Pointer, bytes int) error {
	return d.do(func() error {
		if d.staging.off {
			return d.copyInLocked(dst, src, bytes)
		}
		s := &d.staging.slots[d.staging.next%stagingSlots]
		d.staging.next++
		if err := s.ready(bytes); err != nil {
			if _, ok := err.(errNoPinned); ok {
				d.staging.off = true
				return d.copyInLocked(dst, src, bytes)
			}
			return err
		}
		copy(unsafe.Slice((*byte)(s.host), bytes), unsafe.Slice((*byte)(src), bytes))
		if err := cu.MemcpyHtoDAsync(cu.DevicePtr(dst), s.host, int64(bytes), d.stream); err != nil {
			return wrap("cuMemcpyHtoDAsync", err)
		}
		if err := s.ev.Record(d.stream); err != nil {
			return wrap("cuEventRecord", err)
		}
		s.armed = true
		return nil
	})
}

// ready waits for the slot's last copy, if any, and makes it hold bytes: its event made,
// its buffer grown (to a power of two, at least stagingMin).
func (s *stagingSlot) ready(bytes int) error {
	if s.armed {
		if err := s.ev.Synchronize(); err != nil {
			return wrap("kernel execution (cuEventSynchronize on a staging slot)", err)
		}
		s.armed = false
	}
	if s.ev == (cu.Event{}) {
		ev, err := cu.MakeEvent(cu.DisableTiming)
		if err != nil {
			return wrap("cuEventCreate", err)
		}
		s.ev = ev
	}
	if s.bytes < bytes {
		if s.host != nil {
			if err := cu.MemFreeHost(s.host); err != nil {
				return wrap("cuMemFreeHost", err)
			}
			s.host, s.bytes = nil, 0
		}
		n := stagingMin
		for n < bytes {
			n *= 2
		}
		var p unsafe.Pointer
		if r := C.stagingAlloc(&p, C.size_t(n)); r != C.CUDA_SUCCESS {
			return errNoPinned{wrap(fmt.Sprintf("allocating %d bytes of page-locked host memory (cuMemAllocHost)", n), cuResult(r))}
		}
		s.host, s.bytes = p, n
	}
	return nil
}

// CopyOutAsync implements AsyncDownloader: the copy of bytes at src into the next
// download slot is enqueued; fetch waits for it alone and copies it to dst.
func (d *cuDriver) CopyOutAsync(src uint64, bytes int) (fetch func(dst unsafe.Pointer) error, err error) {
	var s *stagingSlot
	var gen uint64
	var now []byte // the fallback's copy, made at once
	err = d.do(func() error {
		if !d.staging.off {
			s = &d.staging.down[d.staging.nextD%stagingSlots]
			d.staging.nextD++
			err := s.ready(bytes)
			if _, ok := err.(errNoPinned); ok {
				d.staging.off = true
			} else if err != nil {
				return err
			}
		}
		if d.staging.off {
			now = make([]byte, bytes)
			return d.copyOutLocked(unsafe.Pointer(&now[0]), src, bytes)
		}
		if err := cu.MemcpyDtoHAsync(s.host, cu.DevicePtr(src), int64(bytes), d.stream); err != nil {
			return wrap("cuMemcpyDtoHAsync", err)
		}
		if err := s.ev.Record(d.stream); err != nil {
			return wrap("cuEventRecord", err)
		}
		s.armed = true
		s.gen++
		gen = s.gen
		return nil
	})
	if err != nil {
		return nil, err
	}
	if now != nil {
		return func(dst unsafe.Pointer) error {
			copy(unsafe.Slice((*byte)(dst), bytes), now)
			return nil
		}, nil
	}
	return func(dst unsafe.Pointer) error {
		return d.do(func() error {
			if s.gen != gen || !s.armed {
				return fmt.Errorf("cuda: a download was fetched after %d more downloads reused its staging slot, or twice", stagingSlots)
			}
			if err := s.ev.Synchronize(); err != nil {
				return wrap("kernel execution (cuEventSynchronize on a download)", err)
			}
			s.armed = false
			copy(unsafe.Slice((*byte)(dst), bytes), unsafe.Slice((*byte)(s.host), bytes))
			return nil
		})
	}, nil
}

// releaseStaging frees the slots; called with the context current, the stream synchronised.
func (d *cuDriver) releaseStaging() error {
	var first error
	for i := range 2 * stagingSlots {
		s := &d.staging.slots[i%stagingSlots]
		if i >= stagingSlots {
			s = &d.staging.down[i%stagingSlots]
		}
		if s.host != nil {
			if err := cu.MemFreeHost(s.host); err != nil && first == nil {
				first = wrap("cuMemFreeHost", err)
			}
		}
		if s.ev != (cu.Event{}) {
			if err := cu.DestroyEvent(&s.ev); err != nil && first == nil {
				first = wrap("cuEventDestroy", err)
			}
		}
		*s = stagingSlot{}
	}
	return first
}
