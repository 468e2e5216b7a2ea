package train

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// run is the step loop (docs/training.md §1–§3).
func (t *trainer) run(ctx context.Context) (*Result, error) {
	cfg := t.cfg
	res := &Result{Config: cfg, Resumed: t.resumed, Written: t.written}
	t.sessionStart = time.Now()
	ranPending := t.pending != nil
	if ranPending {
		// The validation an interruption cut short, on the checkpoint's parameters (those
		// after its step), as the uninterrupted run ran it.
		p := *t.pending
		if err := t.validate(ctx, p.Step, p.LR, res); err != nil {
			return nil, err
		}
		if res.Interrupted {
			return t.result(res), nil
		}
		if err := t.persist(res.improved && cfg.KeepBest, t.finished()); err != nil {
			return nil, err
		}
	}
	if t.finished() {
		moved := t.written != t.destination()
		if moved {
			// Finished in Partial (an earlier run ended between its last checkpoint and
			// the final one): the finished run goes where it belongs.
			if err := t.save(); err != nil {
				return nil, err
			}
		}
		if !ranPending && !moved {
			t.printf("the checkpoint already holds %d of %d steps%s; nothing to do\n", t.stepsDone, cfg.Steps, t.stopNote())
			return t.result(res), nil
		}
		t.result(res)
		t.bestLine(res)
		t.printf("done: %d of %d steps%s\n", t.stepsDone, cfg.Steps, t.stopNote())
		return res, nil
	}
	every := t.opts.ProgressEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	first := t.stepsDone
	t.printf("training %s d=%d on %s: %d path and %d other train queries, steps %d to %d\n",
		cfg.Model, cfg.Dim, cfg.Dataset, len(t.pools[0].members), len(t.pools[1].members), first, cfg.Steps-1)
	lastPrint := time.Now()
	last := cfg.Steps - 1
	if t.opts.StopAfter > 0 {
		last = min(last, t.opts.StopAfter-1)
	}
	prof, err := newProfiler(t.opts, first, last)
	if err != nil {
		return nil, err
	}
	defer prof.stop(t)

	// The updates of a step: path, other, path; a single one when a pool is empty.
	var order []*pool
	switch {
	case len(t.pools[1].members) == 0:
		order = []*pool{t.pools[0]}
	case len(t.pools[0].members) == 0:
		order = []*pool{t.pools[1]}
	default:
		order = []*pool{t.pools[0], t.pools[1], t.pools[0]}
	}
	// Each pool's batches are sampled ahead, on a goroutine of its own (sampler.go).
	for _, p := range order {
		if t.samplers[p.index] == nil {
			t.samplers[p.index] = startSampler(p, t.ts, cfg.Batch, cfg.Negatives)
			defer func() { t.samplers[p.index].close(); t.samplers[p.index] = nil }()
		}
	}

	// A step's losses are read after the next step's updates are enqueued (lagging), so
	// that a device always has the next update queued behind the one it runs; steps that
	// validate, checkpoint or stop, and a profiled run, read theirs at once.
	var lagging *enqueuedStep
	for s := t.stepsDone; s < cfg.Steps; s++ {
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
		if err := prof.begin(s); err != nil {
			return nil, err
		}
		t.sched.beforeStep(s, cfg.Steps)
		cur := &enqueuedStep{step: s, lr: t.sched.LR, order: order}
		// The updates are enqueued first (on a GPU, they queue on the device while the
		// host goes on), then their losses read.
		for _, p := range order {
			batch, wait, err := t.update(s, p)
			if err != nil {
				return nil, err
			}
			cur.batches = append(cur.batches, batch)
			cur.pending = append(cur.pending, wait)
		}
		if lagging != nil {
			row, err := t.finishStep(lagging)
			if err != nil {
				return nil, err
			}
			t.stepEnded(lagging.step, first, row, &lastPrint, every)
			lagging = nil
		}
		validating := len(t.valid) > 0 && (t.sched.evalDue(s) || s == cfg.Steps-1)
		stop := t.opts.StopAfter > 0 && s+1 >= t.opts.StopAfter
		due := s+1 == cfg.Steps || stop || (cfg.CheckpointEvery > 0 && (s+1)%cfg.CheckpointEvery == 0)
		now := validating || due || prof != nil
		var row artifact.TrainLogRow
		if now {
			var err error
			if row, err = t.finishStep(cur); err != nil {
				return nil, err
			}
			if err := prof.end(s, t); err != nil { // before the schedule's new Adam, which is no part of the step
				return nil, err
			}
		}
		if t.sched.afterStep(s) {
			t.adam.ResetCounts(t.sched.LR)
			if err := t.upd.ResetAdam(t.sched.LR); err != nil {
				return nil, fmt.Errorf("step %d: resetting Adam on the device: %w", s, err)
			}
			t.printf("step %d: learning rate %.3g → %.3g, new Adam; next drop at the end of step %g\n", s, cur.lr, t.sched.LR, math.Ceil(t.sched.WarmUpSteps))
		}
		if !now {
			lagging = cur
			continue
		}
		res.improved = false
		if validating {
			if err := t.validate(ctx, s, cur.lr, res); err != nil {
				return nil, err
			}
		}
		early := cfg.stopped(t.best)
		if err := t.persist(res.improved && cfg.KeepBest, due || early || res.Interrupted); err != nil {
			return nil, err
		}
		t.stepEnded(s, first, row, &lastPrint, every)
		if stop || early || res.Interrupted {
			break
		}
	}
	if lagging != nil { // interrupted: the last enqueued step is done on the device too
		row, err := t.finishStep(lagging)
		if err != nil {
			return nil, err
		}
		t.stepEnded(lagging.step, first, row, &lastPrint, every)
	}
	if res.Interrupted && t.savedSteps != t.stepsDone {
		if err := t.save(); err != nil {
			return nil, err
		}
	}
	t.result(res)
	if t.opts.Progress != nil {
		t.bestLine(res)
		fmt.Fprintf(t.opts.Progress, "done: %d of %d steps%s; time spent:\n", t.stepsDone, cfg.Steps, t.stopNote())
		res.Timings.Write(t.opts.Progress)
	}
	return res, nil
}

