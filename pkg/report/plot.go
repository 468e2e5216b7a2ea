package report

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/rocone/rocone/pkg/eval"
)

// PNGDPI is the resolution of PNG plots.
const PNGDPI = 150

// CheckPlotFormat refuses a plot path whose name does not say .png or .svg, so that a
// stage can check its plot flags before any work. The error does not repeat the path.
func CheckPlotFormat(path string) error {
	if ext := strings.ToLower(filepath.Ext(path)); ext != ".png" && ext != ".svg" {
		return fmt.Errorf("unsupported plot format %q (want .png or .svg)", ext)
	}
	return nil
}

// plotFormat returns path's image format, chosen by its extension: "png" or "svg" (any
// case).
func plotFormat(path string) (string, error) {
	if err := CheckPlotFormat(path); err != nil {
		return "", fmt.Errorf("report: %s: %w", path, err)
	}
	return strings.ToLower(filepath.Ext(path))[1:], nil
}

// newCanvas returns a canvas for path's format.
func newCanvas(path string, w, h vg.Length) (vg.CanvasWriterTo, error) {
	format, err := plotFormat(path)
	if err != nil {
		return nil, err
	}
	if format == "png" {
		return vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(PNGDPI))}, nil
	}
	return vgsvg.New(w, h), nil
}

// drawPlots draws the plots stacked vertically on one canvas, their data areas aligned,
// in path's format; nothing is written.
func drawPlots(path string, w, h vg.Length, plots ...*plot.Plot) (io.WriterTo, error) {
	c, err := newCanvas(path, w, h)
	if err != nil {
		return nil, err
	}
	dc := draw.New(c)
	if len(plots) == 1 {
		plots[0].Draw(dc)
	} else {
		grid := make([][]*plot.Plot, len(plots))
		for i, p := range plots {
			grid[i] = []*plot.Plot{p}
		}
		tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Centimeter / 2}
		canvases := plot.Align(grid, tiles, dc)
		for i, p := range plots {
			p.Draw(canvases[i][0])
		}
	}
	return c, nil
}

// save writes an image drawn for path to path atomically.
func save(path string, img io.WriterTo, err error) error {
	if err != nil {
		return err
	}
	return writeAtomic(path, img)
}

// BarOptions control [PlotMRR].
type BarOptions struct {
	// Metric is the metric plotted; MRR by default.
	Metric Metric
	// Compare adds a second group of bars: the published MRR of Model on Dataset, with the
	// published seed standard deviations as error bars where there are any. MRR only.
	Compare bool
	Dataset string
	Model   string // "RoConE" when empty
	// Label names our bars in the legend; "ours" when empty.
	Label string
	// Title is the plot's title; a default naming the metric and dataset when empty.
	Title string
	// Width and Height are the image's size; 10 × 4 inches when zero.
	Width, Height vg.Length
}

// category is one group of bars: a type or a group average.
type category struct {
	label string
	col   column
}

// categories returns the bars of a plot: the table's columns that we have values for
// (types with queries, complete averages).
func categories(a *Aggregate) []category {
	var cs []category
	for _, c := range columns(a) {
		if _, ok := a.stat(c, MRR); !ok {
			continue
		}
		label := c.header
		if c.typ == "" {
			label = "EPFO avg"
			if c.neg {
				label = "neg avg"
			}
		}
		cs = append(cs, category{label, c})
	}
	return cs
}

// PlotMRR draws our metric per type (and the complete group averages) as a bar chart with
// error bars, and writes it to path (.png or .svg) atomically. The error bars are the
// standard deviation across seeds with several seeds, otherwise the bootstrap interval
// (none when the bootstrap was off). With opt.Compare the published values are a second
// group of bars.
func PlotMRR(path string, a *Aggregate, opt BarOptions) error {
	img, err := DrawMRR(path, a, opt)
	return save(path, img, err)
}

