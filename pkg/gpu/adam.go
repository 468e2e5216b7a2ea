package gpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/rocone/rocone/pkg/adam"
)

// AdamStep applies Adam step number step (1, 2, …; since the optimiser was created) to
// the parameters p with gradients g and moments m, v, all of one length: dense, every
// element moves. With zeroGrad the gradients are cleared after use.
func (d *Device) AdamStep(p, g, m, v *F32, step int, cfg adam.Config, zeroGrad bool) error {
	n := p.Len()
	c := check{op: "AdamStep"}
	c.f("g", g, n)
	c.f("m", m, n)
	c.f("v", v, n)
	if c.err == nil && step < 1 {
		c.err = fmt.Errorf("cuda: AdamStep: step %d, must be ≥ 1", step)
	}
	if c.err != nil {
		return c.err
	}
	stepSize, bc2Sqrt := adamScalars(step, cfg)
	return d.adamStepK(p, g, m, v, adamK{stepSize, bc2Sqrt}, cfg, zeroGrad)
}

// adamStepK is AdamStep with the step's constants given.
func (d *Device) adamStepK(p, g, m, v *F32, k adamK, cfg adam.Config, zeroGrad bool) error {
	n := p.Len()
	return d.each("adam_step", n, adamWork(n, zeroGrad), ptr(p), ptr(g), ptr(m), ptr(v), i32(n), f32(float32(cfg.Beta2)),
		f32(float32(1-cfg.Beta1)), f32(float32(1-cfg.Beta2)), f32(float32(cfg.Eps)), f32(k.stepSize),
		f32(k.bc2Sqrt), boolArg(zeroGrad))
}

// Adam is a dense Adam optimiser over device-resident parameters (docs/training.md §1): each
// parameter tensor P has its gradient G (same length) and the optimiser's moments, all on
// the device; Step updates every element of every tensor, with no host round trip, in
// one launch (kernel adam_multi).
//
// For that one launch the tensors' buffers are described once, at NewAdam, by device
// tables: their addresses (tab) and element offsets (off). Their own step counts differ
// by their lags (SetLags), which change at every update while a tensor has not started;
// so rather than per-tensor step counts (an upload per update) the device holds each
// tensor's class (cls: tensors with equal lags, and alike deferrable or not, share a
// class; SetDeferrable), uploaded only when the grouping changes, and each launch gives
// every class its program: its steps' step sizes and bias corrections, a few hundred
// bytes copied behind the work already queued (Buffer.UploadAsync). More classes than
// adamClasses, or more elements than an int counts, take the per-tensor path (stepEach),
// with the same results bit for bit.
type Adam struct {
	Config adam.Config
	dev    *Device
	step   int
	slots  []adamSlot
	lags   []int64 // per slot: steps it sat out (see SetLags); nil: none

	all, def   *adamTables    // the one-launch tables of every tensor, and of the deferrable ones (Flush); nil: none
	scalarOnly bool           // the tests' and the bench's switch to adam_multi
	perTensor  bool           // the tests' switch to stepEach
	angleR     float32        // the angle tensors' range R (AngleGrad)
	classKey   []adamClassKey // per class: its key; nil: more classes than one launch takes
	prog       *Buffer[int32] // [adamClasses] the classes' programs, then [adamClasses][2·adamSteps] their constants (as bits): one upload a launch

	// Deferred steps (SetDeferrable, SetIdle): per tensor, whether its steps may wait, the
	// steps that wait, oldest first, and whether the first of them has the gradient (left
	// in the tensor's gradient buffer; the others' gradient is zero).
	deferrable  []bool
	idle        bool
	pending     [][]adamK
	pendingGrad []bool
	zeros       *F32 // stepEach's zero gradient, for deferred steps
}

// adamTables describe some of an Adam's tensors (slots idx, in order) to the one-launch
// kernels.
type adamTables struct {
	idx           []int
	tab, off, cls *I32 // [8·T] addresses (p, g, m, v; low, high halves), [T+1] offsets, [T] classes
	total         int  // elements of all tensors (off[T])
	// The 16-byte path (adam_multi_vec4), when every p, g, m, v is 16-byte aligned:
	// [T+1] offsets in quads and [T] element counts; nil otherwise.
	offq, cnt *I32
	totalq    int
	clsHost   []int32 // the classes on the device
}

