// Package plots draws ckbench's charts (PNG and SVG, with gonum/plot):
// the roofline of a machine with sweep points on it, and bandwidth against
// working-set size. It knows nothing of how the numbers were measured.
package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Curve is one line of a bandwidth chart.
type Curve struct {
	Label string
	Bytes []float64
	GBs   []float64
}

// Marker is a vertical line at a working-set size (a cache size).
type Marker struct {
	Label string
	Bytes float64
}

// Bandwidth is a chart of GB/s against working-set size (log x).
type Bandwidth struct {
	Title   string
	Curves  []Curve
	Markers []Marker
}

// Save writes the chart to each path (.png, .svg).
func (c Bandwidth) Save(paths ...string) error {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = "working set per thread (bytes)"
	p.Y.Label.Text = "GB/s"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = byteTicks{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	ymin, ymax := math.Inf(1), 0.0
	for i, cv := range c.Curves {
		var xy plotter.XYs
		for j := range cv.Bytes {
			if cv.GBs[j] > 0 {
				xy = append(xy, plotter.XY{X: cv.Bytes[j], Y: cv.GBs[j]})
				ymin, ymax = math.Min(ymin, cv.GBs[j]), math.Max(ymax, cv.GBs[j])
			}
		}
		if len(xy) == 0 {
			continue
		}
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		l.Color, s.Color, s.Shape = plotutil.Color(i), plotutil.Color(i), draw.CircleGlyph{}
		p.Add(l, s)
		p.Legend.Add(cv.Label, l)
	}
	if ymax == 0 {
		ymin, ymax = 1, 10
	}
	p.Y.Min, p.Y.Max = ymin/1.5, ymax*1.5
	for _, m := range c.Markers {
		l, err := plotter.NewLine(plotter.XYs{{X: m.Bytes, Y: p.Y.Min}, {X: m.Bytes, Y: p.Y.Max}})
		if err != nil {
			return err
		}
		l.Color, l.Dashes = color.Gray{Y: 120}, []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(l)
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: m.Bytes * 1.05, Y: p.Y.Min * 1.1}}, Labels: []string{m.Label}})
		if err != nil {
			return err
		}
		p.Add(lb)
	}
	return save(p, 9*vg.Inch, 5*vg.Inch, paths)
}

// byteTicks labels powers of 4 of a byte axis: 4K, 16K, 1M, ...
type byteTicks struct{}

func (byteTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for v := 1024.0; v <= max*1.01; v *= 4 {
		if v >= min/1.01 {
			ticks = append(ticks, plot.Tick{Value: v, Label: byteLabel(v)})
		}
	}
	return ticks
}

func byteLabel(v float64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%gG", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%gM", v/(1<<20))
	}
	return fmt.Sprintf("%gK", v/(1<<10))
}

// save writes p to every path through a temporary file and a rename.
func save(p *plot.Plot, w, h vg.Length, paths []string) error {
	for _, path := range paths {
		if err := saveCanvas(path, w, h, p.Draw); err != nil {
			return err
		}
	}
	return nil
}

// ScalingLine is one kernel×tier's speedup against its thread count.
type ScalingLine struct {
	Label            string
	Threads, Speedup []float64
}

// Scaling is a chart of speedup over 1 thread against the thread count,
// with reference lines (the bandwidth roofs' own speedup: what a kernel
// bound by that level can reach) drawn dashed.
type Scaling struct {
	Title string
	Lines []ScalingLine
	Ideal []ScalingLine
}

// Save writes the chart to each path (.png, .svg).
func (c Scaling) Save(paths ...string) error {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = "threads"
	p.Y.Label.Text = "speedup over 1 thread"
	p.Legend.Top, p.Legend.Left = true, true
	xmax, ymax := 2.0, 2.0
	add := func(i int, ln ScalingLine, dashed bool) error {
		xy := make(plotter.XYs, len(ln.Threads))
		for j := range ln.Threads {
			xy[j] = plotter.XY{X: ln.Threads[j], Y: ln.Speedup[j]}
			xmax, ymax = math.Max(xmax, ln.Threads[j]), math.Max(ymax, ln.Speedup[j])
		}
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		l.Color, s.Color = plotutil.Color(i), plotutil.Color(i)
		s.Shape = plotutil.Shape(i)
		if dashed {
			l.Color, s.Color = color.Gray{Y: 110}, color.Gray{Y: 110}
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			s.Shape = draw.CrossGlyph{}
		}
		p.Add(l, s)
		p.Legend.Add(ln.Label, l, s)
		return nil
	}
	for i, ln := range c.Ideal {
		if err := add(i, ln, true); err != nil {
			return err
		}
	}
	for i, ln := range c.Lines {
		if err := add(i, ln, false); err != nil {
			return err
		}
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 1, xmax, 0, ymax*1.15
	return save(p, 8*vg.Inch, 5*vg.Inch, paths)
}
