package train

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/gpu/gpumodel"
	"github.com/rocone/rocone/pkg/model"
)

// CUDA returns the Device that runs a run's updates on d: the parameters, gradients and
// Adam's moments live there (package gpumodel) and the host samples batches while the
// device computes. Checkpoints are the same artifact on either device, so a run resumes
// across devices. CUDA(nil) is nil: the CPU.
func CUDA(d *gpu.Device) Device {
	if d == nil {
		return nil
	}
	return cudaDevice{d}
}

type cudaDevice struct{ dev *gpu.Device }

func (d cudaDevice) Name() string { return d.dev.Name() }

func (d cudaDevice) updater(h hostState) (Updater, error) {
	m, err := gpumodel.New(d.dev, h.model, h.adam.LR)
	if err != nil {
		return nil, err
	}
	return &cudaUpdater{hostState: h, dev: m}, nil
}

// cudaUpdater runs the updates on a CUDA device (package gpumodel); the host's Adam
// only counts the device's steps per tensor (its lags), and its moments are filled by
// Download(true).
type cudaUpdater struct {
	hostState
	dev   *gpumodel.Model
	stale bool // the host's parameters lag the device's
}

// Update enqueues the update; the returned wait blocks until the device has done it.
func (u *cudaUpdater) Update(batch *model.Batch, drop *rand.Rand) (func() (float64, error), error) {
	start := time.Now()
	u.stale = true
	u.adam.next() // the host's count of the device's steps, per tensor
	if err := u.dev.SetAdamLags(u.adam.Lag); err != nil {
		return nil, err
	}
	pend, err := u.dev.Update(batch, drop)
	u.timings.Device += time.Since(start).Seconds()
	if err != nil {
		return nil, err
	}
	return func() (float64, error) {
		start := time.Now()
		loss, _, _, err := pend.Wait()
		u.timings.Device += time.Since(start).Seconds()
		switch {
		case err != nil:
			return 0, err
		case math.IsNaN(loss) || math.IsInf(loss, 0):
			return 0, errLoss(loss)
		}
		return loss, nil
	}, nil
}

func (u *cudaUpdater) ResetAdam(lr float64) error { return u.dev.ResetAdam(lr) }

// RestoreAdam copies the host's moments and step count to the device; from scratch
// (no step yet) the device's fresh optimiser is the host's already.
func (u *cudaUpdater) RestoreAdam() error {
	if u.adam.Step == 0 {
		return nil
	}
	return u.dev.SetAdam(u.adam.LR, int(u.adam.Step), u.adam.M, u.adam.V)
}

// Download copies the device's parameters (and, with moments, Adam's moments and step
// count) to the host model, and checks that they are finite. Without moments it is a
// no-op while no update ran since the last download.
func (u *cudaUpdater) Download(moments bool) error {
	if !moments && !u.stale {
		return nil
	}
	var m, v [][]float32
	if moments {
		m, v = u.adam.M, u.adam.V
		u.adam.Step = int64(u.dev.AdamSteps())
	}
	if err := u.dev.Download(u.model.Params, m, v); err != nil {
		return err
	}
	if err := checkFinite(u.params); err != nil {
		return err
	}
	u.stale = false
	return nil
}

// Ranker is the device model: validation ranks there, as `rank --device cuda` does.
func (u *cudaUpdater) Ranker() eval.BatchRanker { return u.dev }

func (u *cudaUpdater) Close() error { return u.dev.Close() }
