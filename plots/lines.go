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
	return Panels{Panels: []Lines{c}}.Save(paths...)
}

// Panels is a row (or grid) of Lines charts sharing one legend and one
// colour per label: a panel per head dim, say.
type Panels struct {
	Title  string // above all the panels (each keeps its own)
	Panels []Lines
}

// Save writes the panels to each path (.png, .svg): up to three a row,
// the legend beside them.
func (c Panels) Save(paths ...string) error {
	if len(c.Panels) == 0 {
		return fmt.Errorf("no panels")
	}
	index := map[string]int{}
	var labels []string
	for _, pn := range c.Panels {
		for _, ln := range pn.Lines {
			if _, ok := index[ln.Label]; !ok {
				index[ln.Label] = len(labels)
				labels = append(labels, ln.Label)
			}
		}
	}
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = vg.Points(9)
	var ps []*plot.Plot
	legW := vg.Length(0)
	added := map[string]bool{}
	for _, pn := range c.Panels {
		p := plot.New()
		p.Title.Text = pn.Title
		p.X.Label.Text, p.Y.Label.Text = pn.XLabel, pn.YLabel
		if pn.LogX {
			p.X.Scale = plot.LogScale{}
			p.X.Tick.Marker = pow2Ticks{}
		}
		ymax := 0.0
		for _, ln := range pn.Lines {
			xy := make(plotter.XYs, 0, len(ln.X))
			for j := range ln.X {
				if ln.X[j] > 0 || !pn.LogX {
					xy = append(xy, plotter.XY{X: ln.X[j], Y: ln.Y[j]})
					ymax = math.Max(ymax, ln.Y[j])
				}
			}
			if len(xy) == 0 {
				continue
			}
			l, sc, err := plotter.NewLinePoints(xy)
			if err != nil {
				return err
			}
			i := index[ln.Label]
			l.Color, sc.Color = colorOf(i), colorOf(i)
			sc.Shape = plotutil.Shape(i / len(palette))
			l.Dashes = plotutil.Dashes(i / len(palette))
			p.Add(l, sc)
			if !added[ln.Label] {
				added[ln.Label] = true
				leg.Add(ln.Label, l, sc)
				legW = max(legW, leg.TextStyle.Width(ln.Label))
			}
		}
		p.Y.Min, p.Y.Max = 0, math.Max(ymax*1.1, 1e-9)
		ps = append(ps, p)
	}
	cols := min(len(ps), 3)
	rows := (len(ps) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
		for col := range cols {
			if k := r*cols + col; k < len(ps) {
				grid[r][col] = ps[k]
			} else { // plot.Align needs every cell: an empty one
				e := plot.New()
				e.HideAxes()
				grid[r][col] = e
			}
		}
	}
	legW += leg.ThumbnailWidth + vg.Points(20)
	top := vg.Length(0)
	if c.Title != "" {
		top = vg.Points(22)
	}
	panelW := 7 * vg.Inch
	if len(ps) > 1 {
		panelW = 4.5 * vg.Inch
	}
	w, h := panelW*vg.Length(cols)+legW, 4.5*vg.Inch*vg.Length(rows)+top
	for _, path := range paths {
		if err := saveCanvas(path, w, h, func(dc draw.Canvas) {
			area := draw.Crop(dc, 0, -legW, 0, -top)
			tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(8), PadY: vg.Points(8)}
			canvases := plot.Align(grid, tiles, area)
			for r := range grid {
				for col, p := range grid[r] {
					p.Draw(canvases[r][col])
				}
			}
			leg.Draw(draw.Crop(dc, w-legW+vg.Points(6), 0, 0, -vg.Points(24)-top))
			if c.Title != "" {
				sty := leg.TextStyle
				sty.Font.Size = vg.Points(13)
				sty.XAlign = draw.XCenter
				dc.FillText(sty, vg.Point{X: (w - legW) / 2, Y: h - vg.Points(17)}, c.Title)
			}
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