// DrawMRR is [PlotMRR] without the writing: the image in path's format, for a stage that
// writes all its outputs once all are made.
func DrawMRR(path string, a *Aggregate, opt BarOptions) (io.WriterTo, error) {
	if _, err := plotFormat(path); err != nil {
		return nil, err
	}
	if opt.Metric < MRR || opt.Metric > Hits10 {
		return nil, fmt.Errorf("report: unknown metric %d", int(opt.Metric))
	}
	cats := categories(a)
	if len(cats) == 0 {
		return nil, errors.New("report: nothing to plot")
	}
	var pub *Published
	if opt.Compare {
		if opt.Metric != MRR {
			return nil, fmt.Errorf("report: published results are MRR only, cannot compare %s", opt.Metric)
		}
		model := cmp.Or(opt.Model, "RoConE")
		p, err := LookupPublished(opt.Dataset, model)
		if err != nil {
			return nil, err
		}
		pub = &p
	}
	groups := 1
	if pub != nil {
		groups = 2
	}
	step := 0.8 / float64(groups)
	offset := func(g int) float64 { return (float64(g) - float64(groups-1)/2) * step }

	p := plot.New()
	title := opt.Title
	if title == "" {
		title = opt.Metric.String() + " per query type"
		if opt.Dataset != "" {
			name := opt.Dataset
			if c, err := CanonicalDataset(name); err == nil {
				name = c
			}
			title += " — " + name
		}
	}
	p.Title.Text = title
	p.Y.Label.Text = opt.Metric.String() + " ×100"
	p.Legend.Top = true

	// Ours.
	ours := &bars{half: step * 0.45, color: plotutil.Color(0)}
	var errs errorPoints
	ours.xs, ours.ys, errs = ourValues(a, cats, opt.Metric, offset(0))
	label := cmp.Or(opt.Label, "ours")
	if a.Seeds > 1 {
		label += fmt.Sprintf(" (%d seeds, ± std)", a.Seeds)
	} else if a.Resamples > 0 {
		label += fmt.Sprintf(" (bootstrap %s CI)", levelString(a.Level))
	}
	p.Add(ours)
	p.Legend.Add(label, ours)
	if err := errs.addTo(p); err != nil {
		return nil, err
	}

	// Published.
	var pb *bars
	var perrs errorPoints
	if pub != nil {
		pb = &bars{half: step * 0.45, color: plotutil.Color(1)}
		for i, c := range cats {
			var v float64
			var ok bool
			if c.col.typ != "" {
				v, ok = pub.Value(c.col.typ)
			} else {
				v, ok = pub.Average(c.col.group)
			}
			if !ok {
				continue
			}
			x := float64(i) + offset(1)
			pb.xs = append(pb.xs, x)
			pb.ys = append(pb.ys, v)
			if s, ok := pub.Std[c.col.typ]; ok {
				perrs.add(x, v, s, s)
			}
		}
		p.Add(pb)
		p.Legend.Add(pub.Label(), pb)
		if err := perrs.addTo(p); err != nil {
			return nil, err
		}
	}

	names := make([]string, len(cats))
	for i, c := range cats {
		names[i] = c.label
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(cats))-0.5
	// Headroom above the highest bar or error bar for the legend.
	top := 0.0
	for _, e := range []errorPoints{errs, perrs} {
		for i, xy := range e.XYs {
			top = math.Max(top, xy.Y+math.Abs(e.YErrors[i].High))
		}
	}
	for _, b := range []*bars{ours, pb} {
		if b != nil {
			_, _, _, ymax := b.DataRange()
			top = math.Max(top, ymax)
		}
	}
	p.Y.Min = 0
	p.Y.Max = 1.2 * math.Max(top, 1e-9)
	p.Add(plotter.NewGrid())

	w, h := opt.Width, opt.Height
	if w <= 0 || h <= 0 {
		w, h = 10*vg.Inch, 4*vg.Inch
	}
	return drawPlots(path, w, h, p)
}

// bars is a bar plotter whose bar positions and widths are in data units, so that groups
// of bars and their error bars line up whatever the canvas size.
type bars struct {
	xs, ys []float64
	half   float64 // half the width of a bar
	color  color.Color
}

