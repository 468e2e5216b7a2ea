package gpu

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/rocone/rocone/pkg/gpu/kernels"
)

// Device is a CUDA device (or its emulation) with the RoConE kernels loaded: device
// buffers, checked kernel launches and the operations built from them.
//
// A Device may be used from several goroutines; the driver serialises the calls. Its
// operations enqueue kernels and return without waiting where the driver allows it
// (the real driver, in order, on one stream); a download, Sync or Close waits, and
// reports any execution error.
type Device struct {
	drv        Driver
	entries    map[string]kernels.Entry
	maxBlocks  int                      // cap on the grid of element-wise kernels (they grid-stride)
	gridY      int                      // cap on grid.y of the row-looping kernels (they grid-stride in y)
	arena      *Arena                   // where operators take temporaries from (UseArena); nil: Alloc
	prof       atomic.Pointer[Profiler] // the attached profiler (Profile); nil: none
	tf32       bool                     // the linear layers' products on the tensor cores in TF32 (SetMatmul)
	gemmTile   int                      // the GEMMs' tile (FP32, TF32): gemmTileAuto, 64, 128 or gemmTileFirst (tests, bench)
	gemmSplit  int                      // with a fixed gemmTile, its K splits (≤ 1: none)
	regStaged  bool                     // the register-staged GEMMs where pipelined ones could run (tests, bench)
	splitFixup bool                     // split GEMMs summed by their own last blocks (gemm_split_fixup), not by gemm_splitk_sum (tests, bench)
	gemmPolicy gemmPolicy               // how gemmShape picks a GEMM's tile and split: by cost (the default), by waves or tiles64 (bench)
	distFirst  bool                     // the first distance kernels, a sincosf per pair, not the table ones (tests, bench)
	distCSR    bool                     // the candidates' entity gradient by distance_bwd_ent_csr_tab, not as per-pair rows and RowsSum (tests, bench)
	noFloat4   bool                     // the row gathers and sums and the angle map one float at a time, not float4 (tests, bench)
	reverts    Reverts                  // the newest choices turned back (SetReverts, RevertEnv)

	workMu  sync.Mutex          // guards the device-owned buffers below (grow)
	work    [numWorkspaces]*F32 // the workspaces (workspace)
	tickets *I32                // the split GEMMs' tickets (splitTickets)
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

// Name describes the device, and the choices turned back on it (SetReverts), if any, so
// that whatever names the device (a profile's header, a run's record) says so too.
func (d *Device) Name() string {
	if d.reverts != (Reverts{}) {
		return d.drv.Name() + "; reverted: " + d.reverts.String()
	}
	return d.drv.Name()
}

// Sync waits for every enqueued kernel and reports the first execution error.
func (d *Device) Sync() error { return d.drv.Sync() }

// Close releases the device (its context, modules and stream). Buffers must not be used
// afterwards.
func (d *Device) Close() error { return d.drv.Close() }

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

// launch checks the arguments against the kernel's PTX signature and launches it. w is
// the least work the launch does (Work), which an attached Profiler records.
func (d *Device) launch(name string, w Work, grid, block [3]int, args ...arg) error {
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
	if p := d.prof.Load(); p != nil {
		return p.around(name, w, func() error { return d.drv.Launch(name, grid, block, packed) })
	}
	return d.drv.Launch(name, grid, block, packed)
}

// zero clears bytes of device memory at p (recorded as "memset" when profiled).
func (d *Device) zero(p uint64, bytes int) error {
	if pr := d.prof.Load(); pr != nil && bytes > 0 {
		return pr.around("memset", Work{Bytes: int64(bytes)}, func() error { return d.drv.Zero(p, bytes) })
	}
	return d.drv.Zero(p, bytes)
}

// copy copies bytes between device buffers (recorded as "memcpy" when profiled).
func (d *Device) copy(dst, src uint64, bytes int) error {
	if pr := d.prof.Load(); pr != nil && bytes > 0 {
		return pr.around("memcpy", Work{Bytes: 2 * int64(bytes)}, func() error { return d.drv.Copy(dst, src, bytes) })
	}
	return d.drv.Copy(dst, src, bytes)
}

const (
	elemThreads    = 256 // element-wise kernels
	tileThreads    = 256 // linear.cu TILE_THREADS
	tileM, tileN   = 64, 64
	reduceThreads  = 256 // loss.cu REDUCE_THREADS
	distThreads    = 256 // distance.cu DIST_THREADS
	distCands      = 8   // DIST_CANDS
	distQB         = 4   // DIST_QB
	distBwdThreads = 128 // DIST_BWD_THREADS
	colSumColumns  = 32
	colSumThreads  = 32 * 32 // linear.cu: colSumColumns × COL_SUM_LANES
	maxGridY       = 65535
)

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// each launches an element-wise (grid-stride) kernel over n elements, doing work w;
// nothing when n = 0.
func (d *Device) each(name string, n int, w Work, args ...arg) error {
	if n <= 0 {
		return nil
	}
	g := min(ceilDiv(n, elemThreads), d.maxBlocks)
	return d.launch(name, w, [3]int{g, 1, 1}, [3]int{elemThreads, 1, 1}, args...)
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

// cones checks both members of a batch of cones (name.Axis, name.Half); optCones lets
// either be nil.
func (c *check) cones(name string, x Cones, need int) {
	c.f(name+".Axis", x.Axis, need)
	c.f(name+".Half", x.Half, need)
}

func (c *check) optCones(name string, x Cones, need int) {
	c.opt(name+".Axis", x.Axis, need)
	c.opt(name+".Half", x.Half, need)
}

// aligned checks that b (nil passes: f and opt say whether it may be nil) starts at a
// multiple of n bytes, for a kernel that reads or writes it n bytes at a time (a float2
// table: 8; a float4 one: 16). The device faults on a misaligned such access ("misaligned
// address") and the context is lost with every buffer in it, so a view that starts
// elsewhere (Slice) is refused here, by name.
func (c *check) aligned(name string, b *F32, n uint64) {
	if c.err == nil && b != nil && b.Ptr()%n != 0 {
		c.err = fmt.Errorf("cuda: %s: %s at 0x%x is not %d-byte aligned (a view into a buffer, read %d bytes at a time)", c.op, name, b.Ptr(), n, n)
	}
}

func (c *check) nonneg(vals ...int) {
	for _, v := range vals {
		if c.err == nil && v < 0 {
			c.err = fmt.Errorf("cuda: %s: negative size %d", c.op, v)
		}
	}
}

// u32 passes an unsigned 32-bit value (a PTX .u32 parameter, packed like an int).
func u32(x uint32) arg { return arg{v: uint64(x), kind: kernels.ParamI32} }
