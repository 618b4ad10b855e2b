package plots

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// BarSeries is one bar per group (NaN: none).
type BarSeries struct {
	Label  string
	Values []float64
}

// Bars is a grouped bar chart: a group per category (on the x axis, its
// name turned to stay readable), a bar per series in each, a dashed
// horizontal reference line at Ref when it is not zero (1 for ratios).
type Bars struct {
	Title, YLabel string
	Groups        []string
	Series        []BarSeries
	Ref           float64
	// Stacked: every group has a value in one series only (a node of one
	// CPU model): its bar is centred, the series told apart by colour.
	Stacked bool
}

// Save writes the chart to each path (.png, .svg); it widens with the
// number of groups.
func (c Bars) Save(paths ...string) error {
	p := plot.New()
	p.Title.Text = c.Title
	p.Y.Label.Text = c.YLabel
	p.Legend.Top = true
	n := max(len(c.Series), 1)
	if c.Stacked {
		n = 1
	}
	w := vg.Points(math.Max(4, 36/float64(n)))
	ymax := c.Ref
	for i, s := range c.Series {
		vals := make(plotter.Values, len(c.Groups))
		for j := range vals {
			if j < len(s.Values) && !math.IsNaN(s.Values[j]) {
				vals[j] = s.Values[j]
				ymax = math.Max(ymax, s.Values[j])
			}
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		b.Color = colorOf(i)
		b.LineStyle.Width = 0
		if !c.Stacked {
			b.Offset = w * vg.Length(float64(i)-float64(n-1)/2)
		}
		p.Add(b)
		p.Legend.Add(s.Label, b)
	}
	if c.Ref != 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: c.Ref}, {X: float64(len(c.Groups)) - 0.5, Y: c.Ref}})
		if err != nil {
			return err
		}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
	}
	p.NominalX(c.Groups...)
	p.X.Tick.Label.Rotation = math.Pi / 4
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.Y.Min, p.Y.Max = 0, ymax*1.2
	width := vg.Length(math.Max(8, 0.5*float64(len(c.Groups)*n)/2+3)) * vg.Inch
	return save(p, width, 5.5*vg.Inch, paths)
}

// colorNaN paints cells without a value.
var colorNaN = color.Gray{Y: 235}

// palette is 20 colours told apart (Tableau 20): a sweep has more kernels
// than plotutil's seven.
var palette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}, {148, 103, 189, 255},
	{140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255},
	{174, 199, 232, 255}, {255, 187, 120, 255}, {152, 223, 138, 255}, {255, 152, 150, 255}, {197, 176, 213, 255},
	{196, 156, 148, 255}, {247, 182, 210, 255}, {199, 199, 199, 255}, {219, 219, 141, 255}, {158, 218, 229, 255},
}

// colorOf is the i-th colour of palette (cycling).
func colorOf(i int) color.Color { return palette[i%len(palette)] }
