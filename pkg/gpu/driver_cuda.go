//go:build cuda

package gpu

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/rocone/rocone/pkg/gpu/internal/cuinit"
	"github.com/rocone/rocone/pkg/gpu/kernels"
)

// Built reports whether this binary has the real CUDA driver (the cuda build tag).
const Built = true

// Open opens CUDA device ordinal: it retains the device's primary context, loads the
// embedded PTX (JIT-compiled by the driver for this GPU) and creates a stream. Every
// failure is returned as an error naming the step and the CUDA error.
func Open(ordinal int) (*Device, error) {
	drv, err := openDriver(ordinal)
	if err != nil {
		return nil, err
	}
	return NewDevice(drv), nil
}

// Info describes an open device.
type Info struct {
	Ordinal       int
	Name          string
	ComputeMajor  int
	ComputeMinor  int
	Multiprocs    int
	TotalMemory   int64
	FreeMemory    int64
	DriverVersion int // e.g. 12040 for 12.4
	PTXCompiler   string
	ClockKHz      int // SM clock (the driver's typical frequency)
	MemClockKHz   int // peak memory clock
	MemBusBits    int // memory bus width
}

// Bandwidth is the peak memory bandwidth in bytes/s: a double-data-rate memory clock
// times the bus width.
func (i Info) Bandwidth() float64 {
	return 2 * float64(i.MemClockKHz) * 1e3 * float64(i.MemBusBits) / 8
}

// FP32 is the peak single-precision rate in FLOP/s: SMs × FP32 lanes per SM × 2 (a fused
// multiply-add) × the clock. Lanes per SM: 64 on compute capability 8.0 (A100), 128 on
// 8.6, 8.9 and 9.x.
func (i Info) FP32() float64 {
	lanes := 128
	if i.ComputeMajor == 8 && i.ComputeMinor == 0 {
		lanes = 64
	}
	return float64(i.Multiprocs*lanes*2) * float64(i.ClockKHz) * 1e3
}

func (i Info) String() string {
	return fmt.Sprintf("device %d: %s, compute capability %d.%d, %d SMs, %.1f GiB (%.1f GiB free), driver API %d.%d, kernels: PTX from %s; peaks: %.0f GB/s memory, %.1f TFLOP/s FP32",
		i.Ordinal, i.Name, i.ComputeMajor, i.ComputeMinor, i.Multiprocs, float64(i.TotalMemory)/(1<<30),
		float64(i.FreeMemory)/(1<<30), i.DriverVersion/1000, i.DriverVersion%1000/10, i.PTXCompiler, i.Bandwidth()/1e9, i.FP32()/1e12)
}

// DeviceInfo returns the device's description, or an error when d does not run on a
// real GPU.
func DeviceInfo(d *Device) (Info, error) {
	cd, ok := d.drv.(*cuDriver)
	if !ok {
		return Info{}, fmt.Errorf("cuda: %s is not a CUDA device", d.drv.Name())
	}
	var info Info
	err := cd.do(func() error {
		info = cd.info
		free, total, err := cu.MemInfo()
		if err != nil {
			return wrap("cuMemGetInfo", err)
		}
		info.FreeMemory, info.TotalMemory = free, total
		return nil
	})
	return info, err
}

// cuDriver implements Driver with gorgonia.org/cu's driver API. All calls go through do,
// which serialises them and makes the context current on a locked OS thread.
type cuDriver struct {
	mu      sync.Mutex
	dev     cu.Device
	ctx     cu.CUContext
	stream  cu.Stream
	mods    []cu.Module
	funcs   map[string]cu.Function
	info    Info
	closed  bool
	events  []cu.Event // the pool of Mark's events (Timer), created as needed
	marks   int        // events in use since the last ResetMarks
	staging staging    // CopyInAsync's page-locked ring (staging_cuda.go)
}

