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
	Log        string // the train log to write (and, with Resume, to continue); "" for none
	Resume     bool   // continue from Checkpoint, whose configuration the caller passes (see ResumeConfig)
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

	// Profile, if its Path is set, profiles a window of steps on the device (ProfileOptions).
	Profile ProfileOptions

	// StopAfter, if positive, ends the run with a checkpoint once that many steps are
	// done, before Config.Steps: a partial run that a resumed one continues exactly.
	StopAfter int
	// AfterCheckpoint, if not nil, is called after each checkpoint is written, with the
	// number of steps it holds.
	AfterCheckpoint func(stepsDone int)
}

// Result is what a run did.
type Result struct {
	Config      Config
	StepsDone   int
	Interrupted bool          // ctx was cancelled: the checkpoint holds StepsDone steps
	Timings     Timings       // cumulative over resumed runs
	Valid       *eval.Summary // the last validation of this run, if any
}

// checkOutputs checks the checkpoint and the log before any work (outfile.Check): both
// writable, neither one of the inputs nor each other, both regular files (they are
// rewritten at every checkpoint and read back by --resume), so that a mistake is found
// at once, not at the first checkpoint hours later. With Resume, the checkpoint and log
// are inputs too by design, and are not compared with themselves.
func checkOutputs(opts Options) (release func(), err error) {
	inputs := []outfile.Path{{Flag: "--train", Path: opts.Train}, {Flag: "--valid", Path: opts.Valid}, {Flag: "--config", Path: opts.Config}}
	return outfile.Claim(inputs, []outfile.Path{
		{Flag: "--checkpoint", Path: opts.Checkpoint, File: true},
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
