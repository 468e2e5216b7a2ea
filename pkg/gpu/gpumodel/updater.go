package gpumodel

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/train"
)

// TrainDevice returns the train.Device that runs a run's updates on d: the parameters,
// gradients and Adam's moments live there (Model) and the host samples batches while the
// device computes. Checkpoints are the same artifact on either device, so a run resumes
// across devices. TrainDevice(nil) is nil: the CPU. It also profiles (train
// --profile: train.ProfilingDevice).
func TrainDevice(d *gpu.Device) train.Device {
	if d == nil {
		return nil
	}
	return &trainDevice{dev: d}
}

type trainDevice struct {
	dev  *gpu.Device
	prof profiling // train --profile's
}

func (d *trainDevice) Name() string { return d.dev.Name() }

func (d *trainDevice) Updater(h train.Host) (train.Updater, error) {
	m, err := New(d.dev, h.Model, h.Adam.LR)
	if err != nil {
		return nil, err
	}
	return &updater{Host: h, dev: m}, nil
}

// updater runs the updates on the device (Model); the host's Adam only counts the
// device's steps per tensor (its lags), and its moments are filled by Download(true).
type updater struct {
	train.Host
	dev   *Model
	stale bool // the host's parameters lag the device's
}

// Update enqueues the update; the returned wait blocks until the device has done it.
func (u *updater) Update(batch *model.Batch, drop *rand.Rand) (func() (float64, error), error) {
	start := time.Now()
	u.stale = true
	u.Adam.Advance() // the host's count of the device's steps, per tensor
	if err := u.dev.SetAdamLags(u.Adam.Lag); err != nil {
		return nil, err
	}
	pend, err := u.dev.Update(batch, drop)
	u.Timings.Device += time.Since(start).Seconds()
	if err != nil {
		return nil, err
	}
	return func() (float64, error) {
		start := time.Now()
		loss, _, _, err := pend.Wait()
		u.Timings.Device += time.Since(start).Seconds()
		switch {
		case err != nil:
			return 0, err
		case math.IsNaN(loss) || math.IsInf(loss, 0):
			return 0, train.LossError(loss)
		}
		return loss, nil
	}, nil
}

func (u *updater) ResetAdam(lr float64) error { return u.dev.ResetAdam(lr) }

// RestoreAdam copies the host's moments and step count to the device; from scratch
// (no step yet) the device's fresh optimiser is the host's already.
func (u *updater) RestoreAdam() error {
	if u.Adam.Step == 0 {
		return nil
	}
	return u.dev.SetAdam(u.Adam.LR, int(u.Adam.Step), u.Adam.M, u.Adam.V)
}

// Download copies the device's parameters (and, with moments, Adam's moments and step
// count) to the host model, and checks that they are finite. Without moments it is a
// no-op while no update ran since the last download.
func (u *updater) Download(moments bool) error {
	if !moments && !u.stale {
		return nil
	}
	var m, v [][]float32
	if moments {
		m, v = u.Adam.M, u.Adam.V
		u.Adam.Step = int64(u.dev.AdamSteps())
	}
	if err := u.dev.Download(u.Model.Params, m, v); err != nil {
		return err
	}
	if err := train.CheckFinite(u.Params); err != nil {
		return err
	}
	u.stale = false
	return nil
}

// Ranker is the device model: validation ranks there, as `rank --device cuda` does.
func (u *updater) Ranker() eval.BatchRanker { return u.dev }

func (u *updater) Close() error { return u.dev.Close() }