func (t *adamTables) free() error {
	if t == nil {
		return nil
	}
	return FreeAll(t.tab, t.off, t.cls, t.offq, t.cnt)
}

// adamClasses is ADAM_CLASSES in kernels/adam.cu: the classes one launch handles.
const adamClasses = 8

// adamSteps is ADAM_STEPS: the most steps one launch applies to a tensor (its deferred
// zero-gradient steps, then its step).
const adamSteps = 3

// adamClassKey is what the tensors of one class share: their lag (SetLags) and whether
// their steps may be deferred (SetDeferrable); so a class's program, and the tensors'
// classes on the device, stay the same from update to update.
type adamClassKey struct {
	lag        int64
	deferrable bool
}

// adamK are one step's constants: the step size and bias correction of its step number.
type adamK struct{ stepSize, bc2Sqrt float32 }

// adamProg is what one launch does to one tensor (the kernels' adam_program): its steps in
// order, step gs with the gradient (gs < 0: none; the others with a zero gradient: the
// deferred steps), and whether the gradient is cleared afterwards.
type adamProg struct {
	steps []adamK
	gs    int
	clear bool
}

func (p adamProg) equal(q adamProg) bool {
	return slices.Equal(p.steps, q.steps) && p.gs == q.gs && p.clear == q.clear
}

func (p adamProg) grad() bool { return p.gs >= 0 }

// adamPtrs is ADAM_PTRS: the buffers per tensor in the one-launch kernels' table.
const adamPtrs = 6

// launchPtrs are the slot's buffers as the one-launch kernels see them: p, g, m, v,
// theta and sinCos, where an angle tensor's g is the gradient of its angles.
func (s adamSlot) launchPtrs() [adamPtrs]*F32 {
	if s.dTheta != nil {
		return [adamPtrs]*F32{s.p, s.dTheta, s.m, s.v, s.theta, s.sinCos}
	}
	return [adamPtrs]*F32{s.p, s.g, s.m, s.v, nil, nil}
}

// adamSlot is a parameter tensor p with its gradient g and moments m, v; an angle tensor
// (AngleGrad) has the gradient of its angles dTheta and the angles theta besides, and
// perhaps their half-angle sines and cosines sinCos.
type adamSlot struct{ p, g, m, v, dTheta, theta, sinCos *F32 }

// AngleGrad makes a parameter tensor an angle tensor of the optimiser: its values x are
// used as angles θ = π·tanh(x/R) (the entity and relation tables), the backward pass
// accumulates the gradient of θ into DTheta, and Step maps it to x's (the arithmetic of
// AngleBackward) as it reads it, then clears DTheta: one pass over the table instead of
// AngleBackward's and Adam's. Theta is the forward's θ of the same update; Step
// overwrites it with the angles of the values it has just updated (AngleForward's bits),
// so that the next update need not map the table again, and, where SinCos is not nil,
// their half-angle sines and cosines into SinCos [n][2] (EntHalfSinCos's bits: the table
// DistanceBackwardETab reads, so 8-byte aligned like it). The tensor's own gradient buffer
// is then only Step's scratch on its per-tensor path.
type AngleGrad struct {
	DTheta, Theta, SinCos *F32
}

// NewAdam allocates zero moments for the parameters params[i] with gradients grads[i].
func NewAdam(d *Device, cfg adam.Config, params, grads []*F32) (*Adam, error) {
	return NewAdamAngles(d, cfg, params, grads, nil, 0)
}

