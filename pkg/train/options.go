package train

import (
	"io"
	"time"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/outfile"
)

// Options are how a run is carried out; unlike Config, none of them changes what is
// computed.
type Options struct {
	Train      string // the train queries artifact (split train)
	Valid      string // a queries artifact to validate on; "" for none
	Checkpoint string // the checkpoint to write (and, with Resume, to read first)
	// Partial, if set, is where the checkpoints of the unfinished run go (every
	// CheckpointEvery steps, and on an interruption): Checkpoint is then written only
	// when the run is finished (its last step, or an early stop), and Partial removed. So
	// Checkpoint exists only as a finished model, which is what a build system (make,
	// Slurm's DAG) takes an existing target for. Resume and AutoResume read Partial when it
	// exists.
	Partial string
	// Best is where Config.KeepBest writes the checkpoint of the best validation
	// (BestPath(Checkpoint) when empty).
	Best   string
	Log    string // the train log to write (and, with Resume, to continue); "" for none
	Resume bool   // continue from Checkpoint, whose configuration the caller passes (see ResumeConfig)
	// AutoResume continues the checkpoint (Partial, if it exists, else Checkpoint) when it
	// holds an unfinished run of this very configuration (all keys but checkpoint_every)
	// and train file, and starts afresh otherwise; the caller passes a fresh run's
	// configuration. Rerunning an interrupted command then continues it.
	AutoResume bool
	Config     string // the configuration file the caller read, if any: an input no output may overwrite
	// Overwrite lets a fresh run replace a checkpoint or train log of another run (another
	// configuration, or not such an artifact at all); without it that is an error.
	Overwrite bool

	Kernels compute.Kernels[float32] // the backend; nil: compute.Reference
	Workers int                      // goroutines for Adam and validation; 0: GOMAXPROCS

	// Device, if not nil, runs the updates there (CUDA(d): on a CUDA device, where the
	// parameters, gradients and Adam's moments live while the host samples batches);
	// Kernels then serves validation only. nil: the updates run on the CPU, on Kernels.
	// Checkpoints are the same artifact on either, so a run resumes across devices.
	Device Device

	Progress      io.Writer     // progress lines; nil: none
	ProgressEvery time.Duration // between progress lines; 0: 5s

	// Warnings is where what a user must see even without progress goes when Progress is
	// nil (train -q): a resumed run's best checkpoint not where --best says. nil: nowhere.
	Warnings io.Writer

	// Profile, if its Path is set, profiles a window of steps on the device (ProfileOptions).
	Profile ProfileOptions

	// StopAfter, if positive, ends the run with a checkpoint once that many steps are
	// done, before Config.Steps: a partial run that a resumed one continues exactly.
	StopAfter int
	// AfterCheckpoint, if not nil, is called after each checkpoint is written, with the
	// number of steps it holds.
	AfterCheckpoint func(stepsDone int)
	// AfterStep, if not nil, is called at the end of every step (its checkpoint, if any,
	// written), with the number of steps done.
	AfterStep func(stepsDone int)
}

// Result is what a run did.
type Result struct {
	Config      Config
	StepsDone   int
	Interrupted bool // ctx was cancelled: the checkpoint holds StepsDone steps
	// Resumed is whether the run continued a checkpoint (Resume, or AutoResume's choice).
	Resumed bool
	// Written is where the last checkpoint went: Checkpoint, or Partial for an unfinished run.
	Written string
	// EarlyStop is set when the run stopped before Config.Steps because Patience
	// validations in a row did not improve on the best (this run or, resumed, an earlier one).
	EarlyStop *EarlyStop
	// Best is the best validation by Config.BestMetric so far; nil without one.
	Best *Best

	improved bool          // the last validation improved on the best (run's bookkeeping)
	Timings  Timings       // cumulative over resumed runs
	Valid    *eval.Summary // the last validation of this run, if any
}

// checkOutputs checks the checkpoint and the log before any work (outfile.Check): both
// writable, neither one of the inputs nor each other, both regular files (they are
// rewritten at every checkpoint and read back by --resume), so that a mistake is found
// at once, not at the first checkpoint hours later. With Resume, the checkpoint and log
// are inputs too by design, and are not compared with themselves.
func checkOutputs(opts Options, keepBest bool) (release func(), err error) {
	inputs := []outfile.Path{{Flag: "--train", Path: opts.Train}, {Flag: "--valid", Path: opts.Valid}, {Flag: "--config", Path: opts.Config}}
	best := ""
	if keepBest {
		best = opts.bestPath()
	}
	return outfile.Claim(inputs, []outfile.Path{
		{Flag: "--checkpoint", Path: opts.Checkpoint, File: true},
		{Flag: "--partial", Path: opts.Partial, File: true},
		{Flag: "--best", Path: best, File: true},
		{Flag: "--log", Path: opts.Log, File: true},
		{Flag: "--profile", Path: opts.Profile.Path, File: true},
		{Flag: "--profile (its CSV)", Path: profileCSVPath(opts.Profile.Path), File: true},
	})
}

func profileCSVPath(path string) string {
	if path == "" {
		return ""
	}
	return ProfileCSV(path)
}

// bestPath is where the best checkpoint goes.
func (o Options) bestPath() string {
	if o.Best != "" {
		return o.Best
	}
	return BestPath(o.Checkpoint)
}

// Best is the best validation of a run by its BestMetric.
type Best struct {
	Metric string  // Config.BestMetric
	Step   int     // the validation after this step (the checkpoint holds Step+1 steps)
	Value  float64 // the metric, a fraction in [0, 1]
	Path   string  // where it was kept (Config.KeepBest); "" when not kept
}

// EarlyStop is why a run stopped before its last step.
type EarlyStop struct {
	Step     int // the step after whose validation the run stopped
	Patience int // the validations in a row without improvement
	Best     Best
}
