// Package roofline turns a device profile (package gpu's Records: each launch with its
// work and its time on the device) into a roofline table per kernel: how often it runs
// per step, how long it takes, what it moves and computes, the rates it achieves and how
// far they are from the device's peaks. train --profile writes it as Markdown and CSV
// (docs/gpu.md explains the columns).
package roofline

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rocone/rocone/pkg/gpu"
)

// Header is what a table is of: the device, its peaks, the run and the window.
type Header struct {
	Device         string
	PeakBandwidth  float64 // bytes/s; 0: unknown (the emulator)
	PeakFP32       float64 // FLOP/s; 0: unknown
	Config         string  // the training configuration, in words
	Commit         string  // Commit()
	Date           time.Time
	Command        string // the command line that made it
	FirstStep      int    // the window: steps FirstStep … FirstStep+Steps−1
	Steps          int
	Wall           float64 // seconds of wall time over the window's steps, profiled
	UnprofiledWall float64 // seconds of wall time over UnprofiledSteps steps before the window, not profiled; 0: none
	UnprofiledFrom int     // the first of them
	UnprofiledN    int
	// Unit is what a window counts: "step" (train --profile; "" means it) or "batch"
	// (rank --profile); the table's per-unit columns are named after it.
	Unit string
}

// plural is a unit's plural ("steps", "batches").
func plural(u string) string {
	if strings.HasSuffix(u, "ch") {
		return u + "es"
	}
	return u + "s"
}

// unit is h.Unit, "step" by default.
func (h Header) unit() string {
	if h.Unit == "" {
		return "step"
	}
	return h.Unit
}

// Row is one kernel's totals over the window.
type Row struct {
	Kernel   string
	Launches int
	Seconds  float64 // NaN when untimed
	Work     gpu.Work
}

// Summarise totals the records per kernel, the longest first (by bytes when untimed,
// then by name).
func Summarise(recs []gpu.Record) []Row {
	at := map[string]int{}
	var rows []Row
	for _, r := range recs {
		i, ok := at[r.Kernel]
		if !ok {
			i = len(rows)
			at[r.Kernel] = i
			rows = append(rows, Row{Kernel: r.Kernel})
		}
		rows[i].Launches++
		rows[i].Seconds += r.Seconds
		rows[i].Work = rows[i].Work.Add(r.Work)
	}
	slices.SortStableFunc(rows, func(a, b Row) int {
		if c := cmp.Compare(b.Seconds, a.Seconds); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Work.Bytes, a.Work.Bytes); c != 0 {
			return c
		}
		return strings.Compare(a.Kernel, b.Kernel)
	})
	return rows
}

// Commit is the build's VCS revision (debug.ReadBuildInfo's vcs.revision, "+modified"
// when the tree had changes), or "unknown" (a test binary, a build outside git).
func Commit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, mod := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			mod = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if mod {
		rev += "+modified"
	}
	return rev
}

// line is one row of the table, its derived columns computed once for both formats.
type line struct {
	kernel                string
	launchesPerStep       float64
	msPerStep, share      float64
	bytesPerStep, flopsPS float64
	gbs, tflops           float64
	pctBW, pctFP32        float64
	intensity             float64
	bound                 string
}

func derive(h Header, r Row) line {
	steps := float64(max(h.Steps, 1))
	l := line{kernel: r.Kernel, launchesPerStep: float64(r.Launches) / steps,
		msPerStep: 1e3 * r.Seconds / steps, bytesPerStep: float64(r.Work.Bytes) / steps, flopsPS: float64(r.Work.FLOPs) / steps}
	l.share = r.Seconds / h.Wall
	l.gbs = float64(r.Work.Bytes) / r.Seconds / 1e9
	l.tflops = float64(r.Work.FLOPs) / r.Seconds / 1e12
	l.pctBW, l.pctFP32 = math.NaN(), math.NaN()
	if h.PeakBandwidth > 0 {
		l.pctBW = 100 * l.gbs * 1e9 / h.PeakBandwidth
	}
	if h.PeakFP32 > 0 {
		l.pctFP32 = 100 * l.tflops * 1e12 / h.PeakFP32
	}
	l.intensity = float64(r.Work.FLOPs) / float64(r.Work.Bytes)
	l.bound = "–"
	if h.PeakBandwidth > 0 && h.PeakFP32 > 0 && r.Work.Bytes > 0 {
		l.bound = "memory"
		if l.intensity >= h.PeakFP32/h.PeakBandwidth {
			l.bound = "compute"
		}
	}
	return l
}

