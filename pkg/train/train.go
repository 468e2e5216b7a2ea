package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/model"
)

// testHookBeforeUpdate, when set by a test, runs before every update.
var testHookBeforeUpdate func(step int, pool string, m *model.Model[float32])

// trainer is the state of one run: setup (setup.go) builds it from the inputs or a
// checkpoint, run (loop.go) steps it, checkpoint (checkpoint.go) saves it.
type trainer struct {
	cfg     Config
	opts    Options
	workers int
	release func() // ends the claim on the outputs (outfile.Claim)

	model         *model.Model[float32] // trains, on the timed kernels
	evalModel     *model.Model[float32] // the same parameters on the bare backend, for validation
	kernels       *timedKernels
	grads         *model.Grads[float32]
	params, gradT []model.Tensor[float32]
	adam          *Adam
	upd           Updater // where the updates run (updater.go)
	sched         schedule
	dropSrc       *rand.PCG
	drop          *rand.Rand

	ts    *trainSet
	pools [2]*pool // path, other
	// samplers sample the pools' batches ahead during run (sampler.go), by pool index.
	samplers [2]*sampler
	valid    []eval.RankQuery

	log []artifact.TrainLogRow
	// traj is the trajectory of the steps done (trajectory.go); trajUnknown: resumed from
	// a checkpoint that records none, so none is recorded.
	traj        trajectory
	trajUnknown bool
	// validDigest is the valid queries' digest (artifact.QueriesDigest): this run's
	// --valid, or the checkpoint's when resumed without one; "" for none.
	validDigest string
	entities    string // the KG's entity-table digest (artifact.QueriesMeta.EntitiesDigest)
	kg          string // the KG's content digest (artifact.QueriesMeta.KGDigest)
	stepsDone   int
	savedSteps  int    // steps in the checkpoint on disk; -1: none written by this run or before
	written     string // where that checkpoint is: Options.Checkpoint or Options.Partial
	resumed     bool   // the run continues a checkpoint (Options.Resume, or AutoResume's choice)

	metric  BestMetric    // Config.BestMetric, parsed; the zero value without one
	best    *bestState    // the best validation so far (best.go); nil: none yet
	pending *pendingValid // a validation cut short by an interruption, run first on resume

	// bestAt is the file known to hold best's checkpoint (Config.KeepBest): written by
	// this run, or found there when it resumed (checkBestFile); "" when not known, and
	// bestMissing then says why. Only bestAt is ever named as where the best is kept.
	bestAt, bestMissing string

	timings      Timings // cumulative, except Total
	baseTotal    float64 // Total before this run
	sessionStart time.Time
}

// Run trains a model with cfg (for a resumed run, the configuration ResumeConfig gives)
// and writes its checkpoint and train log. Every input is read and checked before
// anything is written. Cancelling ctx ends the run at the next step boundary with a
// checkpoint (Result.Interrupted). A NaN or infinite loss or parameter ends it with an
// error and without writing, so the last checkpoint on disk stays as it was.
func Run(ctx context.Context, cfg Config, opts Options) (*Result, error) {
	t, err := setup(cfg, opts)
	if err != nil {
		return nil, err
	}
	defer t.release() // the claim on the checkpoint and log (outfile.Claim), after the last write
	defer t.upd.Close()
	return t.run(ctx)
}

func (t *trainer) printf(format string, args ...any) {
	if t.opts.Progress != nil {
		fmt.Fprintf(t.opts.Progress, format, args...)
	}
}

// warnf says what a user must see even without progress: on Progress, or on Warnings
// when there is none.
func (t *trainer) warnf(format string, args ...any) {
	w := t.opts.Progress
	if w == nil {
		w = t.opts.Warnings
	}
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

// elapsed is the training time so far, over resumed runs.
func (t *trainer) elapsed() float64 { return t.baseTotal + time.Since(t.sessionStart).Seconds() }

func (t *trainer) currentTimings() Timings {
	tm := t.timings
	tm.Total = t.elapsed()
	return tm
}