// NewAdamAngles is NewAdam with angle tensors: angles[i], where its buffers are not nil,
// makes parameter i one (AngleGrad), all with the angle map's range R.
func NewAdamAngles(d *Device, cfg adam.Config, params, grads []*F32, angles []AngleGrad, R float32) (*Adam, error) {
	if len(params) != len(grads) || (angles != nil && len(angles) != len(params)) {
		return nil, fmt.Errorf("cuda: NewAdam: %d parameters, %d gradients, %d angle gradients", len(params), len(grads), len(angles))
	}
	slots := make([]adamSlot, len(params))
	for i, p := range params {
		var ag AngleGrad
		if angles != nil {
			ag = angles[i]
		}
		if grads[i].Len() != p.Len() {
			return nil, fmt.Errorf("cuda: NewAdam: parameter %d has %d elements, its gradient %d", i, p.Len(), grads[i].Len())
		}
		if (ag.DTheta == nil) != (ag.Theta == nil) ||
			(ag.DTheta != nil && (ag.DTheta.Len() != p.Len() || ag.Theta.Len() != p.Len())) {
			return nil, fmt.Errorf("cuda: NewAdam: parameter %d has %d elements, its angle gradient %d and angles %d",
				i, p.Len(), ag.DTheta.Len(), ag.Theta.Len())
		}
		if ag.SinCos != nil && (ag.Theta == nil || ag.SinCos.Len() != 2*p.Len()) {
			return nil, fmt.Errorf("cuda: NewAdam: parameter %d has %d elements, its angles' sines and cosines %d (and angles: %v)",
				i, p.Len(), ag.SinCos.Len(), ag.Theta != nil)
		}
		c := check{op: "NewAdam"}
		c.aligned(fmt.Sprintf("parameter %d's sines and cosines", i), ag.SinCos, 8)
		if c.err != nil {
			return nil, c.err
		}
		slots[i] = adamSlot{p: p, g: grads[i], dTheta: ag.DTheta, theta: ag.Theta, sinCos: ag.SinCos}
	}
	a := &Adam{Config: cfg, dev: d, angleR: R}
	for _, s := range slots {
		var err error
		if s.m, err = Alloc[float32](d, s.p.Len()); err == nil {
			if s.v, err = Alloc[float32](d, s.p.Len()); err != nil {
				s.m.Free()
			}
		}
		if err != nil {
			a.Free()
			return nil, err
		}
		a.slots = append(a.slots, s)
	}
	a.pending = make([][]adamK, len(a.slots))
	a.pendingGrad = make([]bool, len(a.slots))
	if err := a.upload(); err != nil {
		a.Free()
		return nil, err
	}
	return a, nil
}

// upload builds the device tables of the one-launch Step (the lags' classes all 0: no
// lag), and its programs' buffers.
func (a *Adam) upload() (err error) {
	idx := make([]int, len(a.slots))
	for i := range idx {
		idx[i] = i
	}
	if a.all, err = a.tables(idx); err != nil || a.all == nil {
		return err
	}
	if a.prog, err = Alloc[int32](a.dev, adamClasses*(1+2*adamSteps)); err != nil {
		return err
	}
	a.classKey = []adamClassKey{{}}
	return nil
}

// tables builds the one-launch tables of the tensors idx (classes all 0), or nil when
// there are none or their elements are too many for one launch's int indices (Step then
// goes per tensor).
func (a *Adam) tables(idx []int) (_ *adamTables, err error) {
	T := len(idx)
	if T == 0 {
		return nil, nil
	}
	tab, off := make([]int32, 0, 2*adamPtrs*T), make([]int32, 0, T+1)
	total := 0
	for _, i := range idx {
		s := a.slots[i]
		off = append(off, int32(total))
		total += s.p.Len()
		if total > math.MaxInt32 {
			return nil, nil
		}
		for _, b := range s.launchPtrs() {
			x := b.Ptr() // 0 for nil
			tab = append(tab, int32(uint32(x)), int32(uint32(x>>32)))
		}
	}
	off = append(off, int32(total))
	tb := &adamTables{idx: idx, total: total, clsHost: make([]int32, T)}
	defer func() {
		if err != nil {
			tb.free()
		}
	}()
	// Quads: each tensor's elements in fours, its last quad partial.
	aligned := true
	offq, cnt := make([]int32, 0, T+1), make([]int32, 0, T)
	totalq := 0
	for _, i := range idx {
		s := a.slots[i]
		offq, cnt = append(offq, int32(totalq)), append(cnt, int32(s.p.Len()))
		totalq += (s.p.Len() + 3) / 4
		for _, b := range s.launchPtrs() {
			aligned = aligned && b.Ptr()%16 == 0
		}
	}
	offq = append(offq, int32(totalq))
	if aligned {
		if tb.offq, err = FromHost(a.dev, offq); err != nil {
			return nil, err
		}
		if tb.cnt, err = FromHost(a.dev, cnt); err != nil {
			return nil, err
		}
		tb.totalq = totalq
	}
	if tb.tab, err = FromHost(a.dev, tab); err != nil {
		return nil, err
	}
	if tb.off, err = FromHost(a.dev, off); err != nil {
		return nil, err
	}
	if tb.cls, err = Alloc[int32](a.dev, T); err != nil {
		return nil, err
	}
	return tb, nil
}

