package train

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rocone/rocone/pkg/outfile"
)

// ProfileOptions ask for a device profile of a window of steps (train --profile): every
// launch of the steps' updates timed on the device, written as
// a roofline table per kernel in Markdown at Path and as CSV beside it (ProfileCSV), by a
// ProfilingDevice. The window's steps run as usual (results are unchanged); what a step
// does after its updates (validation, checkpoints) is left out of the profile.
type ProfileOptions struct {
	Path    string // the Markdown table; "" for no profile
	From    int    // the window's first step
	Steps   int    // its length
	Command string // the command line, for the table's header
}

// ProfileCSV is the CSV written beside the Markdown table at path: its name with .csv
// for .md (or with .csv added).
func ProfileCSV(path string) string { return strings.TrimSuffix(path, ".md") + ".csv" }

// ParseProfileSteps parses a window FROM-TO (steps, both included) for --profile-steps.
func ParseProfileSteps(s string) (from, steps int, err error) {
	var to int
	if n, e := fmt.Sscanf(s, "%d-%d", &from, &to); e != nil || n != 2 || fmt.Sprintf("%d-%d", from, to) != s {
		return 0, 0, fmt.Errorf("--profile-steps %q: want FROM-TO, two step numbers (e.g. 5-14)", s)
	}
	if from < 0 || to < from {
		return 0, 0, fmt.Errorf("--profile-steps %q: want 0 ≤ FROM ≤ TO", s)
	}
	return from, to - from + 1, nil
}

// A ProfilingDevice is a Device whose kernels can be timed launch by launch (train
// --profile); package gpumodel's TrainDevice is one.
type ProfilingDevice interface {
	Device
	// Sync waits until the device has done the work enqueued so far.
	Sync() error
	// ProfileStart times every launch from here, until ProfileStop.
	ProfileStart()
	ProfileStop()
	// WriteProfile writes the launches timed so far as a roofline table per kernel:
	// Markdown to md and CSV to csv. It returns how many launches there were.
	WriteProfile(md, csv io.Writer, run ProfileRun) (launches int, err error)
}

// ProfileRun is what the trainer knows of a profiled window, for the table's header.
type ProfileRun struct {
	Config    string // the model, its sizes, the dataset and the updates per step
	Command   string
	FirstStep int
	Steps     int
	Wall      float64 // seconds the window's steps took
	// Unprofiled steps timed before the window, to show what profiling costs.
	UnprofiledFrom, UnprofiledN int
	UnprofiledWall              float64
}

// profiler runs the window: it profiles the updates of each of its steps, times the steps, and writes the table after the last one. Before the window
// it times as many unprofiled steps (not the session's first, which pays for the
// device's warm-up), to show what the profiling itself costs.
type profiler struct {
	opts       ProfileOptions
	dev        ProfilingDevice
	baseFrom   int // unprofiled steps baseFrom … opts.From−1
	wall, base float64
	start      time.Time
	done       bool
}

// newProfiler checks the window against the run (steps first … last) and the device.
func newProfiler(opts Options, first, last int) (*profiler, error) {
	po := opts.Profile
	if po.Path == "" {
		return nil, nil
	}
	dev, ok := opts.Device.(ProfilingDevice)
	if !ok {
		return nil, fmt.Errorf("--profile %s: profiling times the device's kernels: it needs --device cuda", po.Path)
	}
	if po.Steps < 1 || po.From < first || po.From+po.Steps-1 > last {
		return nil, fmt.Errorf("--profile-steps %d-%d: the window must lie within the steps this run trains, %d to %d",
			po.From, po.From+po.Steps-1, first, last)
	}
	return &profiler{opts: po, dev: dev,
		baseFrom: max(first+1, po.From-po.Steps)}, nil
}

// begin starts step s: a window step is profiled from here, a step of the baseline only
// timed. The device is idle at a step's start (the previous step read its losses); Sync
// makes sure.
func (p *profiler) begin(s int) error {
	if p == nil || s < p.baseFrom || s >= p.opts.From+p.opts.Steps {
		return nil
	}
	if err := p.dev.Sync(); err != nil {
		return err
	}
	if s >= p.opts.From {
		p.dev.ProfileStart()
	}
	p.start = time.Now()
	return nil
}

// end ends step s once its losses are read; after the window's last step it writes the
// table.
func (p *profiler) end(s int, t *trainer) error {
	if p == nil || s < p.baseFrom || s >= p.opts.From+p.opts.Steps {
		return nil
	}
	el := time.Since(p.start).Seconds()
	if s < p.opts.From {
		p.base += el
		return nil
	}
	p.dev.ProfileStop()
	p.wall += el
	if s < p.opts.From+p.opts.Steps-1 {
		return nil
	}
	p.done = true
	return p.write(t)
}

func (p *profiler) write(t *trainer) error {
	cfg := t.cfg
	updates := "path, other, path"
	switch {
	case len(t.pools[1].members) == 0:
		updates = "path"
	case len(t.pools[0].members) == 0:
		updates = "other"
	}
	run := ProfileRun{
		Config:  fmt.Sprintf("%s d=%d, batch %d, %d negatives, on %s; updates per step: %s", cfg.Model, cfg.Dim, cfg.Batch, cfg.Negatives, cfg.Dataset, updates),
		Command: p.opts.Command, FirstStep: p.opts.From, Steps: p.opts.Steps, Wall: p.wall,
		UnprofiledWall: p.base, UnprofiledFrom: p.baseFrom, UnprofiledN: p.opts.From - p.baseFrom}
	csvPath := ProfileCSV(p.opts.Path)
	var launches int
	err := outfile.WriteAll([]string{p.opts.Path, csvPath}, func(ws []io.Writer) (err error) {
		if launches, err = p.dev.WriteProfile(ws[0], ws[1], run); err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	t.printf("profile of steps %d-%d: %d launches; wrote %s and %s\n", p.opts.From, p.opts.From+p.opts.Steps-1, launches, p.opts.Path, csvPath)
	return nil
}

// stop detaches the profiler of a run that ended before the window did, and says so.
func (p *profiler) stop(t *trainer) {
	if p == nil || p.done {
		return
	}
	p.dev.ProfileStop()
	t.printf("no profile written: the run stopped before the end of the window (step %d)\n", p.opts.From+p.opts.Steps-1)
}
