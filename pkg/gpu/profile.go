package gpu

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// Profiling: every launch (and every device memset and copy) of a Device can be recorded
// with the work it must do (Work, stated at the launch site, next to the operator) and,
// where the driver has a clock (Timer), the time it took on the device. A Profiler is
// attached with Device.Profile; while none is, a launch costs one nil check more.
//
// Times come from timestamps enqueued on the stream right before and right after each
// launch (CUDA events on a GPU, taken from a pool; the host clock around the emulator's
// synchronous launch). Nothing waits for them while the window runs: Profiler.Records
// resolves them all at its end.

// Work is the least a launch must do, stated by the operator that launches it:
//
//   - Bytes: what must cross between device memory and the SMs: each input read once,
//     each output written once (an accumulated output, x += …, is read and written);
//     rows gathered or scattered by an index count once per index entry, at most once
//     per row of the table (gathered(): the real gather, not the whole table), and the
//     index itself is read;
//   - FLOPs: the floating-point operations of the kernel's formula: each add, subtract,
//     multiply, divide, min, max, absolute value or comparison counts one, a fused
//     multiply–add two, a transcendental call (sincosf, tanhf, expf, logf, atanf,
//     sqrtf, a sigmoid) one. The GEMMs count 2·M·N·K. FP64 operations (the loss) are
//     counted alike.
//
// A kernel's achieved rate is Work over its time; its arithmetic intensity is FLOPs per
// byte.
type Work struct {
	Bytes int64
	FLOPs int64
}

// Add sums two works.
func (w Work) Add(o Work) Work { return Work{w.Bytes + o.Bytes, w.FLOPs + o.FLOPs} }

// words is the bytes of 32-bit values (float32 or int32) in groups of n.
func words(n ...int) int64 {
	var s int64
	for _, x := range n {
		s += int64(x)
	}
	return 4 * s
}

// flops is n elements of per operations each.
func flops(n, per int) int64 { return int64(n) * int64(per) }

// gathered is how many table rows a gather (or scatter) through an index of rows entries
// touches at the least: each entry once, but no more than the table's rows.
func gathered(rows, tableRows int) int {
	if tableRows > 0 && tableRows < rows {
		return tableRows
	}
	return rows
}

// tableRows is the rows of width dim in a table buffer (0 when dim is 0 or t nil).
func tableRows(t *F32, dim int) int {
	if t == nil || dim <= 0 {
		return 0
	}
	return t.Len() / dim
}

// Timer is the optional capability of a Driver to time work on the device's own clock:
// the real driver with CUDA events, package emu's emulator with the host clock around
// its synchronous launches. Marks are numbered from 0 since the last ResetMarks.
type Timer interface {
	// Mark enqueues a timestamp behind everything enqueued so far and returns its number.
	// It does not wait.
	Mark() (int, error)
	// Elapsed waits for the marks and returns the seconds from from[i] to to[i].
	Elapsed(from, to []int) ([]float64, error)
	// ResetMarks makes every mark's resources reusable (the numbering restarts at 0).
	ResetMarks() error
}

// Peaker is the optional capability of a Driver to state its device's peak memory
// bandwidth (bytes/s) and single-precision rate (FLOP/s); the real driver has it
// (Info.Bandwidth and Info.FP32), the emulator has not.
type Peaker interface {
	Peaks() (bytesPerSecond, flopsPerSecond float64)
}

// Peaks returns the device's peaks, or ok false when its driver does not know them.
func (d *Device) Peaks() (bytesPerSecond, flopsPerSecond float64, ok bool) {
	p, ok := d.drv.(Peaker)
	if !ok {
		return 0, 0, false
	}
	b, f := p.Peaks()
	return b, f, true
}

// Record is one profiled launch (or device memset or copy, named "memset" and "memcpy",
// or a copy in stream order from or to the host, "upload" and "download").
type Record struct {
	Kernel  string
	Work    Work
	Seconds float64 // on the device's clock; NaN when untimed
	// Idle is how long the device waited before this launch, on its clock: from the end
	// of the record before it to this one's start, time in which the stream held nothing
	// to run because the host had not yet enqueued this launch. NaN for the first record
	// after the profiler was attached (what ran before it was not profiled), and when
	// untimed.
	Idle   float64
	from   int // marks; -1: none
	to     int
	attach int // the Profiler's attachment it was recorded in (Device.Profile)
}

// HostCopy reports whether the record is a copy from or to the host (upload, download),
// not a launch on the device.
func (r Record) HostCopy() bool { return r.Kernel == "upload" || r.Kernel == "download" }

// Launches counts the records' launches per kernel, host copies left out.
func Launches(recs []Record) map[string]int {
	n := map[string]int{}
	for _, r := range recs {
		if !r.HostCopy() {
			n[r.Kernel]++
		}
	}
	return n
}