func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	line := plotter.DefaultLineStyle
	line.Width = vg.Points(0.5)
	for i, x := range b.xs {
		x0, x1 := trX(x-b.half), trX(x+b.half)
		y0, y1 := trY(0), trY(b.ys[i])
		pts := []vg.Point{{X: x0, Y: y0}, {X: x0, Y: y1}, {X: x1, Y: y1}, {X: x1, Y: y0}}
		c.FillPolygon(b.color, c.ClipPolygonXY(pts))
		c.StrokeLines(line, c.ClipLinesXY(append(pts, pts[0]))...)
	}
}

func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for i, x := range b.xs {
		xmin = math.Min(xmin, x-b.half)
		xmax = math.Max(xmax, x+b.half)
		ymin = math.Min(ymin, b.ys[i])
		ymax = math.Max(ymax, b.ys[i])
	}
	return xmin, xmax, ymin, ymax
}

func (b *bars) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{
		{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y},
		{X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y},
	}
	c.FillPolygon(b.color, c.ClipPolygonXY(pts))
}

// ourValues returns the bars of our results (category i at x = i + dx, the mean ×100) and
// their error bars: ± the standard deviation over seeds when there are several seeds,
// otherwise the bootstrap interval when there is one, otherwise none.
func ourValues(a *Aggregate, cats []category, metric Metric, dx float64) (xs, ys []float64, errs errorPoints) {
	for i, c := range cats {
		st, _ := a.stat(c.col, metric)
		x := float64(i) + dx
		y := eval.Percent(st.Mean)
		xs = append(xs, x)
		ys = append(ys, y)
		switch {
		case a.Seeds > 1:
			e := eval.Percent(st.Std)
			errs.add(x, y, e, e)
		case a.Resamples > 0:
			errs.add(x, y, math.Max(0, y-eval.Percent(st.Lo)), math.Max(0, eval.Percent(st.Hi)-y))
		}
	}
	return xs, ys, errs
}

// errorPoints collects error bars: at (x, y), from y−low to y+high.
type errorPoints struct {
	plotter.XYs
	plotter.YErrors
}

func (e *errorPoints) add(x, y, low, high float64) {
	e.XYs = append(e.XYs, plotter.XY{X: x, Y: y})
	e.YErrors = append(e.YErrors, struct{ Low, High float64 }{low, high})
}

func (e *errorPoints) addTo(p *plot.Plot) error {
	if len(e.XYs) == 0 {
		return nil
	}
	eb, err := plotter.NewYErrorBars(e)
	if err != nil {
		return fmt.Errorf("report: error bars: %w", err)
	}
	eb.LineStyle.Width = vg.Points(1)
	p.Add(eb)
	return nil
}

// Series is one curve of a training log: Values[i] at step Steps[i].
type Series struct {
	Name   string
	Steps  []int
	Values []float64
}

// TrainingLog is what [PlotTraining] draws.
type TrainingLog struct {
	// Steps and Loss are the training loss: Loss[i] at step Steps[i].
	Steps []int
	Loss  []float64
	// Pools are optional per-pool losses (e.g. one per query type), each with its own steps.
	Pools []Series
	// Valid are validation MRR curves as raw fractions (plotted ×100), e.g. the EPFO and
	// negation averages.
	Valid []Series
}

// CurveOptions control [PlotTraining].
type CurveOptions struct {
	// Title is the title of the top panel; "training" when empty.
	Title string
	// LogLoss draws the loss on a log scale (points with a loss ≤ 0 are then left out).
	LogLoss bool
	// MaxPoints caps the points drawn per curve; a longer curve is averaged over runs of
	// consecutive points (steps and values alike). 0 means 2000; negative means no cap.
	MaxPoints int
	// Width and Height are the image's size; 8 × 3 inches per panel when zero.
	Width, Height vg.Length
}

// PlotTraining draws the training loss (and the per-pool losses) over steps in one panel and
// the validation MRR over steps in a second panel below it (a panel is left out when it has
// no data), and writes the image to path (.png or .svg) atomically. Points whose value is not
// finite are left out.
func PlotTraining(path string, log TrainingLog, opt CurveOptions) error {
	img, err := DrawTraining(path, log, opt)
	return save(path, img, err)
}

