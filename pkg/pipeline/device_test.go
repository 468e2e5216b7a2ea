//go:build cgo

package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"

	"github.com/rocone/rocone/internal/gputest"
	"github.com/rocone/rocone/pkg/artifact"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/device"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/train"
)

// The stages on a device (`embed --device cuda`, `rank --device cuda` with and without
// --top and --cones), here on package emu's emulator, against the same stages on the CPU.

const deviceBatch = 64 // rank's --batch (and embed's shard block) on the device here

// TestRankOnDevice: for every variant, on the device
//   - embed writes the CPU's cones (ids, branches; values to float32 rounding);
//   - rank writes the CPU's rows, with --top the CPU's top-K ids (scores to rounding),
//     with the CPU's --cones the CPU's rows, and with the device's own cones the device's
//     rows bit for bit (the device embeds a query alike in any batch).
func TestRankOnDevice(t *testing.T) {
	dir := t.TempDir()
	queries := fixture(t, dir)
	for _, variant := range model.Variants {
		t.Run(string(variant), func(t *testing.T) {
			ck := filepath.Join(dir, string(variant)+".arrow")
			writeCheckpoint(t, ck, variant, 12, 3)
			dev := device.RankDevice(gputest.Emulator(t))
			ref := compute.Reference[float32]{}
			out := func(name string) string { return filepath.Join(dir, string(variant)+"-"+name+".arrow") }
			run := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			// The CPU.
			run(Embed(EmbedConfig{Checkpoint: ck, Queries: queries, Output: out("cpu-cones"), Kernels: ref}))
			run(Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: out("cpu"), Kernels: ref}))
			run(Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: out("cpu-top"), TopK: 5, Kernels: ref}))
			// The device.
			run(Embed(EmbedConfig{Checkpoint: ck, Queries: queries, Output: out("gpu-cones"), Kernels: ref, Device: dev, ShardBlock: deviceBatch}))
			rankGPU := func(name, cones string, top int) {
				t.Helper()
				run(Rank(RankConfig{Checkpoint: ck, Queries: queries, Cones: cones, Output: out(name), TopK: top, Kernels: ref, Device: dev, Batch: deviceBatch}))
			}
			rankGPU("gpu", "", 0)
			rankGPU("gpu-top", "", 5)
			rankGPU("gpu-cpu-cones", out("cpu-cones"), 0)
			rankGPU("gpu-gpu-cones", out("gpu-cones"), 0)
			rankGPU("gpu-gpu-cones-top", out("gpu-cones"), 5)

			closeCones(t, readCones(t, out("cpu-cones")), readCones(t, out("gpu-cones")))
			cpu, cpuTop := readRanks(t, out("cpu")), readRanks(t, out("cpu-top"))
			sameRanks(t, "rank", cpu, readRanks(t, out("gpu")))
			sameRanks(t, "rank --cones (the CPU's)", cpu, readRanks(t, out("gpu-cpu-cones")))
			sameRanks(t, "rank --cones (the device's)", readRanks(t, out("gpu")), readRanks(t, out("gpu-gpu-cones")))
			sameRanks(t, "rank --top", cpuTop, readRanks(t, out("gpu-top")))
			sameRanks(t, "rank --top --cones (the device's)", cpuTop, readRanks(t, out("gpu-gpu-cones-top")))
			sameTop(t, "rank --top", readTop(t, out("cpu-top")), readTop(t, out("gpu-top")))
			sameTop(t, "rank --top --cones (the device's)", readTop(t, out("cpu-top")), readTop(t, out("gpu-gpu-cones-top")))
		})
	}
}