// Profiler collects Records while attached to a Device (Device.Profile). It may be
// attached and detached several times (a window of several steps, leaving out what runs
// between them); Records resolves the times at the end. Only one Profiler may hold marks
// on a driver at a time: Records resets the driver's marks.
type Profiler struct {
	mu     sync.Mutex
	timer  Timer // nil: untimed
	recs   []Record
	err    error // the first failed mark
	attach int   // how often Device.Profile attached it
}

// NewProfiler returns a profiler for d: timed when timed is true and d's driver is a
// Timer, untimed (work only, no marks) otherwise. Timed reports which.
func NewProfiler(d *Device, timed bool) *Profiler {
	p := &Profiler{}
	if t, ok := d.drv.(Timer); ok && timed {
		p.timer = t
	}
	return p
}

// Timed reports whether the profiler times its launches.
func (p *Profiler) Timed() bool { return p.timer != nil }

// Profile attaches p to the device (nil detaches): every launch, memset, device copy and
// copy from or to the host from then on is recorded in p.
func (d *Device) Profile(p *Profiler) {
	if p != nil {
		p.mu.Lock()
		p.attach++
		p.mu.Unlock()
	}
	d.prof.Store(p)
}

// around runs op (one launch, memset or copy) and records it with its work, between two
// marks when timed.
func (p *Profiler) around(name string, w Work, op func() error) error {
	r := Record{Kernel: name, Work: w, Seconds: math.NaN(), Idle: math.NaN(), from: -1, to: -1}
	if p.timer != nil {
		r.from = p.mark()
	}
	err := op()
	if p.timer != nil {
		r.to = p.mark()
	}
	if err == nil {
		p.mu.Lock()
		r.attach = p.attach
		p.recs = append(p.recs, r)
		p.mu.Unlock()
	}
	return err
}

// profiled runs op, a copy or memset, recorded as name with work w while a profiler is
// attached.
func (d *Device) profiled(name string, w Work, op func() error) error {
	if p := d.prof.Load(); p != nil {
		return p.around(name, w, op)
	}
	return op()
}

func (p *Profiler) mark() int {
	m, err := p.timer.Mark()
	if err != nil {
		p.mu.Lock()
		if p.err == nil {
			p.err = fmt.Errorf("cuda: profiling: %w", err)
		}
		p.mu.Unlock()
		return -1
	}
	return m
}

// Records waits for the device, resolves the times of every record so far (one wait for
// all of them: each record's time and the device's idle time before it), releases the
// marks and returns the records in launch order. Detach the profiler first.
func (p *Profiler) Records() ([]Record, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	out := append([]Record(nil), p.recs...)
	if p.timer == nil {
		return out, nil
	}
	// The launches' times, from each record's first mark to its second; then the idle
	// times, from a record's second mark to the next record's first where nothing was
	// marked between them (the next mark, in the same attachment).
	var from, to, at []int
	for i, r := range out {
		if r.from >= 0 && r.to >= 0 {
			from, to, at = append(from, r.from), append(to, r.to), append(at, i)
		}
	}
	launches := len(at)
	for i := 1; i < len(out); i++ {
		prev, r := out[i-1], out[i]
		if prev.to >= 0 && r.from == prev.to+1 && r.attach == prev.attach {
			from, to, at = append(from, prev.to), append(to, r.from), append(at, i)
		}
	}
	if len(at) > 0 {
		secs, err := p.timer.Elapsed(from, to)
		if err != nil {
			return nil, fmt.Errorf("cuda: profiling: resolving %d launch times: %w", launches, err)
		}
		for k, i := range at {
			if k < launches {
				out[i].Seconds = secs[k]
			} else {
				out[i].Idle = secs[k]
			}
		}
	}
	for i := range p.recs {
		p.recs[i].from, p.recs[i].to = -1, -1
		p.recs[i].Seconds, p.recs[i].Idle = out[i].Seconds, out[i].Idle
	}
	if err := p.timer.ResetMarks(); err != nil {
		return nil, fmt.Errorf("cuda: profiling: %w", err)
	}
	return out, nil
}

// ErrNoWork is what CheckWork reports for a launch that states no work.
var ErrNoWork = errors.New("states no work (its launch site must give the bytes it moves)")

// CheckWork returns an error naming the first record whose work is missing (no bytes)
// or negative: every launch must state what it moves (see Work).
func CheckWork(recs []Record) error {
	for _, r := range recs {
		if r.Work.Bytes <= 0 || r.Work.FLOPs < 0 {
			return fmt.Errorf("cuda: kernel %s (work %+v) %w", r.Kernel, r.Work, ErrNoWork)
		}
	}
	return nil
}