func openDriver(ordinal int) (drv *cuDriver, err error) {
	if cuinit.Err != nil { // not reached: gorgonia.org/cu exits first
		return nil, fmt.Errorf("cuda: %w", cuinit.Err)
	}
	n, err := cu.NumDevices()
	if err != nil {
		return nil, wrap("cuDeviceGetCount", err)
	}
	if n == 0 {
		return nil, ErrNoDevice
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda: device %d does not exist (%d device(s): 0 … %d)", ordinal, n, n-1)
	}
	d := &cuDriver{funcs: map[string]cu.Function{}}
	if d.dev, err = cu.GetDevice(ordinal); err != nil {
		return nil, wrap("cuDeviceGet", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if d.ctx, err = d.dev.RetainPrimaryCtx(); err != nil {
		return nil, wrap(fmt.Sprintf("retaining the primary context of device %d", ordinal), err)
	}
	defer func() {
		if err != nil {
			d.release()
		}
	}()
	if err = cu.SetCurrentContext(d.ctx); err != nil {
		return nil, wrap("cuCtxSetCurrent", err)
	}
	d.info = Info{Ordinal: ordinal, DriverVersion: cu.Version(), PTXCompiler: kernels.Compiler()}
	if d.info.Name, err = d.dev.Name(); err != nil {
		return nil, wrap("cuDeviceGetName", err)
	}
	attrs, err := d.dev.Attributes(cu.ComputeCapabilityMajor, cu.ComputeCapabilityMinor, cu.MultiprocessorCount,
		cu.ClockRate, cu.MemoryClockRate, cu.GlobalMemoryBusWidth)
	if err != nil {
		return nil, wrap("cuDeviceGetAttribute", err)
	}
	d.info.ComputeMajor, d.info.ComputeMinor, d.info.Multiprocs = attrs[0], attrs[1], attrs[2]
	d.info.ClockKHz, d.info.MemClockKHz, d.info.MemBusBits = attrs[3], attrs[4], attrs[5]
	if d.info.ComputeMajor < 8 {
		return nil, fmt.Errorf("cuda: %s has compute capability %d.%d; the kernels are compiled for compute_80 (Ampere) or newer",
			d.info.Name, d.info.ComputeMajor, d.info.ComputeMinor)
	}
	for _, m := range kernels.Modules() {
		mod, err := cu.LoadData(m.PTX)
		if err != nil {
			return nil, wrap(fmt.Sprintf("loading the PTX of %s.cu (cuModuleLoadData)", m.Name), err)
		}
		d.mods = append(d.mods, mod)
		es, err := kernels.ParseEntries(m.Name, m.PTX)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			f, err := mod.Function(e.Name)
			if err != nil {
				return nil, wrap("cuModuleGetFunction "+e.Name, err)
			}
			d.funcs[e.Name] = f
		}
	}
	// A blocking stream: its kernels wait for earlier work of the legacy default stream,
	// which is where the synchronous cuMemcpyHtoD runs (and, from pageable memory, may
	// return before its DMA has landed).
	if d.stream, err = cu.MakeStream(cu.DefaultStream); err != nil {
		return nil, wrap("cuStreamCreate", err)
	}
	return d, nil
}

// release frees what openDriver acquired; called with the context current.
func (d *cuDriver) release() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for i := range d.events {
		keep(cu.DestroyEvent(&d.events[i]))
	}
	d.events, d.marks = nil, 0
	keep(d.releaseStaging())
	if d.stream != (cu.Stream{}) {
		keep(d.stream.Destroy())
	}
	for _, m := range d.mods {
		keep(m.Unload())
	}
	d.mods = nil
	keep(d.dev.ReleasePrimaryCtx())
	return first
}

func (d *cuDriver) do(f func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("cuda: device closed")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return wrap("cuCtxSetCurrent", err)
	}
	return f()
}

