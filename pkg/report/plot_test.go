package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// checkImage checks that path is a complete, valid PNG or SVG file.
func checkImage(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	switch filepath.Ext(path) {
	case ".png", ".PNG":
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Fatalf("%s: no PNG magic", path)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if r := img.Bounds(); r.Dx() < 100 || r.Dy() < 100 {
			t.Errorf("%s: %v", path, r)
		}
	case ".svg":
		if !bytes.HasPrefix(b, []byte("<?xml")) || !bytes.Contains(b[:200], []byte("<svg")) {
			t.Fatalf("%s: no SVG prefix: %.60q", path, b)
		}
		d := xml.NewDecoder(bytes.NewReader(b))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: not well-formed XML: %v", path, err)
			}
		}
		if !bytes.HasSuffix(bytes.TrimSpace(b), []byte("</svg>")) {
			t.Errorf("%s: does not end with </svg>", path)
		}
	default:
		t.Fatalf("%s: unexpected extension", path)
	}
	// No temporary file left behind.
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp-*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// seedSummaries are the summaries of synthetic runs of three seeds and of one, 100
// resamples each.
func seedSummaries(t *testing.T) (three, one *Aggregate) {
	t.Helper()
	three, err := Summarize(synthetic(3, 6, 1), Options{Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	one, err = Summarize(synthetic(1, 6, 1), Options{Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	return three, one
}

func TestPlotMRR(t *testing.T) {
	three, one := seedSummaries(t)
	noBoot, err := Summarize(synthetic(1, 6, 1)[:1], Options{Resamples: -1})
	if err != nil {
		t.Fatal(err)
	}
	partial, err := Summarize([]Run{{Queries: []QueryResult{qr(1, "1p", 0.4), qr(2, "2in", 0.1), qr(3, "2in", 0.2)}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		a    *Aggregate
		opt  BarOptions
		err  string
	}{
		{"seeds.png", three, BarOptions{}, ""},
		{"seeds.svg", three, BarOptions{Compare: true, Dataset: "FB15k-237", Title: "test"}, ""},
		{"boot.PNG", one, BarOptions{Compare: true, Dataset: "nell"}, ""},
		{"hits.svg", one, BarOptions{Metric: Hits10}, ""},
		{"noboot.png", noBoot, BarOptions{}, ""},
		{"partial.svg", partial, BarOptions{Compare: true, Dataset: "fb15k", Model: "ConE", Width: 300, Height: 200}, ""},
		{"bad.pdf", three, BarOptions{}, "unsupported plot format"},
		{"nomodel.png", three, BarOptions{Compare: true, Dataset: "fb15k"}, "no published FB15k row"},
		{"hitscmp.png", three, BarOptions{Compare: true, Dataset: "nell", Metric: Hits1}, "MRR only"},
		{"metric.png", three, BarOptions{Metric: 7}, "unknown metric"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			err := PlotMRR(path, tc.a, tc.opt)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("file written on error: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, path)
		})
	}
}

func TestPlotTraining(t *testing.T) {
	var log TrainingLog
	for s := 0; s < 5000; s += 10 {
		log.Steps = append(log.Steps, s)
		log.Loss = append(log.Loss, 2/(1+float64(s)/500)+0.1*math.Sin(float64(s)))
	}
	log.Loss[3] = math.NaN()
	log.Loss[7] = math.Inf(1)
	pool := Series{Name: "pool 2in", Steps: []int{0, 1000, 2000, 3000}, Values: []float64{3, 2, 1.5, 1.2}}
	valid := []Series{
		{Name: "EPFO avg", Steps: []int{1000, 2000, 3000, 4000}, Values: []float64{0.05, 0.1, 0.14, 0.16}},
		{Name: "negation avg", Steps: []int{1000, 2000, 3000, 4000}, Values: []float64{0.01, 0.02, 0.03, 0.035}},
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		log  TrainingLog
		opt  CurveOptions
		err  string
	}{
		{"full.png", TrainingLog{Steps: log.Steps, Loss: log.Loss, Pools: []Series{pool}, Valid: valid}, CurveOptions{}, ""},
		{"full.svg", TrainingLog{Steps: log.Steps, Loss: log.Loss, Pools: []Series{pool}, Valid: valid}, CurveOptions{LogLoss: true, MaxPoints: 50}, ""},
		{"loss.svg", TrainingLog{Steps: log.Steps, Loss: log.Loss}, CurveOptions{Title: "loss only"}, ""},
		{"valid.png", TrainingLog{Valid: valid[:1]}, CurveOptions{}, ""},
		{"pools.svg", TrainingLog{Pools: []Series{pool}}, CurveOptions{}, ""},
		{"empty.png", TrainingLog{}, CurveOptions{}, "empty"},
		{"nan.png", TrainingLog{Steps: []int{1}, Loss: []float64{math.NaN()}}, CurveOptions{}, "no finite loss"},
		{"len.png", TrainingLog{Steps: []int{1, 2}, Loss: []float64{1}}, CurveOptions{}, "2 steps and 1 values"},
		{"fmt.jpg", log, CurveOptions{}, "unsupported plot format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			err := PlotTraining(path, tc.log, tc.opt)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("file written on error: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, path)
		})
	}
}

func TestCurveThinning(t *testing.T) {
	s := Series{Name: "x", Steps: []int{0, 1, 2, 3, 4, 5, 6}, Values: []float64{1, 3, math.NaN(), 5, 7, -1, 9}}
	xy, err := curve(s, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	// Finite points (0,1) (1,3) (3,5) (4,7) (5,-1) (6,9): 6 points → runs of 2.
	want := [][2]float64{{0.5, 2}, {3.5, 6}, {5.5, 4}}
	if len(xy) != len(want) {
		t.Fatalf("%v", xy)
	}
	for i, w := range want {
		if xy[i].X != w[0] || xy[i].Y != w[1] {
			t.Errorf("point %d: %v, want %v", i, xy[i], w)
		}
	}
	pos, _ := curve(s, -1, true)
	if len(pos) != 5 {
		t.Errorf("positive points: %v", pos)
	}
}

func TestWriteAtomicReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.svg")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A failing writer leaves the old file and no temporary file.
	if err := writeAtomic(path, failingWriter{}); err == nil {
		t.Fatal("no error")
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("destination changed: %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("left %v", left)
	}
	if err := writeAtomic(path, strings.NewReader("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("destination %q", b)
	}
}

type failingWriter struct{}

func (failingWriter) WriteTo(w io.Writer) (int64, error) {
	w.Write([]byte("partial"))
	return 7, errors.New("boom")
}

// svgTexts returns the text elements of an SVG image, in document order.
func svgTexts(svg string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<text[^>]*>([^<]*)</text>`).FindAllStringSubmatch(svg, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// TestDrawMRRText: what a bar chart says in words: its title (the metric and the
// canonical dataset, or the given title), a bar group per type with queries and per
// complete average, in the table's order, the axis label, and a legend that says what
// the error bars are (the std over seeds, or the bootstrap interval, or nothing).
func TestDrawMRRText(t *testing.T) {
	three, one := seedSummaries(t)
	noBoot, err := Summarize(synthetic(1, 6, 1), Options{Resamples: -1})
	if err != nil {
		t.Fatal(err)
	}
	partial, err := Summarize([]Run{{Queries: []QueryResult{qr(1, "1p", 0.4), qr(2, "2in", 0.1)}}}, Options{Resamples: -1})
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"1p", "2p", "3p", "2i", "3i", "pi", "ip", "2u", "up", "EPFO avg", "2in", "3in", "inp", "pin", "pni", "neg avg", "2u-DM"}
	for _, tc := range []struct {
		name string
		a    *Aggregate
		opt  BarOptions
		want []string // the texts, tick values left out, in order
		bars [2]int   // our bars and the published ones: one per category with a value
	}{
		{"seeds, compared", three, BarOptions{Compare: true, Dataset: "fb15k-237"},
			slices.Concat([]string{"MRR per query type — FB15k-237"}, all, []string{"MRR ×100", "ours (3 seeds, ± std)", "RoConE [paper]"}), [2]int{17, 16}},
		{"one seed, bootstrap, Hits@10", one, BarOptions{Metric: Hits10, Dataset: "nell", Label: "mine"},
			slices.Concat([]string{"Hits@10 per query type — NELL995"}, all, []string{"Hits@10 ×100", "mine (bootstrap 95% CI)"}), [2]int{17, 0}},
		{"one seed, no bootstrap, titled", noBoot, BarOptions{Title: "t", Dataset: "wn18rr"},
			slices.Concat([]string{"t"}, all, []string{"MRR ×100", "ours"}), [2]int{17, 0}},
		{"an unknown dataset", noBoot, BarOptions{Dataset: "wn18rr", Metric: Hits1},
			slices.Concat([]string{"Hits@1 per query type — wn18rr"}, all, []string{"Hits@1 ×100", "ours"}), [2]int{17, 0}},
		{"no complete average", partial, BarOptions{Compare: true, Dataset: "fb15k", Model: "ConE"},
			[]string{"MRR per query type — FB15k", "1p", "2in", "MRR ×100", "ours", "ConE [memory]"}, [2]int{2, 2}},
		{"a type the paper leaves out", partial, BarOptions{Compare: true, Dataset: "nell", Model: "Query2Box"},
			[]string{"MRR per query type — NELL995", "1p", "2in", "MRR ×100", "ours", "Query2Box [paper]"}, [2]int{2, 1}},
	} {
		img, err := DrawMRR("x.svg", tc.a, tc.opt)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var b bytes.Buffer
		if _, err := img.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		for g, want := range tc.bars {
			r, gr, bl, _ := plotutil.Color(g).RGBA()
			fill := fmt.Sprintf("fill:#%02X%02X%02X", r>>8, gr>>8, bl>>8)
			if n := strings.Count(b.String(), fill) - min(want, 1); n != want { // less the legend's thumbnail
				t.Errorf("%s: %d bars of group %d, want %d", tc.name, n, g, want)
			}
		}
		var got []string
		for _, s := range svgTexts(b.String()) {
			if _, err := strconv.ParseFloat(s, 64); err != nil {
				got = append(got, s)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: texts\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
}

// TestPlotSize: a plot is the size asked for, and the default size (10 × 4 inches for
// the bar chart; the curves' own default) unless both sides are given: one side alone
// would make an image of zero width or height.
func TestPlotSize(t *testing.T) {
	a, err := Summarize(synthetic(1, 2, 1), Options{Resamples: -1})
	if err != nil {
		t.Fatal(err)
	}
	log := TrainingLog{Steps: []int{0, 10, 20}, Loss: []float64{3, 2, 1}}
	px := func(l vg.Length) int { return int(math.Round(float64(l/vg.Inch) * PNGDPI)) }
	size := func(img io.WriterTo, err error) [2]int {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := img.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		c, err := png.DecodeConfig(&b)
		if err != nil {
			t.Fatal(err)
		}
		return [2]int{c.Width, c.Height}
	}
	bars := func(w, h vg.Length) [2]int {
		return size(DrawMRR("x.png", a, BarOptions{Width: w, Height: h}))
	}
	curves := func(w, h vg.Length) [2]int {
		return size(DrawTraining("x.png", log, CurveOptions{Width: w, Height: h}))
	}
	barDefault, curveDefault := bars(0, 0), curves(0, 0)
	if barDefault != [2]int{px(10 * vg.Inch), px(4 * vg.Inch)} {
		t.Errorf("bar chart: default size %v", barDefault)
	}
	for _, tc := range []struct {
		name string
		draw func(w, h vg.Length) [2]int
		def  [2]int
	}{{"bar chart", bars, barDefault}, {"curves", curves, curveDefault}} {
		if got, want := tc.draw(300, 200), [2]int{px(300), px(200)}; got != want {
			t.Errorf("%s 300×200 pt: %v pixels, want %v", tc.name, got, want)
		}
		for _, wh := range [][2]vg.Length{{300, 0}, {0, 200}, {-1, 200}} {
			if got := tc.draw(wh[0], wh[1]); got != tc.def {
				t.Errorf("%s %v×%v pt: %v pixels, want the default %v", tc.name, wh[0], wh[1], got, tc.def)
			}
		}
	}
}

// TestOurValues: our bars' error bars are ± the std over seeds with several seeds, the
// bootstrap interval with one seed and resamples, and absent otherwise.
func TestOurValues(t *testing.T) {
	three, one := seedSummaries(t)
	noBoot, err := Summarize(synthetic(1, 6, 1), Options{Resamples: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		a      *Aggregate
		metric Metric
		bars   func(s Stat) (low, high float64) // nil: no error bars
	}{
		{"three seeds", three, MRR, func(s Stat) (float64, float64) { return 100 * s.Std, 100 * s.Std }},
		{"one seed, bootstrap", one, Hits3, func(s Stat) (float64, float64) {
			return math.Max(0, 100*(s.Mean-s.Lo)), math.Max(0, 100*(s.Hi-s.Mean))
		}},
		{"one seed, no bootstrap", noBoot, MRR, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cats := categories(tc.a)
			xs, ys, errs := ourValues(tc.a, cats, tc.metric, -0.25)
			if len(xs) != len(cats) || len(ys) != len(cats) {
				t.Fatalf("%d xs, %d ys for %d categories", len(xs), len(ys), len(cats))
			}
			if tc.bars == nil {
				if len(errs.XYs) != 0 {
					t.Fatalf("%d error bars, want none", len(errs.XYs))
				}
			} else if len(errs.XYs) != len(cats) || len(errs.YErrors) != len(cats) {
				t.Fatalf("%d error bars, want %d", len(errs.XYs), len(cats))
			}
			nonZero := false
			for i, c := range cats {
				st, _ := tc.a.stat(c.col, tc.metric)
				if xs[i] != float64(i)-0.25 || ys[i] != 100*st.Mean {
					t.Errorf("%s: bar at (%v, %v), want (%v, %v)", c.label, xs[i], ys[i], float64(i)-0.25, 100*st.Mean)
				}
				if tc.bars == nil {
					continue
				}
				low, high := tc.bars(st)
				got := errs.YErrors[i]
				if errs.XYs[i].X != xs[i] || errs.XYs[i].Y != ys[i] ||
					!(math.Abs(got.Low-low) <= 1e-9) || !(math.Abs(got.High-high) <= 1e-9) {
					t.Errorf("%s: error bar %v %+v, want at (%v, %v) low %v high %v", c.label, errs.XYs[i], got, xs[i], ys[i], low, high)
				}
				nonZero = nonZero || got.Low > 0 || got.High > 0
			}
			if tc.bars != nil && !nonZero {
				t.Error("every error bar is empty: the test cannot tell the kinds apart")
			}
		})
	}
}