func readCones(t *testing.T, path string) []artifact.Cone {
	t.Helper()
	_, cs, err := artifact.ReadCones(path)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func readRanks(t *testing.T, path string) []artifact.Rank {
	t.Helper()
	_, rs, err := artifact.ReadRanks(path)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// closeCones: the same rows (query, type, branch) with axes (on the circle) and
// apertures within float32 rounding of each other.
func closeCones(t *testing.T, a, b []artifact.Cone) {
	t.Helper()
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("%d cones from the CPU, %d from the device", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ID != y.ID || x.Type != y.Type || x.Branch != y.Branch || len(x.Axis) != len(y.Axis) || len(x.Aperture) != len(y.Aperture) {
			t.Fatalf("cone %d: CPU query %d (%s) branch %d, device query %d (%s) branch %d", i, x.ID, x.Type, x.Branch, y.ID, y.Type, y.Branch)
		}
		for j := range x.Axis {
			da := math.Abs(math.Remainder(float64(x.Axis[j]-y.Axis[j]), 2*math.Pi))
			dh := math.Abs(float64(x.Aperture[j] - y.Aperture[j]))
			if da > 1e-4 || dh > 1e-4 || math.IsNaN(da) || math.IsNaN(dh) {
				t.Fatalf("query %d branch %d [%d]: CPU (%.7g, %.7g), device (%.7g, %.7g)", x.ID, x.Branch, j, x.Axis[j], x.Aperture[j], y.Axis[j], y.Aperture[j])
			}
		}
	}
}

// sameRanks: the same rows, field for field.
func sameRanks(t *testing.T, what string, a, b []artifact.Rank) {
	t.Helper()
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("%s: %d rows and %d rows", what, len(a), len(b))
	}
	for i := range a {
		if fmt.Sprint(a[i]) != fmt.Sprint(b[i]) {
			t.Fatalf("%s: row %d: %+v against %+v", what, i, a[i], b[i])
		}
	}
}

// topList is a ranks row's top-K columns (artifact.ReadRanks reads the ranks alone).
type topList struct {
	ids    []int32
	scores []float32
}

// readTop reads the top and top_scores columns of a ranks file, row by row.
func readTop(t *testing.T, path string) []topList {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	col := func(name string) int {
		idx := r.Schema().FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("%s: no column %q", path, name)
		}
		return idx[0]
	}
	ti, si := col("top"), col("top_scores")
	var out []topList
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.Record(i)
		if err != nil {
			t.Fatal(err)
		}
		ids, scores := rec.Column(ti).(*array.List), rec.Column(si).(*array.List)
		idv, sv := ids.ListValues().(*array.Int32).Int32Values(), scores.ListValues().(*array.Float32).Float32Values()
		for row := 0; row < int(rec.NumRows()); row++ {
			a, b := ids.ValueOffsets(row)
			c, d := scores.ValueOffsets(row)
			out = append(out, topList{slices.Clone(idv[a:b]), slices.Clone(sv[c:d])})
		}
	}
	return out
}

// sameTop: the same top-K ids, row for row, the scores within float32 rounding.
func sameTop(t *testing.T, what string, cpu, dev []topList) {
	t.Helper()
	if len(cpu) != len(dev) || len(cpu) == 0 {
		t.Fatalf("%s: %d rows on the CPU, %d on the device", what, len(cpu), len(dev))
	}
	for i := range cpu {
		x, y := cpu[i], dev[i]
		if len(x.ids) != 5 || !slices.Equal(x.ids, y.ids) || len(y.scores) != len(x.scores) {
			t.Fatalf("%s: row %d: top %v on the CPU, %v on the device", what, i, x.ids, y.ids)
		}
		for k, s := range x.scores {
			if d := math.Abs(float64(s - y.scores[k])); d > 1e-5*math.Max(1, math.Abs(float64(s))) || math.IsNaN(d) {
				t.Fatalf("%s: row %d: top scores %v on the CPU, %v on the device", what, i, x.scores, y.scores)
			}
		}
	}
}

var errInjected = errors.New("injected launch failure")

// failingDriver fails every kernel launch after the first ok ones (ok < 0: never) and
// counts the launches it let through.
type failingDriver struct {
	gpu.Driver
	ok       int64
	launched atomic.Int64
}

func (f *failingDriver) Launch(kernel string, grid, block [3]int, args []uint64) error {
	if f.ok >= 0 && f.launched.Load() >= f.ok {
		return errInjected
	}
	f.launched.Add(1)
	return f.Driver.Launch(kernel, grid, block, args)
}