func (d *cuDriver) Name() string {
	i := d.info
	return fmt.Sprintf("%s (device %d, compute capability %d.%d)", i.Name, i.Ordinal, i.ComputeMajor, i.ComputeMinor)
}

func (d *cuDriver) Alloc(bytes int) (uint64, error) {
	var p cu.DevicePtr
	err := d.do(func() error {
		var err error
		p, err = cu.MemAlloc(int64(bytes))
		if err != nil {
			msg := fmt.Sprintf("allocating %d bytes", bytes)
			if code(err) == int(cu.OutOfMemory) {
				if free, total, e := cu.MemInfo(); e == nil {
					msg += fmt.Sprintf(": out of device memory (%.2f GiB free of %.2f GiB)", float64(free)/(1<<30), float64(total)/(1<<30))
				}
			}
			return wrap(msg, err)
		}
		return nil
	})
	return uint64(p), err
}

func (d *cuDriver) Free(ptr uint64) error {
	return d.do(func() error { return wrap("cuMemFree", cu.MemFree(cu.DevicePtr(ptr))) })
}

// The copies wait for the stream first, so that they see (and are seen by) every kernel
// enqueued before them; the synchronous cuMemcpy variants then complete before
// returning. A kernel's execution error surfaces here.
func (d *cuDriver) CopyIn(dst uint64, src unsafe.Pointer, bytes int) error {
	return d.do(func() error { return d.copyInLocked(dst, src, bytes) })
}

func (d *cuDriver) copyInLocked(dst uint64, src unsafe.Pointer, bytes int) error {
	if err := d.syncLocked(); err != nil {
		return err
	}
	return wrap("cuMemcpyHtoD", cu.MemcpyHtoD(cu.DevicePtr(dst), src, int64(bytes)))
}

func (d *cuDriver) CopyOut(dst unsafe.Pointer, src uint64, bytes int) error {
	return d.do(func() error { return d.copyOutLocked(dst, src, bytes) })
}

func (d *cuDriver) copyOutLocked(dst unsafe.Pointer, src uint64, bytes int) error {
	if err := d.syncLocked(); err != nil {
		return err
	}
	return wrap("cuMemcpyDtoH", cu.MemcpyDtoH(dst, cu.DevicePtr(src), int64(bytes)))
}

func (d *cuDriver) Copy(dst, src uint64, bytes int) error {
	return d.do(func() error {
		return wrap("cuMemcpyDtoDAsync", cu.MemcpyDtoDAsync(cu.DevicePtr(dst), cu.DevicePtr(src), int64(bytes), d.stream))
	})
}

func (d *cuDriver) Zero(dst uint64, bytes int) error {
	return d.do(func() error {
		if bytes%4 == 0 {
			return wrap("cuMemsetD32Async", cu.MemsetD32Async(cu.DevicePtr(dst), 0, int64(bytes/4), d.stream))
		}
		return wrap("cuMemsetD8Async", cu.MemsetD8Async(cu.DevicePtr(dst), 0, int64(bytes), d.stream))
	})
}

func (d *cuDriver) Launch(kernel string, grid, block [3]int, args []uint64) error {
	f, ok := d.funcs[kernel]
	if !ok {
		return fmt.Errorf("cuda: no kernel %q loaded", kernel)
	}
	params := make([]unsafe.Pointer, len(args))
	for i := range args {
		params[i] = unsafe.Pointer(&args[i])
	}
	return d.do(func() error {
		if err := f.Launch(grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, d.stream, params); err != nil {
			return wrap(fmt.Sprintf("launching %s (grid %v, block %v)", kernel, grid, block), err)
		}
		return nil
	})
}

// Mark records an event on the stream (cuda.Timer), taken from the pool (a new one when
// every pooled event is in use). It does not wait.
func (d *cuDriver) Mark() (int, error) {
	var m int
	err := d.do(func() error {
		if d.marks == len(d.events) {
			e, err := cu.MakeEvent(cu.DefaultEvent)
			if err != nil {
				return wrap("cuEventCreate", err)
			}
			d.events = append(d.events, e)
		}
		if err := d.events[d.marks].Record(d.stream); err != nil {
			return wrap("cuEventRecord", err)
		}
		m = d.marks
		d.marks++
		return nil
	})
	return m, err
}