// Steps is the number of steps taken since creation or the last Reset.
func (a *Adam) Steps() int { return a.step }

// SetLags sets, per parameter, how many of the optimiser's steps it sat out because no
// backward pass had reached it yet (train.Adam.Lag, torch.optim.Adam's skipping of
// parameters whose .grad is None), counting the coming step: parameter i takes step
// number Steps()+1−lags[i] at the next Step, and none when that is not positive. Nil
// means no lag.
func (a *Adam) SetLags(lags []int64) error {
	if lags != nil && len(lags) != len(a.slots) {
		return fmt.Errorf("cuda: Adam.SetLags: %d lags for %d parameters", len(lags), len(a.slots))
	}
	a.lags = append(a.lags[:0], lags...)
	if lags == nil {
		a.lags = nil
	}
	return a.regroup()
}

// regroup sorts the tensors into classes by their keys (adamClassKey), the classes
// numbered in order of first appearance, and uploads the classes when they changed.
func (a *Adam) regroup() error {
	if a.all == nil {
		return nil // Step goes per tensor anyway
	}
	cls := make([]int32, len(a.slots))
	var keys []adamClassKey
	for i := range cls {
		key := adamClassKey{deferrable: a.isDeferrable(i)}
		if a.lags != nil {
			key.lag = a.lags[i]
		}
		c := slices.Index(keys, key)
		if c < 0 {
			c = len(keys)
			keys = append(keys, key)
		}
		cls[i] = int32(c)
	}
	if len(keys) > adamClasses {
		a.classKey = nil // per tensor until the keys regroup
		return nil
	}
	for _, tb := range []*adamTables{a.all, a.def} {
		if tb == nil {
			continue
		}
		sub := make([]int32, len(tb.idx))
		for j, i := range tb.idx {
			sub[j] = cls[i]
		}
		if !slices.Equal(sub, tb.clsHost) {
			if err := tb.cls.Upload(sub); err != nil {
				a.classKey, tb.clsHost = nil, nil // the device's classes are unknown: upload next time
				return err
			}
			tb.clsHost = sub
		}
	}
	a.classKey = keys
	return nil
}

func (a *Adam) isDeferrable(i int) bool { return a.deferrable != nil && a.deferrable[i] }

// SetDeferrable marks the parameters idx as tensors whose steps may be deferred: they
// take no step and keep it, and at a later Step (or Flush) they take the waiting steps
// first, in order, with the step numbers and learning rate they had: the same arithmetic
// element by element, so the same bits as dense steps, one pass over the tensors instead
// of one each. A step waits at a Step after SetIdle, when no backward pass has written
// their gradients (so they are zero), and at a Step with zeroGrad when no step waits:
// that one's gradient stays in the gradient buffer until the steps are taken, so the
// caller must Flush before a backward pass writes the tensors' gradients again (Step
// refuses a gradient that finds one waiting), as before anything reads the parameters.
// Up to adamSteps−1 steps wait; one more is taken with them. (The intersection's weights
// get no gradient from a batch of paths, two updates of the three a training step makes:
// the step of the update that has intersections and the two after it are then taken in
// one pass, within the second path update's launch.) An angle tensor cannot be deferred.
func (a *Adam) SetDeferrable(idx []int) error {
	def := make([]bool, len(a.slots))
	for _, i := range idx {
		if i < 0 || i >= len(a.slots) {
			return fmt.Errorf("cuda: Adam.SetDeferrable: parameter %d of %d", i, len(a.slots))
		}
		if a.slots[i].dTheta != nil {
			return fmt.Errorf("cuda: Adam.SetDeferrable: parameter %d is an angle tensor", i)
		}
		def[i] = true
	}
	if err := a.Flush(); err != nil {
		return err
	}
	a.deferrable = def
	if err := a.def.free(); err != nil {
		return err
	}
	var err error
	if a.def, err = a.tables(idx); err != nil {
		return err
	}
	return a.regroup()
}

// SetIdle says that the coming Step follows a backward pass that wrote no gradient of the
// deferrable tensors (SetDeferrable): their steps wait.
func (a *Adam) SetIdle(idle bool) { a.idle = idle }

// Pending is the number of deferred steps parameter i has waiting.
func (a *Adam) Pending(i int) int { return len(a.pending[i]) }