// TestDeviceErrorFailsStage: a device error during embed, rank, rank --top or rank
// --cones on the device, at the first launch or halfway through the run, ends the stage
// with that error (errors.Is finds it) and leaves no output; the same run on a device that
// does not fail writes its output (the control, which also counts the run's launches).
func TestDeviceErrorFailsStage(t *testing.T) {
	dir := t.TempDir()
	queries := fixture(t, dir)
	ck := filepath.Join(dir, "cone.arrow")
	writeCheckpoint(t, ck, model.ConE, 12, 3)
	cones := filepath.Join(dir, "cones.arrow")
	ref := compute.Reference[float32]{}
	if err := Embed(EmbedConfig{Checkpoint: ck, Queries: queries, Output: cones, Kernels: ref}); err != nil {
		t.Fatal(err)
	}
	const batch = 32
	stages := []struct {
		name string
		run  func(dev *gpu.Device, out string) error
	}{
		{"embed", func(dev *gpu.Device, out string) error {
			return Embed(EmbedConfig{Checkpoint: ck, Queries: queries, Output: out, Kernels: ref, Device: device.RankDevice(dev), ShardBlock: batch})
		}},
		{"rank", func(dev *gpu.Device, out string) error {
			return Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: out, Kernels: ref, Device: device.RankDevice(dev), Batch: batch})
		}},
		{"rank --top", func(dev *gpu.Device, out string) error {
			return Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: out, TopK: 3, Kernels: ref, Device: device.RankDevice(dev), Batch: batch})
		}},
		{"rank --cones", func(dev *gpu.Device, out string) error {
			return Rank(RankConfig{Checkpoint: ck, Queries: queries, Cones: cones, Output: out, Kernels: ref, Device: device.RankDevice(dev), Batch: batch})
		}},
	}
	for _, st := range stages {
		t.Run(st.name, func(t *testing.T) {
			control := &failingDriver{Driver: gputest.EmulatorDriver(t), ok: -1}
			out := filepath.Join(t.TempDir(), "out.arrow")
			if err := st.run(gpu.NewDevice(control), out); err != nil {
				t.Fatalf("control run: %v", err)
			}
			if _, err := os.Stat(out); err != nil {
				t.Fatalf("control run: %v", err)
			}
			total := control.launched.Load()
			if total < 10 {
				t.Fatalf("the control run launched %d kernels", total)
			}
			for _, ok := range []int64{0, total / 2} {
				f := &failingDriver{Driver: gputest.EmulatorDriver(t), ok: ok}
				out := filepath.Join(t.TempDir(), "out.arrow")
				err := st.run(gpu.NewDevice(f), out)
				if !errors.Is(err, errInjected) {
					t.Fatalf("failing after %d of %d launches: error %v, want the device's", ok, total, err)
				}
				t.Logf("failing after %d of %d launches: %v", ok, total, err)
				if !strings.Contains(err.Error(), "injected launch failure") {
					t.Errorf("error %q does not carry the device's message", err)
				}
				if _, statErr := os.Stat(out); !errors.Is(statErr, os.ErrNotExist) {
					t.Errorf("%s exists after a failed run (%v)", out, statErr)
				}
				if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
					t.Errorf("the output folder holds %d entries after a failed run, want none", len(entries))
				}
			}
		})
	}
}

// TestRankProfileOnEmulator: rank --profile on the launch emulator writes the roofline
// table per batch (Markdown and CSV) with rank's kernels, and the ranks are the
// unprofiled run's; without a device it is refused.
func TestRankProfileOnEmulator(t *testing.T) {
	dir := t.TempDir()
	queries := fixture(t, dir)
	ck := filepath.Join(dir, "rocone.arrow")
	writeCheckpoint(t, ck, model.RoConE, 12, 3)
	ref := compute.Reference[float32]{}
	dev := device.RankDevice(gputest.Emulator(t))
	plain, profiled := filepath.Join(dir, "plain.arrow"), filepath.Join(dir, "profiled.arrow")
	md := filepath.Join(dir, "rank-profile.md")
	if err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: plain, Kernels: ref, Device: dev, Batch: deviceBatch}); err != nil {
		t.Fatal(err)
	}
	if err := Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: profiled, Kernels: ref, Device: dev, Batch: deviceBatch,
		Profile: md, ProfileCommand: "rank --profile rank-profile.md"}); err != nil {
		t.Fatal(err)
	}
	sameRanks(t, "rank --profile", readRanks(t, plain), readRanks(t, profiled))
	text, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"# Device profile: rank rocone d=12", "in batches of 64", "Window: batches 0–", "Command: `rank --profile rank-profile.md`",
		"| kernel | launches/batch | ms/batch |", "| `score_all` |", "| `filtered_ranks` |", "| **all kernels** |", "Wall time per batch in the window:"} {
		if !strings.Contains(string(text), s) {
			t.Errorf("no %q in %s:\n%s", s, md, text)
		}
	}
	csv, err := os.ReadFile(train.ProfileCSV(md))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(csv), "kernel,launches_per_batch,ms_per_batch,") || !strings.Contains(string(csv), "\nscore_all,") {
		t.Errorf("%s:\n%s", train.ProfileCSV(md), csv)
	}
	err = Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: filepath.Join(dir, "cpu.arrow"), Kernels: ref, Profile: filepath.Join(dir, "p.md")})
	if err == nil || !strings.Contains(err.Error(), "needs --device cuda") {
		t.Errorf("rank --profile on the CPU: %v", err)
	}
	// A profile over an input is refused before any work, the input left alone.
	before, _ := os.ReadFile(queries)
	err = Rank(RankConfig{Checkpoint: ck, Queries: queries, Output: filepath.Join(dir, "x.arrow"), Kernels: ref, Device: dev, Profile: queries})
	if after, _ := os.ReadFile(queries); err == nil || !strings.Contains(err.Error(), "same file") || !bytes.Equal(before, after) {
		t.Errorf("rank --profile over the queries: %v", err)
	}
}