// DrawTraining is [PlotTraining] without the writing: the image in path's format.
func DrawTraining(path string, log TrainingLog, opt CurveOptions) (io.WriterTo, error) {
	if _, err := plotFormat(path); err != nil {
		return nil, err
	}
	maxPts := opt.MaxPoints
	if maxPts == 0 {
		maxPts = 2000
	}
	loss := Series{Name: "loss", Steps: log.Steps, Values: log.Loss}
	var panels []*plot.Plot

	if len(log.Loss) > 0 || len(log.Pools) > 0 {
		p := plot.New()
		p.Title.Text = cmp.Or(opt.Title, "training")
		p.X.Label.Text = "step"
		p.Y.Label.Text = "loss"
		p.Legend.Top = true
		if opt.LogLoss {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		}
		all := append([]Series{}, log.Pools...)
		if len(log.Loss) > 0 {
			all = append([]Series{loss}, all...)
		}
		n := 0
		for i, s := range all {
			xy, err := curve(s, maxPts, opt.LogLoss)
			if err != nil {
				return nil, err
			}
			if len(xy) == 0 {
				continue
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return nil, fmt.Errorf("report: %s: %w", s.Name, err)
			}
			l.Color = plotutil.Color(i)
			l.Width = vg.Points(1)
			if i == 0 && len(log.Loss) > 0 {
				l.Color = color.Black
				l.Width = vg.Points(1.5)
			}
			p.Add(l)
			p.Legend.Add(s.Name, l)
			n++
		}
		if n == 0 {
			return nil, errors.New("report: training log: no finite loss to plot")
		}
		p.Add(plotter.NewGrid())
		panels = append(panels, p)
	}

	if len(log.Valid) > 0 {
		p := plot.New()
		if len(panels) == 0 {
			p.Title.Text = cmp.Or(opt.Title, "training")
		}
		p.X.Label.Text = "step"
		p.Y.Label.Text = "valid MRR ×100"
		p.Legend.Top = true
		p.Legend.Left = true
		n := 0
		for i, s := range log.Valid {
			xy, err := curve(s, maxPts, false)
			if err != nil {
				return nil, err
			}
			if len(xy) == 0 {
				continue
			}
			for j := range xy {
				xy[j].Y = eval.Percent(xy[j].Y)
			}
			l, pts, err := plotter.NewLinePoints(xy)
			if err != nil {
				return nil, fmt.Errorf("report: %s: %w", s.Name, err)
			}
			l.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
			pts.Shape = plotutil.Shape(i)
			p.Add(l, pts)
			p.Legend.Add(cmp.Or(s.Name, "valid MRR"), l, pts)
			n++
		}
		if n == 0 {
			return nil, errors.New("report: training log: no finite validation MRR to plot")
		}
		p.Add(plotter.NewGrid())
		panels = append(panels, p)
	}
	if len(panels) == 0 {
		return nil, errors.New("report: training log is empty")
	}
	w, h := opt.Width, opt.Height
	if w <= 0 || h <= 0 {
		w, h = 8*vg.Inch, vg.Length(len(panels))*3*vg.Inch
	}
	return drawPlots(path, w, h, panels...)
}

// curve returns a series' finite points (positive ones only when positive is set), averaged
// over runs of consecutive points down to at most maxPts points when maxPts > 0.
func curve(s Series, maxPts int, positive bool) (plotter.XYs, error) {
	if len(s.Steps) != len(s.Values) {
		return nil, fmt.Errorf("report: training log: %s has %d steps and %d values", cmp.Or(s.Name, "series"), len(s.Steps), len(s.Values))
	}
	var xy plotter.XYs
	for i, v := range s.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) || (positive && v <= 0) {
			continue
		}
		xy = append(xy, plotter.XY{X: float64(s.Steps[i]), Y: v})
	}
	if maxPts <= 0 || len(xy) <= maxPts {
		return xy, nil
	}
	k := (len(xy) + maxPts - 1) / maxPts
	out := make(plotter.XYs, 0, maxPts)
	for i := 0; i < len(xy); i += k {
		j := min(i+k, len(xy))
		var sx, sy float64
		for _, p := range xy[i:j] {
			sx += p.X
			sy += p.Y
		}
		n := float64(j - i)
		out = append(out, plotter.XY{X: sx / n, Y: sy / n})
	}
	return out, nil
}