// enqueuedStep is a step whose updates are enqueued and whose losses are not yet read.
type enqueuedStep struct {
	step    int
	lr      float64
	order   []*pool
	batches []*model.Batch
	pending []func() (float64, error)
}

// finishStep reads e's losses (waiting for its updates), hands its batches back to the
// samplers, logs the step's train row and counts the step done.
func (t *trainer) finishStep(e *enqueuedStep) (artifact.TrainLogRow, error) {
	var sum, sumPath float64
	var nPath int
	lossOther := math.NaN()
	for i, p := range e.order {
		loss, err := e.pending[i]()
		if err != nil {
			return artifact.TrainLogRow{}, err
		}
		t.samplers[p.index].release(e.batches[i])
		sum += loss
		if p.index == 0 {
			sumPath += loss
			nPath++
		} else {
			lossOther = loss
		}
	}
	lossPath := math.NaN()
	if nPath > 0 {
		lossPath = sumPath / float64(nPath)
	}
	row := artifact.TrainLogRow{Step: int64(e.step), Kind: artifact.LogTrain, LR: e.lr,
		Loss: sum / float64(len(e.order)), LossPath: lossPath, LossOther: lossOther,
		MRR: math.NaN(), Hits1: math.NaN(), Hits3: math.NaN(), Hits10: math.NaN(),
		ElapsedS: t.elapsed()}
	t.log = append(t.log, row)
	t.traj = t.traj.add(row)
	t.stepsDone = e.step + 1
	return row, nil
}

// stepEnded calls the AfterStep hook and prints the progress line when it is due.
func (t *trainer) stepEnded(s, first int, row artifact.TrainLogRow, lastPrint *time.Time, every time.Duration) {
	if t.opts.AfterStep != nil {
		t.opts.AfterStep(s + 1)
	}
	if time.Since(*lastPrint) >= every {
		*lastPrint = time.Now()
		t.progressLine(s, first, row)
	}
}

// validate runs the validation after step s (whose updates ran at lr), logs it and
// judges it against the best so far (res.improved). An interruption during it is not an
// error: it sets res.Interrupted and leaves the validation pending in the checkpoint.
func (t *trainer) validate(ctx context.Context, s int, lr float64, res *Result) error {
	sum, err := t.evaluate(ctx, s, lr)
	if err != nil && ctx.Err() != nil {
		res.Interrupted = true
		t.pending = &pendingValid{Step: s, LR: lr}
		return nil
	}
	if err != nil {
		return err
	}
	t.pending = nil
	res.Valid = sum
	if t.cfg.BestMetric == "" {
		return nil
	}
	row, ok := t.validRow(s, t.metric.LogType())
	if !ok {
		return fmt.Errorf("validation after step %d: no %s row for the best metric %s", s, t.metric.LogType(), t.metric)
	}
	v := t.metric.value(row)
	t.best, res.improved = improve(t.best, s, v)
	switch {
	case res.improved && t.cfg.KeepBest:
		t.printf("step %d: %s %.4f, the best so far: kept in %s\n", s, t.metric, v, t.opts.bestPath())
	case res.improved:
		t.printf("step %d: %s %.4f, the best so far\n", s, t.metric, v)
	case t.best != nil && t.cfg.Patience > 0:
		t.printf("step %d: %s %.4f, not above %.4f (step %d): %d of %d validations without improvement\n",
			s, t.metric, v, t.best.Value, t.best.Step, t.best.Since, t.cfg.Patience)
	case t.best != nil:
		t.printf("step %d: %s %.4f, not above %.4f (step %d)\n", s, t.metric, v, t.best.Value, t.best.Step)
	}
	return nil
}

