package roofline

import (
	"encoding/csv"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rocone/rocone/pkg/gpu"
)

// records: over a 2-step window, "copy" moves 1 GB in 1 ms per step (two launches) and
// "gemm" does 20 GFLOP on 1 MB in 2 ms per step.
func records() []gpu.Record {
	var recs []gpu.Record
	for s := 0; s < 2; s++ {
		recs = append(recs,
			gpu.Record{Kernel: "copy", Work: gpu.Work{Bytes: 5e8}, Seconds: 0.5e-3},
			gpu.Record{Kernel: "gemm", Work: gpu.Work{Bytes: 1e6, FLOPs: 2e10}, Seconds: 2e-3},
			gpu.Record{Kernel: "copy", Work: gpu.Work{Bytes: 5e8}, Seconds: 0.5e-3})
	}
	return recs
}

func header() Header {
	return Header{Device: "test GPU", PeakBandwidth: 2e12, PeakFP32: 40e12, Config: "rocone d=4", Commit: "abc",
		Date: time.Date(2025, 1, 2, 3, 4, 0, 0, time.UTC), FirstStep: 5, Steps: 2, Wall: 8e-3}
}

// TestSummarise: per-kernel totals, the longest first.
func TestSummarise(t *testing.T) {
	rows := Summarise(records())
	want := []Row{{"gemm", 2, 4e-3, gpu.Work{Bytes: 2e6, FLOPs: 4e10}}, {"copy", 4, 2e-3, gpu.Work{Bytes: 2e9}}}
	if len(rows) != len(want) {
		t.Fatalf("rows %+v", rows)
	}
	for i := range want {
		g, w := rows[i], want[i]
		if g.Kernel != w.Kernel || g.Launches != w.Launches || !(math.Abs(g.Seconds-w.Seconds) <= 1e-12) || g.Work != w.Work {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
		}
	}
}

// TestCSV: the derived columns, counted by hand. copy: 1 GB/step in 1 ms/step = 1000
// GB/s = 50 % of 2 TB/s, 0 FLOP/byte: memory-bound; gemm: 20 GFLOP in 2 ms = 10 TFLOP/s
// = 25 % of 40, 1 MB in 2 ms = 0.5 GB/s, 2e4 FLOP/byte, above the ridge (20):
// compute-bound; 3 of the 4 ms of a step in kernels.
func TestCSV(t *testing.T) {
	var b strings.Builder
	if err := WriteCSV(&b, header(), Summarise(records())); err != nil {
		t.Fatal(err)
	}
	var body []string
	for _, l := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(l, "#") {
			body = append(body, l)
		}
	}
	recs, err := csv.NewReader(strings.NewReader(strings.Join(body, "\n"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		CSVHeader("step"),
		{"gemm", "1.00", "2.000000", "0.500000", "1000000", "20000000000", "0.500", "10.000000", "0.025", "25.000", "20000.0000", "compute"},
		{"copy", "2.00", "1.000000", "0.250000", "1000000000", "0", "1000.000", "0.000000", "50.000", "0.000", "0.0000", "memory"},
		{"all kernels", "3.00", "3.000000", "0.750000", "1001000000", "20000000000", "333.667", "6.666667", "16.683", "16.667", "19.9800", "memory"},
		{"wall", "", "4.000000", "1", "", "", "", "", "", "", "", ""},
	}
	if len(recs) != len(want) {
		t.Fatalf("CSV rows:\n%v", recs)
	}
	for i := range want {
		if strings.Join(recs[i], ",") != strings.Join(want[i], ",") {
			t.Errorf("row %d:\n got %v\nwant %v", i, recs[i], want[i])
		}
	}
	if !strings.Contains(b.String(), "# peak_bandwidth_bytes_per_s: 2000000000000\n") || !strings.Contains(b.String(), "# commit: abc\n") {
		t.Errorf("header:\n%s", b.String())
	}
}

// TestMarkdownUnknownPeaks: without peaks (the emulator) the percentages and the bound
// are "–", and the header says the peaks are unknown; the wall-time line is there.
func TestMarkdownUnknownPeaks(t *testing.T) {
	h := header()
	h.PeakBandwidth, h.PeakFP32 = 0, 0
	var b strings.Builder
	if err := WriteMarkdown(&b, h, Summarise(records())); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"Peaks: memory unknown", "| `copy` | 2.0 | 1.000 | 25.0 | 1000.00 | 0.000 | 1000 | 0.000 | – | – | 0.00 | – |",
		"| **all kernels** | 3.0 | 3.000 |", "Wall time per step in the window: 4.000 ms; kernels (and device memsets and copies): 3.000 ms, 75.0 %; the rest, 1.000 ms"} {
		if !strings.Contains(out, s) {
			t.Errorf("no %q in\n%s", s, out)
		}
	}
}

// TestIdle: the idle times summed by where they fell, the most first; unknown ones (NaN:
// the first record of a window) left out; the Markdown's figures counted by hand.
func TestIdle(t *testing.T) {
	nan := math.NaN()
	rec := func(k string, idle float64) gpu.Record {
		return gpu.Record{Kernel: k, Work: gpu.Work{Bytes: 4}, Idle: idle}
	}
	recs := []gpu.Record{
		rec("upload", nan), rec("gemm", 40e-6), rec("adam", 2e-6), rec("upload", 10e-6), rec("gemm", 60e-6), rec("adam", 4e-6),
	}
	rows, gaps := Idle(recs)
	want := []IdleRow{{"upload", "gemm", 2, 100e-6, 60e-6}, {"adam", "upload", 1, 10e-6, 10e-6}, {"gemm", "adam", 2, 6e-6, 4e-6}}
	if len(rows) != len(want) || len(gaps) != 5 {
		t.Fatalf("rows %+v, %d gaps", rows, len(gaps))
	}
	for i := range want {
		g, w := rows[i], want[i]
		if g.After != w.After || g.Before != w.Before || g.Gaps != w.Gaps || !(math.Abs(g.Seconds-w.Seconds) <= 1e-12) || g.Longest != w.Longest {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
		}
	}
	var b strings.Builder
	h := header() // 2 steps
	if err := WriteIdle(&b, h, recs, 2); err != nil {
		t.Fatal(err)
	}
	// 116 µs over 2 steps; 5 gaps: 2, 4, 10, 40, 60 µs: median 10, 90th percentile 60.
	for _, s := range []string{"waited 0.058 ms per step, over 2.5 gaps per step (median 10.0 µs, 90th percentile 60.0 µs, longest 60.0 µs)",
		"| `upload` | `gemm` | 1.0 | 0.050 | 50.0 | 60.0 |", "| `adam` | `upload` | 0.5 | 0.005 | 10.0 | 10.0 |"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("no %q in\n%s", s, b.String())
		}
	}
	if strings.Contains(b.String(), "| `gemm` | `adam` |") {
		t.Errorf("more rows than the top 2:\n%s", b.String())
	}
	b.Reset()
	untimed := records()
	for i := range untimed {
		untimed[i].Idle = nan
	}
	if err := WriteIdle(&b, h, untimed, 5); err != nil || b.Len() != 0 {
		t.Errorf("no idle times known: %q, %v; want nothing written", b.String(), err)
	}
}
