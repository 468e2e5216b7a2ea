//go:build cgo

package train_test

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/gputest"
	"github.com/rocone/rocone/pkg/gpu/gpumodel"
	. "github.com/rocone/rocone/pkg/train"
)

// TestProfileOnEmulator runs train's device profile end to end on the launch emulator:
// the Markdown and CSV tables are written, hold the update's kernels with their work
// and times, and the profiled run's train log is the unprofiled run's, bit for bit.
func TestProfileOnEmulator(t *testing.T) {
	train, valid := Files(t)
	dir := t.TempDir()
	cfg := TinyConfig("rocone")
	cfg.Steps = 9
	plain := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "a.arrow"), Log: filepath.Join(dir, "a-log.arrow"),
		Device: gpumodel.TrainDevice(gputest.Emulator(t))}
	RunT(t, cfg, plain)
	md := filepath.Join(dir, "profile.md")
	profiled := Options{Train: train, Valid: valid, Checkpoint: filepath.Join(dir, "b.arrow"), Log: filepath.Join(dir, "b-log.arrow"),
		Device: gpumodel.TrainDevice(gputest.Emulator(t)), Profile: ProfileOptions{Path: md, From: 4, Steps: 3, Command: "train --profile profile.md"}}
	RunT(t, cfg, profiled)
	if !SameRows(LogCurves(t, plain.Log), LogCurves(t, profiled.Log)) {
		t.Error("the profiled run's train log differs from the unprofiled run's")
	}

	text, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"# Device profile: rocone d=8, batch 16, 4 negatives", "CPU launch emulator", "Peaks: memory unknown",
		"Window: steps 4–6 (3 steps)", "Command: `train --profile profile.md`", "| `distance_fwd_etab` |", "| `adam_multi_vec4` |",
		"| **all kernels** |", "Wall time per step in the window:", "Wall time per step without profiling (steps 1–3)",
		"## The device's idle time between launches", "| after | before | gaps/step |", "| `upload` |"} {
		if !strings.Contains(string(text), s) {
			t.Errorf("no %q in %s:\n%s", s, md, text)
		}
	}

	f, err := os.Open(ProfileCSV(md))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	get := func(row []string, c string) float64 {
		v, err := strconv.ParseFloat(row[col[c]], 64)
		if err != nil {
			t.Fatalf("%s of %s: %v", c, row[0], err)
		}
		return v
	}
	var launches, ms, total, wall float64
	kernels := map[string]bool{}
	for _, row := range rows[1:] {
		switch row[0] {
		case "all kernels":
			total = get(row, "ms_per_step")
			if l := get(row, "launches_per_step"); !(math.Abs(l-launches) <= 0.005*float64(len(rows))) { // rounded to 2 decimals
				t.Errorf("all kernels: %v launches per step, the rows sum to %v", l, launches)
			}
		case "wall":
			wall = get(row, "ms_per_step")
		default:
			kernels[row[0]] = true
			launches += get(row, "launches_per_step")
			ms += get(row, "ms_per_step")
			if get(row, "bytes_per_step") <= 0 || get(row, "ms_per_step") < 0 {
				t.Errorf("kernel %s: %v", row[0], row)
			}
		}
	}
	for _, k := range []string{"distance_fwd_etab", "distance_bwd_q_etab", "distance_qtab", "gemm_nt", "loss_head_fwd_terms", "loss_head_bwd", "adam_multi_vec4", "gather_rows4", "rows_sum_csr4"} {
		if !kernels[k] {
			t.Errorf("no %s in the profile (%v)", k, kernels)
		}
	}
	// The candidates' entity gradient is the per-pair rows summed by rows_sum_csr4; the CSR
	// kernel is for the bench alone.
	if kernels["distance_bwd_ent_csr_tab"] {
		t.Errorf("distance_bwd_ent_csr_tab in the profile: the default is the per-pair rows")
	}
	if launches < 20 || total <= 0 || total > wall || !(math.Abs(ms-total) <= 1e-3*total+1e-5*float64(len(rows))) {
		t.Errorf("%v launches per step, kernels %v ms (rows sum to %v), wall %v ms", launches, total, ms, wall)
	}
}

// TestProfileErrors: a profile needs a device, and a window within the run.
func TestProfileErrors(t *testing.T) {
	train, _ := Files(t)
	dir := t.TempDir()
	cfg := TinyConfig("rocone")
	cfg.Steps = 6
	for _, c := range []struct {
		name string
		dev  bool
		from int
		n    int
		want string
	}{
		{"cpu", false, 1, 2, "needs --device cuda"},
		{"past the end", true, 4, 3, "must lie within the steps this run trains, 0 to 5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := Options{Train: train, Checkpoint: filepath.Join(dir, c.name+".arrow"),
				Profile: ProfileOptions{Path: filepath.Join(dir, c.name+".md"), From: c.from, Steps: c.n}}
			if c.dev {
				opts.Device = gpumodel.TrainDevice(gputest.Emulator(t))
			}
			_, err := Run(context.Background(), cfg, opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if _, err := os.Stat(opts.Profile.Path); !os.IsNotExist(err) {
				t.Errorf("%s: %v (want no file)", opts.Profile.Path, err)
			}
		})
	}
}