// Elapsed waits for the stream, then returns the seconds between the events from[i]
// and to[i] (cuEventElapsedTime: about half a microsecond's resolution).
func (d *cuDriver) Elapsed(from, to []int) ([]float64, error) {
	if len(from) != len(to) {
		return nil, fmt.Errorf("cuda: Elapsed: %d start marks, %d end marks", len(from), len(to))
	}
	out := make([]float64, len(from))
	err := d.do(func() error {
		if err := d.syncLocked(); err != nil {
			return err
		}
		for i := range from {
			a, b := from[i], to[i]
			if a < 0 || b < 0 || a >= d.marks || b >= d.marks {
				return fmt.Errorf("cuda: Elapsed: marks %d, %d: %d marks taken", a, b, d.marks)
			}
			ms, err := d.events[a].Elapsed(d.events[b])
			if err != nil {
				return wrap("cuEventElapsedTime", err)
			}
			out[i] = ms / 1e3
		}
		return nil
	})
	return out, err
}

// ResetMarks returns every event to the pool.
func (d *cuDriver) ResetMarks() error {
	return d.do(func() error {
		d.marks = 0
		return nil
	})
}

// Peaks are the device's peak memory bandwidth and FP32 rate (cuda.Peaker).
// Multiprocessors is the device's SM count (the GEMMs pick their tile by it).
func (d *cuDriver) Multiprocessors() int { return d.info.Multiprocs }

func (d *cuDriver) Peaks() (bytesPerSecond, flopsPerSecond float64) {
	return d.info.Bandwidth(), d.info.FP32()
}

func (d *cuDriver) syncLocked() error {
	if err := d.stream.Synchronize(); err != nil {
		return wrap("kernel execution (cuStreamSynchronize; the context is unusable after an execution error: Close and Open again)", err)
	}
	return nil
}

func (d *cuDriver) Sync() error { return d.do(d.syncLocked) }

func (d *cuDriver) Close() error {
	err := d.do(func() error {
		e1 := d.syncLocked()
		e2 := d.release()
		if e1 != nil {
			return e1
		}
		return e2
	})
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	return err
}

// code extracts the CUresult from one of gorgonia.org/cu's errors (an unexported int
// type), or −1.
func code(err error) int {
	v := reflect.ValueOf(err)
	if v.Kind() == reflect.Int {
		return int(v.Int())
	}
	return -1
}

// hints explain the CUDA errors a user can act on (codes from cuda.h).
var hints = map[int]string{
	2:   "out of device memory",
	100: "no CUDA-capable device is detected",
	101: "invalid device ordinal",
	209: "no kernel image for this GPU",
	218: "the PTX is invalid for this driver",
	221: "the driver cannot JIT-compile PTX (JIT compiler not found)",
	222: "the PTX needs a newer driver (it was generated by CUDA 11.8: driver ≥ 520)",
	700: "a kernel accessed an illegal address",
	701: "too many resources requested for the launch",
	702: "a kernel timed out",
	719: "a kernel failed (unspecified launch failure)",
}

// wrap turns a driver error into one that names the step (and explains the CUDA error
// when it can); nil stays nil. The driver's error stays wrapped (errors.Is works).
func wrap(step string, err error) error {
	if err == nil {
		return nil
	}
	c := code(err)
	if c < 0 {
		return fmt.Errorf("cuda: %s: %w", step, err)
	}
	hint := ""
	if h, ok := hints[c]; ok {
		hint = ": " + h
	}
	return fmt.Errorf("cuda: %s: %w (CUresult %d%s)", step, err, c, hint)
}
