package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/model"
)

// An Updater carries out a run's optimiser updates where the parameters live: on the host
// (cpuUpdater, this file) or on an accelerator that holds the parameters, gradients and
// Adam's moments itself (a Device's, from outside this package: package gpumodel's for
// CUDA). The trainer sees only this interface; it keeps the host's copy of the model and
// of Adam's state (Host), which is what checkpoints hold, and asks the updater to bring
// that copy up to date (Download) before it validates or writes a checkpoint.
type Updater interface {
	// Update starts one update on batch (dropout masks drawn from drop): the loss, its
	// gradients and an Adam step. It may only enqueue the work; wait returns the update's
	// loss once it is done. An error from either, a non-finite loss included (LossError),
	// is the update's failure: the run stops without writing.
	Update(batch *model.Batch, drop *rand.Rand) (wait func() (float64, error), err error)
	// ResetAdam starts a new optimiser at lr (the schedule's drop) where the moments are
	// updated, after the host's Adam had its counts reset (Adam.ResetCounts): the host's
	// moments (cpuUpdater), or the device's, leaving the host's copy to Download.
	ResetAdam(lr float64) error
	// RestoreAdam puts the host's Adam state (a resumed checkpoint's) in place; called once,
	// before the first update.
	RestoreAdam() error
	// Download brings the host model's parameters up to date and checks that they are
	// finite (CheckFinite); with moments, Adam's moments and step count too. A no-op where
	// the host's are the updated ones.
	Download(moments bool) error
	// Ranker ranks validation queries from the parameters where they are updated, as
	// `rank --device` does; nil: validation ranks with the host model.
	Ranker() eval.BatchRanker
	// Close releases what the updater holds.
	Close() error
}

// A Device makes the Updater of a run whose parameters and optimiser live on it
// (Options.Device; nil is the CPU). Package gpumodel implements it for CUDA, and pkg/device
// maps `--device cuda` to that one, so this package imports no device code.
type Device interface {
	// Name names the device in messages.
	Name() string
	// Updater puts the host's model and optimiser (at its learning rate) on the device.
	Updater(h Host) (Updater, error)
}

// Host is what an Updater works from: the trainer's host model and optimiser, which
// checkpoints are written from and a device's updater keeps up to date (Download), and
// the timings it adds to (a device's updater: Timings.Device, the host's wait for it).
type Host struct {
	Model   *model.Model[float32]
	Params  []model.Tensor[float32] // Model.Params.Tensors(): Adam's order
	Adam    *Adam
	Timings *Timings
}

// cpuUpdater updates the host model in place: the loss and its gradients on the timed
// kernels, then Adam (dense, or sparse over the touched rows: adam_sparse.go).
type cpuUpdater struct {
	Host
	kernels *timedKernels // Host.Model's
	grads   *model.Grads[float32]
	gradT   []model.Tensor[float32] // grads.Params.Tensors()
	sparse  bool                    // Config.SparseAdam
	workers int
}

// Update runs the whole update before it returns: a failure stops the run before the
// step's other updates are started.
func (u *cpuUpdater) Update(batch *model.Batch, drop *rand.Rand) (func() (float64, error), error) {
	t1 := time.Now()
	lin0, dist0 := u.kernels.linear, u.kernels.distance
	tape, err := u.Model.Loss(batch, drop)
	if err != nil {
		return nil, err
	}
	if math.IsNaN(tape.Loss) || math.IsInf(tape.Loss, 0) {
		return nil, LossError(tape.Loss)
	}
	tape.Backward(u.grads)
	t2 := time.Now()
	if u.sparse {
		// Zeroing the gradients as it goes: each touched row while it is in the cache.
		err = u.Adam.UpdateRowsZero(u.Params, u.gradT, TouchedRows(u.Params, u.grads), u.workers) // adam_sparse.go
		u.grads.EntityRows.Reset()
		u.grads.RelationRows.Reset()
	} else {
		err = u.Adam.Update(u.Params, u.gradT, u.workers)
		u.grads.Zero()
	}
	t3 := time.Now()
	if err != nil {
		return nil, err
	}

	dist := (u.kernels.distance - dist0).Seconds()
	u.Timings.Distance += dist
	u.Timings.Linear += (u.kernels.linear - lin0).Seconds()
	u.Timings.Embedding += t2.Sub(t1).Seconds() - dist
	u.Timings.Optimizer += t3.Sub(t2).Seconds()
	loss := tape.Loss
	return func() (float64, error) { return loss, nil }, nil
}

// ResetAdam clears the host's moments: the host's Adam is the one updated.
func (u *cpuUpdater) ResetAdam(float64) error {
	u.Adam.ClearMoments()
	return nil
}

// RestoreAdam is a no-op: the host's Adam is the one updated.
func (u *cpuUpdater) RestoreAdam() error { return nil }

// Download is a no-op: the host's parameters are the updated ones (Adam checks them).
func (u *cpuUpdater) Download(bool) error { return nil }

// Ranker is nil: validation ranks with the host model on the bare backend.
func (u *cpuUpdater) Ranker() eval.BatchRanker { return nil }

func (u *cpuUpdater) Close() error { return nil }

// CheckFinite returns a *NonFiniteError for the first NaN or infinite value of params.
func CheckFinite(params []model.Tensor[float32]) error {
	for _, p := range params {
		for i, x := range p.Data {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return &NonFiniteError{Tensor: p.Name, Index: i, Value: x}
			}
		}
	}
	return nil
}

// LossError is the failure of an update whose loss is NaN or infinite.
func LossError(loss float64) error { return fmt.Errorf("the loss is %v", loss) }