// waiting is parameter i's deferred steps as a program's first steps, and where among
// them the gradient is (−1: none).
func (a *Adam) waiting(i int) (steps []adamK, gs int) {
	if a.pendingGrad[i] {
		return a.pending[i], 0
	}
	return a.pending[i], -1
}

// Step applies one Adam step to every parameter, in one launch (see Adam); with zeroGrad
// the gradients are cleared afterwards, ready for the next accumulation. A parameter whose
// own step count (see SetLags) is not positive is left as it is (its gradient is zero: no
// backward pass reached it); a deferrable one after SetIdle keeps its step for later
// (SetDeferrable). An angle tensor's Theta then holds the angles of its values
// (AngleForward), updated or not.
func (a *Adam) Step(zeroGrad bool) error {
	if !zeroGrad && a.hasAngles() {
		return fmt.Errorf("cuda: Adam.Step: an optimiser with angle tensors clears their gradients (zeroGrad)")
	}
	if !a.idle {
		for i, waits := range a.pendingGrad {
			if waits {
				return fmt.Errorf("cuda: Adam.Step: parameter %d's deferred step still has its gradient in the buffer a backward pass has written since: Flush first", i)
			}
		}
	}
	a.step++
	return a.launch(a.programs(zeroGrad), a.all)
}

// programs is what the coming step (number a.step) does to each tensor, its deferred
// steps recorded.
func (a *Adam) programs(zeroGrad bool) []adamProg {
	progs := make([]adamProg, len(a.slots))
	idle := a.idle
	a.idle = false
	for i := range a.slots {
		t := a.step
		if a.lags != nil {
			t -= int(a.lags[i])
		}
		wait, gs := a.waiting(i)
		deferrable := a.isDeferrable(i) && len(wait) < adamSteps-1
		switch {
		case t <= 0: // not started: no step (and nothing more waits)
			progs[i] = adamProg{steps: wait, gs: gs, clear: zeroGrad || gs >= 0}
		case deferrable && idle: // its gradient is zero: nothing to clear
			a.pending[i] = append(wait, a.constants(t))
			continue
		case deferrable && zeroGrad && len(wait) == 0: // its gradient waits in g
			a.pending[i], a.pendingGrad[i] = append(wait, a.constants(t)), true
			continue
		case gs >= 0: // idle: a zero gradient now, the one that waited first
			progs[i] = adamProg{steps: append(wait, a.constants(t)), gs: gs, clear: true}
		default:
			progs[i] = adamProg{steps: append(wait, a.constants(t)), gs: len(wait), clear: zeroGrad}
		}
		a.pending[i], a.pendingGrad[i] = nil, false
	}
	return progs
}

// Flush takes every deferred step now (SetDeferrable), in one launch over the deferrable
// tensors: before the parameters or the moments are read, or the optimiser changes, and
// before a forward pass that uses the tensors or a backward pass that writes their
// gradients. A no-op when none waits.
func (a *Adam) Flush() error {
	progs := make([]adamProg, len(a.slots))
	any := false
	for i := range a.pending {
		if len(a.pending[i]) > 0 {
			steps, gs := a.waiting(i)
			progs[i], any = adamProg{steps: steps, gs: gs, clear: gs >= 0}, true
			a.pending[i], a.pendingGrad[i] = nil, false
		}
	}
	if !any {
		return nil
	}
	return a.launch(progs, a.def) // only deferrable tensors wait (SetDeferrable flushes before it changes them)
}

// constants are the step size and bias correction of step number t, at the present
// learning rate.
func (a *Adam) constants(t int) adamK {
	stepSize, bc2Sqrt := adamScalars(t, a.Config)
	return adamK{stepSize, bc2Sqrt}
}