// validRow finds the train log's validation row of type typ after step s.
func (t *trainer) validRow(s int, typ string) (artifact.TrainLogRow, bool) {
	for i := len(t.log) - 1; i >= 0 && t.log[i].Step == int64(s); i-- {
		if r := t.log[i]; r.Kind == artifact.LogValid && r.Type == typ {
			return r, true
		}
	}
	return artifact.TrainLogRow{}, false
}

// result fills in the end of a run.
func (t *trainer) result(res *Result) *Result {
	res.StepsDone, res.Timings, res.Written = t.stepsDone, t.currentTimings(), t.written
	if t.best != nil {
		b := Best{Metric: t.cfg.BestMetric, Step: t.best.Step, Value: t.best.Value}
		if t.cfg.KeepBest {
			b.Path = t.bestAt // "" when no file is known to hold it
		}
		res.Best = &b
		if t.earlyStopped() {
			res.EarlyStop = &EarlyStop{Step: t.stepsDone - 1, Patience: t.cfg.Patience, Best: b}
		}
	}
	return res
}

// earlyStopped reports whether early stopping ended the run before its last step.
func (t *trainer) earlyStopped() bool {
	return t.cfg.stopped(t.best) && t.stepsDone < t.cfg.Steps
}

// bestLine prints the best validation and where it is kept.
func (t *trainer) bestLine(res *Result) {
	if res.Best == nil {
		return
	}
	kept := ""
	switch {
	case res.Best.Path != "":
		kept = ", kept in " + res.Best.Path
	case t.cfg.KeepBest:
		kept = fmt.Sprintf("; not kept in %s, which did not hold it when the run was resumed (%s)", t.opts.bestPath(), t.bestMissing)
	}
	t.printf("best validation: %s %.4f after step %d%s\n", res.Best.Metric, res.Best.Value, res.Best.Step, kept)
}

// stopNote says, for the final line, that the run stopped early and why.
func (t *trainer) stopNote() string {
	if !t.earlyStopped() {
		return ""
	}
	return fmt.Sprintf(", stopped early after step %d: %s has not improved for %d validations (best %.4f after step %d)",
		t.stepsDone-1, t.cfg.BestMetric, t.best.Since, t.best.Value, t.best.Step)
}

// update is one optimiser update on the next batch of pool p during step s. It returns
// the batch, which is the update's until its loss is read, and the update's loss as a
// function: on a device the update is only enqueued (Updater), and the function waits
// for it.
func (t *trainer) update(s int, p *pool) (*model.Batch, func() (float64, error), error) {
	t0 := time.Now()
	batch := t.samplers[p.index].take()
	t.timings.Sampling += time.Since(t0).Seconds()
	if testHookBeforeUpdate != nil {
		testHookBeforeUpdate(s, p.name, t.model)
	}
	// fail wraps err (%w: a *NonFiniteError stays visible to errors.As) with the step,
	// the pool and what became of the checkpoint.
	fail := func(err error) error {
		kept := "no checkpoint was written"
		if t.savedSteps >= 0 {
			kept = fmt.Sprintf("the last checkpoint, %s (%d steps), is left as it was", t.opts.Checkpoint, t.savedSteps)
		}
		return fmt.Errorf("step %d, %s-pool update: %w; stopping: %s", s, p.name, err, kept)
	}
	if err := t.reach(batch); err != nil {
		return nil, nil, fmt.Errorf("step %d, %s-pool update: %w", s, p.name, err)
	}
	wait, err := t.upd.Update(batch, t.drop)
	if err != nil {
		return nil, nil, fail(err) // on the CPU: before the step's other updates run
	}
	return batch, func() (float64, error) {
		loss, err := wait()
		if err != nil {
			return 0, fail(err)
		}
		return loss, nil
	}, nil
}

// reach tells Adam which tensors the batch's backward pass reaches (Adam.Reach).
func (t *trainer) reach(b *model.Batch) error {
	if t.adam.Started == nil {
		return nil
	}
	structures := make([]*query.Structure, len(b.Queries))
	for i := range b.Queries {
		structures[i] = b.Queries[i].Structure
	}
	reached, err := t.model.Reached(structures)
	if err != nil {
		return err
	}
	t.adam.Reach(reached)
	return nil
}

// progressLine prints step, loss, speed and ETA.
func (t *trainer) progressLine(s, first int, row artifact.TrainLogRow) {
	if t.opts.Progress == nil {
		return
	}
	done := s + 1 - first
	rate := float64(done) / time.Since(t.sessionStart).Seconds()
	eta := time.Duration(float64(t.cfg.Steps-s-1) / rate * float64(time.Second)).Round(time.Second)
	fmt.Fprintf(t.opts.Progress, "step %d/%d  loss %.4f (path %.4f, other %.4f)  lr %.3g  %.2f steps/s  ETA %s\n",
		s, t.cfg.Steps, row.Loss, row.LossPath, row.LossOther, row.LR, rate, eta)
}
