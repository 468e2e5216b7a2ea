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
		if g.Kernel != w.Kernel || g.Launches != w.Launches || math.Abs(g.Seconds-w.Seconds) > 1e-12 || g.Work != w.Work {
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