// launch applies progs[i] to parameter i, in one launch over the tensors of tb (the
// others' programs must be empty) where every class's tensors share their program (the
// usual case), else per tensor (stepEach).
func (a *Adam) launch(progs []adamProg, tb *adamTables) error {
	if tb == nil || a.classKey == nil || tb.clsHost == nil || a.perTensor {
		return a.stepEach(progs)
	}
	var byClass [adamClasses]*adamProg
	for j, i := range tb.idx {
		c := tb.clsHost[j]
		if byClass[c] == nil {
			byClass[c] = &progs[i]
		} else if !byClass[c].equal(progs[i]) {
			return a.stepEach(progs)
		}
	}
	table := make([]int32, adamClasses*(1+2*adamSteps))
	prog, K := table[:adamClasses], table[adamClasses:]
	for c, p := range byClass {
		if p == nil {
			continue
		}
		gs := 15
		if p.grad() {
			gs = p.gs
		}
		prog[c] = int32(len(p.steps) | gs<<4)
		if p.clear {
			prog[c] |= 1 << 8
		}
		for j, k := range p.steps {
			K[c*2*adamSteps+2*j] = int32(math.Float32bits(k.stepSize))
			K[c*2*adamSteps+2*j+1] = int32(math.Float32bits(k.bc2Sqrt))
		}
	}
	if err := a.prog.UploadAsync(table); err != nil {
		return err
	}
	cfg := a.Config
	T := len(tb.idx)
	kernel, n := "adam_multi", tb.total
	args := []arg{ptr(tb.tab), ptr(tb.off), ptr(tb.cls), i32(T), i32(tb.total)}
	if tb.offq != nil && !a.scalarOnly {
		kernel, n = "adam_multi_vec4", tb.totalq
		args = []arg{ptr(tb.tab), ptr(tb.offq), ptr(tb.cnt), ptr(tb.cls), i32(T), i32(tb.totalq)}
	}
	args = append(args, f32(float32(cfg.Beta2)), f32(float32(1-cfg.Beta1)), f32(float32(1-cfg.Beta2)), f32(float32(cfg.Eps)),
		ptr(a.prog), ptr(a.prog.Slice(adamClasses, 2*adamSteps*adamClasses)), f32(a.angleR))
	// The tables and programs, then per tensor Adam's work (an angle tensor's also reads
	// θ, maps the gradient, angle_grad's 6 FLOPs, and writes the new θ, angle_of's ~20,
	// tanhf counted as 18), or only the gradient's clear when it takes no step.
	w := Work{Bytes: words(2*adamPtrs*T, T+1, T, adamClasses*(1+2*adamSteps))}
	if kernel == "adam_multi_vec4" {
		w.Bytes += words(T)
	}
	for _, i := range tb.idx {
		w = w.Add(progs[i].work(a.slots[i]))
	}
	return a.dev.each(kernel, n, w, args...)
}

// work is one tensor's work under program p: the parameter and both moments read and
// written once whatever its steps, 13 FLOPs a step an element, the gradient read when a
// step takes it (an angle tensor's θ read and written too) and written when cleared.
func (p adamProg) work(s adamSlot) Work {
	n := s.p.Len()
	var w Work
	if len(p.steps) > 0 {
		w = Work{Bytes: words(6 * n), FLOPs: flops(n, 13*len(p.steps))}
		if p.grad() {
			w.Bytes += words(n)
			if s.dTheta != nil {
				w = w.Add(Work{Bytes: words(2 * n), FLOPs: flops(n, 6+20)})
			}
		}
		if s.sinCos != nil { // written: a half-angle and half_sincos an element
			w = w.Add(Work{Bytes: words(2 * n), FLOPs: flops(n, 1+distHalfAngleFlops)})
		}
	}
	if p.clear {
		w.Bytes += words(n)
	}
	return w
}

// stepEach is launch as adam_step launches per tensor and step (and a clear of the
// gradient of a tensor that takes no step; its deferred steps with a zero gradient): the
// path for more classes than one launch handles, and the reference the one-launch Step
// is tested against.
func (a *Adam) stepEach(progs []adamProg) error {
	for i, s := range a.slots {
		p := progs[i]
		if s.dTheta != nil {
			// The raw gradient from the angles' (AngleBackward into the cleared g), then
			// the angles' cleared: what the one-launch kernels do in one pass.
			if p.grad() {
				if err := a.dev.AngleBackward(s.g, s.dTheta, s.theta, a.angleR); err != nil {
					return fmt.Errorf("parameter %d: %w", i, err)
				}
			}
			if p.clear {
				if err := s.dTheta.Zero(); err != nil {
					return fmt.Errorf("parameter %d: %w", i, err)
				}
			}
		}
		for j, k := range p.steps {
			g := s.g
			if j != p.gs {
				var err error
				if g, err = grow(a.dev, &a.zeros, s.p.Len()); err != nil {
					return fmt.Errorf("parameter %d: %w", i, err)
				}
			}
			if err := a.dev.adamStepK(s.p, g, s.m, s.v, k, a.Config, p.clear && j == p.gs); err != nil {
				return fmt.Errorf("parameter %d: %w", i, err)
			}
		}
		if p.clear && !p.grad() { // else the step that took the gradient cleared it
			if err := s.g.Zero(); err != nil {
				return fmt.Errorf("parameter %d: %w", i, err)
			}
		}
		if s.theta != nil && len(p.steps) > 0 {
			if err := a.dev.AngleForward(s.theta, s.p, a.angleR); err != nil {
				return fmt.Errorf("parameter %d: %w", i, err)
			}
			if s.sinCos != nil {
				if err := a.dev.EntHalfSinCos(s.sinCos, s.theta); err != nil {
					return fmt.Errorf("parameter %d: %w", i, err)
				}
			}
		}
	}
	return nil
}

