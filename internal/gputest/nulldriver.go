package gputest

import (
	"sync/atomic"
	"unsafe"

	"github.com/rocone/rocone/pkg/gpu"
)

// NullDriver is a Driver that executes nothing: it hands out addresses, accepts every
// launch and copy, and downloads Fill bytes. On a Device over it, the host's share of GPU work
// (building index arrays, enqueueing launches, host-side post-processing) can be
// measured on a machine without a GPU; that share is what must overlap the device.
type NullDriver struct {
	// Fill is every downloaded byte (so 0x01 makes every int32 16843009, and every float
	// 2.4e-38: not the zero some results use as a mark).
	Fill byte
	// OnWait, if not nil, is called at every call that waits (Waits counts them).
	OnWait func()

	next     atomic.Uint64
	launches atomic.Int64
	memsets  atomic.Int64
	waits    atomic.Int64
	drains   atomic.Int64
	async    atomic.Int64
}

// Launches counts the launches so far.
func (n *NullDriver) Launches() int64 { return n.launches.Load() }

// Memsets counts the memsets so far (each is a command on the stream, like a launch).
func (n *NullDriver) Memsets() int64 { return n.memsets.Load() }

// Waits counts the calls that wait for the device: the synchronous copies, Sync and Free
// (cuMemFree waits for the device).
func (n *NullDriver) Waits() int64 { return n.waits.Load() }

// Drains counts the waits for all the work enqueued so far (the synchronous copies, Sync
// and Free), where a device would idle until the host enqueues more; the fetch of an
// asynchronous download waits for that copy alone, and is a wait but no drain.
func (n *NullDriver) Drains() int64 { return n.drains.Load() }

// AsyncCopies counts the copies enqueued without waiting (gpu.AsyncCopier,
// gpu.AsyncDownloader).
func (n *NullDriver) AsyncCopies() int64 { return n.async.Load() }

func (n *NullDriver) Name() string { return "null" }

func (n *NullDriver) Alloc(bytes int) (uint64, error) {
	return n.next.Add(uint64(bytes+4096)&^4095) + 1<<40, nil
}

func (n *NullDriver) wait() {
	n.waits.Add(1)
	if n.OnWait != nil {
		n.OnWait()
	}
}

// drain is a wait for everything enqueued.
func (n *NullDriver) drain() {
	n.drains.Add(1)
	n.wait()
}

func (n *NullDriver) Free(uint64) error {
	n.drain()
	return nil
}

func (n *NullDriver) CopyIn(uint64, unsafe.Pointer, int) error {
	n.drain()
	return nil
}

func (n *NullDriver) CopyInAsync(uint64, unsafe.Pointer, int) error {
	n.async.Add(1)
	return nil
}

func (n *NullDriver) CopyOut(dst unsafe.Pointer, _ uint64, bytes int) error {
	n.drain()
	n.fill(dst, bytes)
	return nil
}

func (n *NullDriver) fill(dst unsafe.Pointer, bytes int) {
	b := unsafe.Slice((*byte)(dst), bytes)
	for i := range b {
		b[i] = n.Fill
	}
}

// CopyOutAsync enqueues nothing; its fetch waits (a wait, not a drain) and downloads
// Fill bytes.
func (n *NullDriver) CopyOutAsync(_ uint64, bytes int) (func(dst unsafe.Pointer) error, error) {
	n.async.Add(1)
	return func(dst unsafe.Pointer) error {
		n.wait()
		n.fill(dst, bytes)
		return nil
	}, nil
}

func (n *NullDriver) Copy(uint64, uint64, int) error { return nil }
func (n *NullDriver) Zero(uint64, int) error {
	n.memsets.Add(1)
	return nil
}

func (n *NullDriver) Launch(string, [3]int, [3]int, []uint64) error {
	n.launches.Add(1)
	return nil
}

func (n *NullDriver) Sync() error {
	n.drain()
	return nil
}
func (n *NullDriver) Close() error { return nil }

var (
	_ gpu.Driver          = (*NullDriver)(nil)
	_ gpu.AsyncCopier     = (*NullDriver)(nil)
	_ gpu.AsyncDownloader = (*NullDriver)(nil)
)
