package gpumodel

import (
	"fmt"
	"io"
	"time"

	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/gpu/roofline"
	"github.com/rocone/rocone/pkg/train"
)

// The trainDevice is a train.ProfilingDevice: train --profile times every launch of a
// window's updates with CUDA events (gpu.Profiler) and writes them as a roofline table
// per kernel (package roofline).
var _ train.ProfilingDevice = (*trainDevice)(nil)

func (d *trainDevice) Sync() error { return d.dev.Sync() }

// ProfileStart attaches the profiler, made on the first call; the launches of every
// window step add to it.
func (d *trainDevice) ProfileStart() { d.prof.start(d.dev) }

func (d *trainDevice) ProfileStop() { d.prof.stop(d.dev) }

// WriteProfile checks the launches' stated work (gpu.CheckWork) and writes the table with
// the device's peaks, the commit and the date in its header.
func (d *trainDevice) WriteProfile(md, csv io.Writer, run train.ProfileRun) (int, error) {
	return d.prof.write(d.dev, md, csv, roofline.Header{Config: run.Config, Command: run.Command, FirstStep: run.FirstStep,
		Steps: run.Steps, Wall: run.Wall, UnprofiledWall: run.UnprofiledWall, UnprofiledFrom: run.UnprofiledFrom,
		UnprofiledN: run.UnprofiledN})
}

// The Model is an eval.ProfilingRanker (rank --profile times every launch of its batches)
// and an eval.PipelinedRanker (EnqueueRankBatch).
var _ eval.PipelinedRanker = (*Model)(nil)

// The Model is an eval.ProfilingRanker.
var _ eval.ProfilingRanker = (*Model)(nil)

// Sync waits until the device has done the work enqueued so far.
func (m *Model) Sync() error { return m.dev.Sync() }

// ProfileStart times every launch of the Model's device from here, until ProfileStop.
func (m *Model) ProfileStart() { m.prof.start(m.dev) }

func (m *Model) ProfileStop() { m.prof.stop(m.dev) }

// WriteProfile writes the launches timed so far as a roofline table per kernel, per batch.
func (m *Model) WriteProfile(md, csv io.Writer, run eval.ProfileRun) (int, error) {
	return m.prof.write(m.dev, md, csv, roofline.Header{Config: run.Config, Command: run.Command, Steps: run.Batches,
		Wall: run.Wall, Unit: "batch"})
}

// profiling is a device's profiler for train --profile and rank --profile: made on the
// first start, attached between start and stop.
type profiling struct{ p *gpu.Profiler }

func (pr *profiling) start(dev *gpu.Device) {
	if pr.p == nil {
		pr.p = gpu.NewProfiler(dev, true)
	}
	dev.Profile(pr.p)
}

func (pr *profiling) stop(dev *gpu.Device) { dev.Profile(nil) }

// write checks the launches' stated work (gpu.CheckWork) and writes the table, h
// completed with the device, its peaks, the commit and the date.
func (pr *profiling) write(dev *gpu.Device, md, csv io.Writer, h roofline.Header) (int, error) {
	if pr.p == nil {
		return 0, fmt.Errorf("nothing was profiled")
	}
	recs, err := pr.p.Records()
	if err != nil {
		return 0, err
	}
	if err := gpu.CheckWork(recs); err != nil {
		return 0, err
	}
	h.PeakBandwidth, h.PeakFP32, _ = dev.Peaks()
	h.Device, h.Commit, h.Date = dev.Name(), roofline.Commit(), time.Now()
	rows := roofline.Summarise(recs)
	if err := roofline.WriteMarkdown(md, h, rows); err != nil {
		return 0, err
	}
	if err := roofline.WriteIdle(md, h, recs, 12); err != nil {
		return 0, err
	}
	if err := roofline.WriteCSV(csv, h, rows); err != nil {
		return 0, err
	}
	return len(recs), nil
}