func (a *Adam) hasAngles() bool {
	for _, s := range a.slots {
		if s.dTheta != nil {
			return true
		}
	}
	return false
}

// Reset zeroes the moments and the step count: the "brand-new Adam optimiser" ConE's
// schedule creates at each learning-rate decay (docs/training.md §1). Set Config.LR as well.
func (a *Adam) Reset() error {
	if err := a.Flush(); err != nil { // the deferred steps of the optimiser that ends
		return err
	}
	a.step = 0
	for _, s := range a.slots {
		if err := s.m.Zero(); err != nil {
			return err
		}
		if err := s.v.Zero(); err != nil {
			return err
		}
	}
	return nil
}

// Free releases the moments and the tables (not the parameters or gradients).
func (a *Adam) Free() error {
	first := FreeAll(a.prog, a.zeros)
	for _, tb := range []*adamTables{a.all, a.def} {
		if err := tb.free(); err != nil && first == nil {
			first = err
		}
	}
	a.all, a.def, a.prog, a.zeros, a.classKey, a.pending, a.pendingGrad = nil, nil, nil, nil, nil, nil, nil
	for _, s := range a.slots {
		if err := FreeAll(s.m, s.v); err != nil && first == nil {
			first = err
		}
	}
	a.slots = nil
	return first
}

// adamScalars are Adam's step size lr/(1 − β1^t) and bias correction sqrt(1 − β2^t) for
// step t: package adam's, the host's own.
func adamScalars(t int, cfg adam.Config) (stepSize, bc2Sqrt float32) {
	f := cfg.At(int64(t))
	return f.StepSize, f.BC2Sqrt
}

// Moments downloads the first and second moments of parameter i, its deferred steps
// taken first (Flush).
func (a *Adam) Moments(i int, m, v []float32) error {
	if i < 0 || i >= len(a.slots) {
		return fmt.Errorf("cuda: Adam has %d parameters, asked for %d", len(a.slots), i)
	}
	if err := a.Flush(); err != nil {
		return err
	}
	if err := a.slots[i].m.Download(m); err != nil {
		return err
	}
	return a.slots[i].v.Download(v)
}

// SetState sets the step count and uploads the moments of every parameter (m[i], v[i]
// each as long as parameter i): a resumed optimiser. Deferred steps are taken first.
func (a *Adam) SetState(step int, m, v [][]float32) error {
	if len(m) != len(a.slots) || len(v) != len(a.slots) {
		return fmt.Errorf("cuda: Adam has %d parameters; state for %d and %d given", len(a.slots), len(m), len(v))
	}
	if err := a.Flush(); err != nil {
		return err
	}
	for i, s := range a.slots {
		if len(m[i]) != s.p.Len() || len(v[i]) != s.p.Len() {
			return fmt.Errorf("cuda: Adam parameter %d has %d elements; moments of %d and %d given", i, s.p.Len(), len(m[i]), len(v[i]))
		}
		if err := s.m.Upload(m[i]); err != nil {
			return err
		}
		if err := s.v.Upload(v[i]); err != nil {
			return err
		}
	}
	a.step = step
	return nil
}

// adamWork is Adam's work on n elements: the parameter and both moments read and
// written, the gradient read (and cleared with zeroGrad); 13 FLOPs each (the two moment
// updates, a square root, the bias correction, the division and the step).
func adamWork(n int, zeroGrad bool) Work {
	w := Work{Bytes: words(7 * n), FLOPs: flops(n, 13)}
	if zeroGrad {
		w.Bytes += words(n)
	}
	return w
}
