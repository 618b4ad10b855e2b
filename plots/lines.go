package plots

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Line is one series of a Lines chart.
type Line struct {
	Label string
	X, Y  []float64
}

// Lines is a chart of lines with points: a rate against a size (LogX: a
// log2 axis, for contexts and shapes), the legend beside the plot.
type Lines struct {
	Title, XLabel, YLabel string
	LogX                  bool
	Lines                 []Line
}

// Save writes the chart to each path (.png, .svg).
func (c Lines) Save(paths ...string) error {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text, p.Y.Label.Text = c.XLabel, c.YLabel
	if c.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = pow2Ticks{}
	}
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = vg.Points(9)
	legW, ymax := vg.Length(0), 0.0
	for i, ln := range c.Lines {
		xy := make(plotter.XYs, 0, len(ln.X))
		for j := range ln.X {
			if ln.X[j] > 0 || !c.LogX {
				xy = append(xy, plotter.XY{X: ln.X[j], Y: ln.Y[j]})
				ymax = math.Max(ymax, ln.Y[j])
			}
		}
		if len(xy) == 0 {
			continue
		}
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		l.Color, s.Color = colorOf(i), colorOf(i)
		s.Shape = plotutil.Shape(i / 7)
		l.Dashes = plotutil.Dashes(i / 7)
		p.Add(l, s)
		leg.Add(ln.Label, l, s)
		legW = max(legW, leg.TextStyle.Width(ln.Label))
	}
	p.Y.Min, p.Y.Max = 0, math.Max(ymax*1.1, 1e-9)
	legW += leg.ThumbnailWidth + vg.Points(20)
	w, h := 7*vg.Inch+legW, 4.5*vg.Inch
	for _, path := range paths {
		if err := saveCanvas(path, w, h, func(dc draw.Canvas) {
			p.Draw(draw.Crop(dc, 0, -legW, 0, 0))
			leg.Draw(draw.Crop(dc, w-legW+vg.Points(6), 0, 0, -vg.Points(24)))
		}); err != nil {
			return err
		}
	}
	return nil
}

// pow2Ticks marks the powers of two of a log axis (512, 1k, 4k, ...).
type pow2Ticks struct{}

func (pow2Ticks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	lo, hi := math.Floor(math.Log2(min)), math.Ceil(math.Log2(max))
	step := math.Max(1, math.Ceil((hi-lo)/10))
	for e := lo; e <= hi; e += step {
		v := math.Exp2(e)
		if v < min || v > max {
			continue
		}
		ts = append(ts, plot.Tick{Value: v, Label: sizeLabel(v)})
	}
	return ts
}

func sizeLabel(v float64) string {
	switch {
	case v >= 1<<20 && math.Mod(v, 1<<20) == 0:
		return fmt.Sprintf("%.0fM", v/(1<<20))
	case v >= 1<<10 && math.Mod(v, 1<<10) == 0:
		return fmt.Sprintf("%.0fk", v/(1<<10))
	}
	return fmt.Sprintf("%g", v)
}

// Heatmap is a grid of values (NaN: not measured) over two named axes,
// each cell's value written in it.
type Heatmap struct {
	Title, XLabel, YLabel string
	X, Y                  []string
	Z                     [][]float64 // Z[y][x]
	Format                string      // of the cell text, e.g. "%.0f%%"
}

type grid struct{ h Heatmap }

func (g grid) Dims() (c, r int)   { return len(g.h.X), len(g.h.Y) }
func (g grid) Z(c, r int) float64 { return g.h.Z[r][c] }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }

// Save writes the chart to each path (.png, .svg).
func (c Heatmap) Save(paths ...string) error {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text, p.Y.Label.Text = c.XLabel, c.YLabel
	lo, hi := math.Inf(1), math.Inf(-1)
	var labels plotter.XYLabels
	for r, row := range c.Z {
		for col, z := range row {
			if math.IsNaN(z) {
				continue
			}
			lo, hi = math.Min(lo, z), math.Max(hi, z)
			labels.XYs = append(labels.XYs, plotter.XY{X: float64(col), Y: float64(r)})
			labels.Labels = append(labels.Labels, fmt.Sprintf(c.Format, z))
		}
	}
	if len(labels.Labels) == 0 {
		return fmt.Errorf("heatmap %q: no values", c.Title)
	}
	if hi == lo {
		hi = lo + 1
	}
	pal := moreland.SmoothBlueRed()
	pal.SetMin(lo)
	pal.SetMax(hi)
	hm := plotter.NewHeatMap(grid{c}, pal.Palette(64))
	hm.Min, hm.Max = lo, hi
	hm.NaN = colorNaN
	p.Add(hm)
	lb, err := plotter.NewLabels(labels)
	if err != nil {
		return err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].XAlign, lb.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
		lb.TextStyle[i].Font.Size = vg.Points(9)
	}
	p.Add(lb)
	p.NominalX(c.X...)
	p.NominalY(c.Y...)
	w := vg.Length(math.Max(5, 0.8*float64(len(c.X))+2)) * vg.Inch
	h := vg.Length(math.Max(3.5, 0.5*float64(len(c.Y))+2)) * vg.Inch
	return save(p, w, h, paths)
}
