package train

import (
	"fmt"
	"strings"
	"time"

	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/gpu/roofline"
	"github.com/rocone/rocone/pkg/outfile"
)

// ProfileOptions ask for a device profile of a window of steps (train --profile): every
// launch of the steps' updates timed on the device (package gpu's Profiler), written as
// a roofline table per kernel (package roofline) in Markdown at Path and as CSV beside
// it (ProfileCSV). The window's steps run as usual (results are unchanged); what a step
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

// profiler runs the window: it attaches a gpu.Profiler around the updates of each of
// its steps, times the steps, and writes the table after the last one. Before the window
// it times as many unprofiled steps (not the session's first, which pays for the
// device's warm-up), to show what the profiling itself costs.
type profiler struct {
	opts       ProfileOptions
	dev        *gpu.Device
	p          *gpu.Profiler
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
	cd, ok := opts.Device.(cudaDevice)
	if !ok {
		return nil, fmt.Errorf("--profile %s: profiling times the device's kernels: it needs --device cuda", po.Path)
	}
	if po.Steps < 1 || po.From < first || po.From+po.Steps-1 > last {
		return nil, fmt.Errorf("--profile-steps %d-%d: the window must lie within the steps this run trains, %d to %d",
			po.From, po.From+po.Steps-1, first, last)
	}
	return &profiler{opts: po, dev: cd.dev, p: gpu.NewProfiler(cd.dev, true),
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
		p.dev.Profile(p.p)
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
	p.dev.Profile(nil)
	p.wall += el
	if s < p.opts.From+p.opts.Steps-1 {
		return nil
	}
	p.done = true
	return p.write(t)
}

func (p *profiler) write(t *trainer) error {
	recs, err := p.p.Records()
	if err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	if err := gpu.CheckWork(recs); err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	bw, fp, _ := p.dev.Peaks()
	cfg := t.cfg
	updates := "path, other, path"
	switch {
	case len(t.pools[1].members) == 0:
		updates = "path"
	case len(t.pools[0].members) == 0:
		updates = "other"
	}
	h := roofline.Header{Device: p.dev.Name(), PeakBandwidth: bw, PeakFP32: fp,
		Config: fmt.Sprintf("%s d=%d, batch %d, %d negatives, on %s; updates per step: %s", cfg.Model, cfg.Dim, cfg.Batch, cfg.Negatives, cfg.Dataset, updates),
		Commit: roofline.Commit(), Date: time.Now(), Command: p.opts.Command, FirstStep: p.opts.From, Steps: p.opts.Steps, Wall: p.wall,
		UnprofiledWall: p.base, UnprofiledFrom: p.baseFrom, UnprofiledN: p.opts.From - p.baseFrom}
	rows := roofline.Summarise(recs)
	md, err := outfile.Create(p.opts.Path)
	if err != nil {
		return err
	}
	defer md.Abort()
	csvPath := ProfileCSV(p.opts.Path)
	cf, err := outfile.Create(csvPath)
	if err != nil {
		return err
	}
	defer cf.Abort()
	if err := roofline.WriteMarkdown(md, h, rows); err != nil {
		return err
	}
	if err := roofline.WriteCSV(cf, h, rows); err != nil {
		return err
	}
	if err := md.Commit(); err != nil {
		return err
	}
	if err := cf.Commit(); err != nil {
		return err
	}
	t.printf("profile of steps %d-%d: %d launches; wrote %s and %s\n", p.opts.From, p.opts.From+p.opts.Steps-1, len(recs), p.opts.Path, csvPath)
	return nil
}

// stop detaches the profiler of a run that ended before the window did, and says so.
func (p *profiler) stop(t *trainer) {
	if p == nil || p.done {
		return
	}
	p.dev.Profile(nil)
	t.printf("no profile written: the run stopped before the end of the window (step %d)\n", p.opts.From+p.opts.Steps-1)
}