func (h Header) lines(rows []Row) (ls []line, total line) {
	var sum Row
	sum.Kernel = "all kernels"
	for _, r := range rows {
		ls = append(ls, derive(h, r))
		sum.Launches += r.Launches
		sum.Seconds += r.Seconds
		sum.Work = sum.Work.Add(r.Work)
	}
	return ls, derive(h, sum)
}

// num formats x with prec decimals, "–" when it is not a finite number.
func num(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

func peak(x float64, unit float64, name string) string {
	if x <= 0 {
		return "unknown (the driver states none)"
	}
	return num(x/unit, 1) + " " + name
}

// WriteMarkdown writes the table with its header: device, peaks, configuration, commit,
// date and command, then a row per kernel, the total, and the step's wall time against
// the kernels' (the difference is the time the device waited for the host).
func WriteMarkdown(w io.Writer, h Header, rows []Row) error {
	var b strings.Builder
	steps := float64(max(h.Steps, 1))
	fmt.Fprintf(&b, "# Device profile: %s\n\n", h.Config)
	fmt.Fprintf(&b, "- Device: %s\n", h.Device)
	fmt.Fprintf(&b, "- Peaks: memory %s, FP32 %s", peak(h.PeakBandwidth, 1e9, "GB/s"), peak(h.PeakFP32, 1e12, "TFLOP/s"))
	if h.PeakBandwidth > 0 && h.PeakFP32 > 0 {
		fmt.Fprintf(&b, "; ridge point %.1f FLOP/byte", h.PeakFP32/h.PeakBandwidth)
	}
	fmt.Fprintf(&b, "\n- Commit: %s\n- Date: %s\n", h.Commit, h.Date.UTC().Format("2006-01-02 15:04 UTC"))
	if h.Command != "" {
		fmt.Fprintf(&b, "- Command: `%s`\n", h.Command)
	}
	u := h.unit()
	us := plural(u)
	fmt.Fprintf(&b, "- Window: %s %d–%d (%d %s)", us, h.FirstStep, h.FirstStep+h.Steps-1, h.Steps, us)
	if h.FirstStep > 0 {
		fmt.Fprintf(&b, ", after %d unprofiled", h.FirstStep)
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "| kernel | launches/%[1]s | ms/%[1]s | %% of %[1]s | MB/%[1]s | GFLOP/%[1]s | GB/s | TFLOP/s | %% peak BW | %% peak FP32 | FLOP/byte | bound |\n", u)
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	ls, total := h.lines(rows)
	row := func(l line, bold bool) {
		k := "`" + l.kernel + "`"
		if bold {
			k = "**" + l.kernel + "**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", k, num(l.launchesPerStep, 1),
			num(l.msPerStep, 3), num(100*l.share, 1), num(l.bytesPerStep/1e6, 2), num(l.flopsPS/1e9, 3), num(l.gbs, 0),
			num(l.tflops, 3), num(l.pctBW, 1), num(l.pctFP32, 1), num(l.intensity, 2), l.bound)
	}
	for _, l := range ls {
		row(l, false)
	}
	row(total, true)
	wallMS := 1e3 * h.Wall / steps
	fmt.Fprintf(&b, "\nWall time per %s in the window: %s ms; kernels (and device memsets and copies): %s ms, %s %%; the rest, %s ms, is time the device waited for the host (launch overhead, host work, synchronisation) plus the profile's own events.\n",
		u, num(wallMS, 3), num(total.msPerStep, 3), num(100*total.share, 1), num(wallMS-total.msPerStep, 3))
	if h.UnprofiledN > 0 {
		fmt.Fprintf(&b, "Wall time per %s without profiling (%s %d–%d): %s ms.\n", u, us, h.UnprofiledFrom, h.UnprofiledFrom+h.UnprofiledN-1,
			num(1e3*h.UnprofiledWall/float64(h.UnprofiledN), 3))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// CSVHeader is the CSV's column row for a unit ("step" or "batch": Header.Unit).
func CSVHeader(unit string) []string {
	return []string{"kernel", "launches_per_" + unit, "ms_per_" + unit, "share_of_" + unit, "bytes_per_" + unit, "flops_per_" + unit,
		"gb_per_s", "tflop_per_s", "pct_peak_bandwidth", "pct_peak_fp32", "flop_per_byte", "bound"}
}

// WriteCSV writes the same table as CSV: the header as '#' comment lines, the columns
// of CSVHeader, a row per kernel and the total ("all kernels"), then a row "wall" with
// the wall time per step (or batch). Unknown values are empty.
func WriteCSV(w io.Writer, h Header, rows []Row) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# device: %s\n# peak_bandwidth_bytes_per_s: %s\n# peak_fp32_flop_per_s: %s\n# config: %s\n# commit: %s\n# date: %s\n# %ss: %d-%d\n",
		h.Device, csvPeak(h.PeakBandwidth), csvPeak(h.PeakFP32), h.Config, h.Commit, h.Date.UTC().Format(time.RFC3339),
		h.unit(), h.FirstStep, h.FirstStep+h.Steps-1)
	cw := csv.NewWriter(&b)
	cw.Write(CSVHeader(h.unit()))
	ls, total := h.lines(rows)
	for _, l := range append(ls, total) {
		cw.Write([]string{l.kernel, csvNum(l.launchesPerStep, 2), csvNum(l.msPerStep, 6), csvNum(l.share, 6), csvNum(l.bytesPerStep, 0),
			csvNum(l.flopsPS, 0), csvNum(l.gbs, 3), csvNum(l.tflops, 6), csvNum(l.pctBW, 3), csvNum(l.pctFP32, 3),
			csvNum(l.intensity, 4), strings.Trim(l.bound, "–")})
	}
	cw.Write([]string{"wall", "", csvNum(1e3*h.Wall/float64(max(h.Steps, 1)), 6), "1", "", "", "", "", "", "", "", ""})
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// csvPeak is a peak, empty when unknown (0).
func csvPeak(x float64) string {
	if x <= 0 {
		return ""
	}
	return csvNum(x, 0)
}

func csvNum(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// IdleRow is the device's idle time before one kernel that followed another (gpu.Record's
// Idle), summed over a window: where the host kept the device waiting.
type IdleRow struct {
	After, Before string // the kernels on either side of the gaps
	Gaps          int
	Seconds       float64
	Longest       float64
}

// Idle sums the records' idle times by where they fell (the kernel before, the kernel
// after), the most idle time first; records whose idle time is unknown (the first after
// each attach, untimed ones) are left out. gaps holds every known idle time, in launch
// order.
func Idle(recs []gpu.Record) (rows []IdleRow, gaps []float64) {
	at := map[[2]string]int{}
	for i := 1; i < len(recs); i++ {
		r := recs[i]
		if math.IsNaN(r.Idle) {
			continue
		}
		gaps = append(gaps, r.Idle)
		key := [2]string{recs[i-1].Kernel, r.Kernel}
		j, ok := at[key]
		if !ok {
			j = len(rows)
			at[key] = j
			rows = append(rows, IdleRow{After: key[0], Before: key[1]})
		}
		rows[j].Gaps++
		rows[j].Seconds += r.Idle
		rows[j].Longest = max(rows[j].Longest, r.Idle)
	}
	slices.SortStableFunc(rows, func(a, b IdleRow) int {
		if c := cmp.Compare(b.Seconds, a.Seconds); c != 0 {
			return c
		}
		if c := strings.Compare(a.After, b.After); c != 0 {
			return c
		}
		return strings.Compare(a.Before, b.Before)
	})
	return rows, gaps
}

// quantile is the q-quantile of xs (sorted in place), the nearest rank; NaN when empty.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

// WriteIdle writes, in Markdown, the device's idle time between the window's launches
// (Idle): per step (or batch) its total, the gaps' count, median, 90th percentile and
// longest, then the top places where it fell, the most idle time first. It writes
// nothing when no idle time is known (an untimed profile).
func WriteIdle(w io.Writer, h Header, recs []gpu.Record, top int) error {
	rows, gaps := Idle(recs)
	if len(gaps) == 0 {
		return nil
	}
	var total float64
	for _, g := range gaps {
		total += g
	}
	steps := float64(max(h.Steps, 1))
	u := h.unit()
	var b strings.Builder
	fmt.Fprintf(&b, "\n## The device's idle time between launches\n\n")
	fmt.Fprintf(&b, "Between one launch's end and the next one's start the device waited %s ms per %s, over %s gaps per %s "+
		"(median %s µs, 90th percentile %s µs, longest %s µs): time in which its stream held nothing to run, because the host "+
		"had not yet enqueued the next launch (the first launch of each profiled %s, which waited for what ran before it unprofiled, is left out). "+
		"Where the device waited longest, in all:\n\n",
		num(1e3*total/steps, 3), u, num(float64(len(gaps))/steps, 1), u,
		num(1e6*quantile(gaps, 0.5), 1), num(1e6*quantile(gaps, 0.9), 1), num(1e6*quantile(gaps, 1), 1), u)
	fmt.Fprintf(&b, "| after | before | gaps/%[1]s | ms/%[1]s | mean µs | longest µs |\n|---|---|--:|--:|--:|--:|\n", u)
	for _, r := range rows[:min(top, len(rows))] {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s | %s |\n", r.After, r.Before, num(float64(r.Gaps)/steps, 1),
			num(1e3*r.Seconds/steps, 3), num(1e6*r.Seconds/float64(r.Gaps), 1), num(1e6*r.Longest, 1))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
