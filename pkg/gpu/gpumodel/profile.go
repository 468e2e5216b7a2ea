package gpumodel

import (
	"fmt"
	"io"
	"time"

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
func (d *trainDevice) ProfileStart() {
	if d.prof == nil {
		d.prof = gpu.NewProfiler(d.dev, true)
	}
	d.dev.Profile(d.prof)
}

func (d *trainDevice) ProfileStop() { d.dev.Profile(nil) }

// WriteProfile checks the launches' stated work (gpu.CheckWork) and writes the table with
// the device's peaks, the commit and the date in its header.
func (d *trainDevice) WriteProfile(md, csv io.Writer, run train.ProfileRun) (int, error) {
	if d.prof == nil {
		return 0, fmt.Errorf("no step was profiled")
	}
	recs, err := d.prof.Records()
	if err != nil {
		return 0, err
	}
	if err := gpu.CheckWork(recs); err != nil {
		return 0, err
	}
	bw, fp, _ := d.dev.Peaks()
	h := roofline.Header{Device: d.dev.Name(), PeakBandwidth: bw, PeakFP32: fp, Config: run.Config,
		Commit: roofline.Commit(), Date: time.Now(), Command: run.Command, FirstStep: run.FirstStep, Steps: run.Steps,
		Wall: run.Wall, UnprofiledWall: run.UnprofiledWall, UnprofiledFrom: run.UnprofiledFrom, UnprofiledN: run.UnprofiledN}
	rows := roofline.Summarise(recs)
	if err := roofline.WriteMarkdown(md, h, rows); err != nil {
		return 0, err
	}
	if err := roofline.WriteCSV(csv, h, rows); err != nil {
		return 0, err
	}
	return len(recs), nil
}
