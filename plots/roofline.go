package plots

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Roof is a horizontal compute ceiling: FP32 FMA in GFLOP/s, or (Int8)
// the int8 dot product's in GOP/s, drawn apart.
type Roof struct {
	Label  string
	GFlops float64
	Int8   bool
}

// Slope is a bandwidth ceiling: GFLOP/s = AI × GB/s.
type Slope struct {
	Label string
	GBs   float64
}

// Mark is one measured point: colored by Series (the kernel), shaped by
// Group (the tier), sized by Level (L1, L2, L3, DRAM: where its data
// lives; larger further out), the level also written beside it where
// there is room.
type Mark struct {
	Series, Group, Level string
	AI, GFlops           float64
}

// Roofline is a log-log chart of FLOP/s against arithmetic intensity:
// each roof drawn from where the fastest bandwidth meets it, each
// bandwidth diagonal up to where it meets the highest roof (a ceiling
// only where it binds), the points over them, the legend beside the plot
// (never over a ceiling) and labels placed where they overlap nothing.
type Roofline struct {
	Title  string
	Roofs  []Roof
	Slopes []Slope
	Marks  []Mark

	// Placed receives, after Save, the boxes of the labels drawn (in the
	// last file's canvas coordinates): for tests.
	Placed *[]vg.Rectangle
}

// Save writes the chart to each path; the extension picks the format
// (.png, .svg). Files are written under a temporary name and renamed.
func (c Roofline) Save(paths ...string) error {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = "arithmetic intensity (FLOP/byte)"
	p.Y.Label.Text = "GFLOP/s (int8 roofs: GOP/s)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}

	xmin, xmax := 1.0/64, 64.0
	for _, m := range c.Marks {
		if m.AI > 0 {
			xmin, xmax = math.Min(xmin, m.AI/2), math.Max(xmax, m.AI*2)
		}
	}
	top, fastest := 0.0, 0.0
	for _, r := range c.Roofs {
		top = math.Max(top, r.GFlops)
	}
	for _, s := range c.Slopes {
		fastest = math.Max(fastest, s.GBs)
	}
	ymin := math.Inf(1)
	for _, s := range c.Slopes {
		ymin = math.Min(ymin, xmin*s.GBs)
	}
	for _, m := range c.Marks {
		if m.GFlops > 0 {
			ymin = math.Min(ymin, m.GFlops/2)
		}
	}
	if math.IsInf(ymin, 1) || top == 0 {
		ymin = math.Max(top, 1) / 1000
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = xmin, xmax, ymin, math.Max(top, ymin*10)*2.5

	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = vg.Points(9)
	leg.ThumbnailWidth = vg.Points(14)

	lbl := &labeler{style: text.Style{Font: font.From(plot.DefaultFont, vg.Points(7)), Handler: plot.DefaultTextHandler}}
	for i, r := range c.Roofs {
		x0 := xmin
		if fastest > 0 {
			x0 = math.Max(xmin, r.GFlops/fastest) // the roof binds right of the fastest diagonal
		}
		l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: r.GFlops}, {X: xmax, Y: r.GFlops}})
		if err != nil {
			return err
		}
		l.Color, l.Dashes = color.Gray{Y: 40}, []vg.Length{vg.Points(5), vg.Points(2 + float64(i%3))}
		unit := "GFLOP/s"
		if r.Int8 {
			l.Color, l.Dashes = color.RGBA{R: 150, G: 90, B: 20, A: 255}, []vg.Length{vg.Points(1), vg.Points(2)}
			unit = "GOP/s"
		}
		p.Add(l)
		lbl.lines = append(lbl.lines, lineLabel{text: fmt.Sprintf("%s %.0f %s", r.Label, r.GFlops, unit), x0: x0, y0: r.GFlops, x1: xmax, y1: r.GFlops})
	}
	for _, s := range c.Slopes {
		end := xmax
		if top > 0 {
			end = math.Min(xmax, top/s.GBs) // up to the highest roof
		}
		l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: xmin * s.GBs}, {X: end, Y: end * s.GBs}})
		if err != nil {
			return err
		}
		l.Color = color.Gray{Y: 110}
		p.Add(l)
		lbl.lines = append(lbl.lines, lineLabel{text: fmt.Sprintf("%s %.0f GB/s", s.Label, s.GBs), x0: xmin, y0: xmin * s.GBs, x1: end, y1: end * s.GBs})
	}
	if err := addMarks(p, &leg, c.Marks); err != nil {
		return err
	}
	if len(c.Marks) <= 60 {
		for _, m := range c.Marks {
			if m.Level != "" && m.AI > 0 && m.GFlops > 0 {
				lbl.points = append(lbl.points, pointLabel{text: m.Level, x: m.AI, y: m.GFlops})
			}
		}
	}
	p.Add(lbl)

	// The legend's width: its longest entry, plus the thumbnail.
	legW := vg.Length(0)
	for _, e := range legendTexts(c.Marks) {
		legW = max(legW, leg.TextStyle.Width(e))
	}
	if legW > 0 {
		legW += leg.ThumbnailWidth + vg.Points(16)
	}
	w, h := 9*vg.Inch+legW, 6*vg.Inch
	for _, path := range paths {
		err := saveCanvas(path, w, h, func(dc draw.Canvas) {
			p.Draw(draw.Crop(dc, 0, -legW, 0, 0))
			if legW > 0 {
				ld := draw.Crop(dc, w-legW+vg.Points(6), 0, 0, -vg.Points(30))
				leg.Draw(ld)
			}
		})
		if err != nil {
			return err
		}
	}
	if c.Placed != nil {
		*c.Placed = lbl.placed
	}
	return nil
}

// legendTexts are the legend's entries for marks (as addMarks makes them).
func legendTexts(marks []Mark) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range marks {
		if !(m.AI > 0 && m.GFlops > 0) {
			continue
		}
		for _, s := range []string{m.Series, "tier " + m.Group, "data in " + m.Level} {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// addMarks plots the points, one color per series (kernel) and one shape
// per group (tier); the legend names each color and each shape once.
func addMarks(p *plot.Plot, leg *plot.Legend, marks []Mark) error {
	var series, groups []string
	index := func(list *[]string, s string) int {
		for i, x := range *list {
			if x == s {
				return i
			}
		}
		*list = append(*list, s)
		return len(*list) - 1
	}
	type key struct {
		s, g  int
		level string
	}
	pts := map[key]plotter.XYs{}
	var order []key
	levels := map[string]bool{}
	for _, m := range marks {
		if !(m.AI > 0 && m.GFlops > 0) {
			continue
		}
		k := key{index(&series, m.Series), index(&groups, m.Group), m.Level}
		if _, ok := pts[k]; !ok {
			order = append(order, k)
		}
		pts[k] = append(pts[k], plotter.XY{X: m.AI, Y: m.GFlops})
		levels[m.Level] = true
	}
	for _, k := range order {
		sc, err := plotter.NewScatter(pts[k])
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color = colorOf(k.s)
		sc.GlyphStyle.Shape = plotutil.Shape(k.g)
		sc.GlyphStyle.Radius = levelRadius(k.level)
		p.Add(sc)
	}
	for i, s := range series {
		leg.Add(s, &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: colorOf(i), Shape: draw.BoxGlyph{}, Radius: vg.Points(3)}})
	}
	for i, g := range groups {
		leg.Add("tier "+g, &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: color.Gray{Y: 60}, Shape: plotutil.Shape(i), Radius: vg.Points(3)}})
	}
	for _, l := range levelOrder {
		if levels[l] {
			leg.Add("data in "+l, &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: color.Gray{Y: 60}, Shape: draw.RingGlyph{}, Radius: levelRadius(l)}})
		}
	}
	return nil
}

// levelOrder lists the memory levels from the nearest.
var levelOrder = []string{"L1", "L2", "L3", "DRAM"}

// levelRadius is a mark's size by the level its data lives in: the
// further from the core, the larger, so the level shows on every point.
func levelRadius(level string) vg.Length {
	switch level {
	case "L1":
		return vg.Points(2)
	case "L2":
		return vg.Points(2.8)
	case "L3":
		return vg.Points(3.6)
	case "DRAM":
		return vg.Points(4.6)
	}
	return vg.Points(3)
}

// lineLabel labels a ceiling running from (x0, y0) to (x1, y1) in data
// coordinates; pointLabel a mark.
type lineLabel struct {
	text           string
	x0, y0, x1, y1 float64
}

type pointLabel struct {
	text string
	x, y float64
}

// labeler draws the labels of the ceilings and points where each
// overlaps no label drawn before it and stays inside the data area: a
// ceiling's label tries positions along its line, right to left; a
// point's, the four sides of the point. A label with no free position is
// left out (the report's ceilings table has every value).
type labeler struct {
	style  text.Style
	lines  []lineLabel
	points []pointLabel
	placed []vg.Rectangle
}

func (l *labeler) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	l.placed = l.placed[:0]
	free := func(r vg.Rectangle) bool {
		if r.Min.X < c.Min.X || r.Max.X > c.Max.X || r.Min.Y < c.Min.Y || r.Max.Y > c.Max.Y {
			return false
		}
		for _, q := range l.placed {
			if overlaps(r, q) {
				return false
			}
		}
		return true
	}
	draw1 := func(r vg.Rectangle, s string) {
		l.placed = append(l.placed, r)
		c.FillText(l.style, r.Min, s)
	}
	pad := vg.Points(1.5)
	for _, ln := range l.lines {
		w, h := l.style.Width(ln.text), l.style.Height(ln.text)
		x0, y0, x1, y1 := tx(ln.x0), ty(ln.y0), tx(ln.x1), ty(ln.y1)
		const steps = 40
		for i := 1; i < steps; i++ {
			// A roof's label sits above its right end, moving left; a
			// diagonal's starts at its low end, where the diagonals are
			// furthest apart, just left of and above the line.
			f := 1 - float64(i)/steps
			r := vg.Rectangle{}
			if y1 == y0 {
				px := x0 + (x1-x0)*vg.Length(f)
				r = vg.Rectangle{Min: vg.Point{X: px - w, Y: y0 + pad}, Max: vg.Point{X: px, Y: y0 + pad + h}}
			} else {
				f = 1 - f
				px, py := x0+(x1-x0)*vg.Length(f), y0+(y1-y0)*vg.Length(f)
				r = vg.Rectangle{Min: vg.Point{X: px - w, Y: py + pad}, Max: vg.Point{X: px, Y: py + pad + h}}
			}
			if free(r) {
				draw1(r, ln.text)
				break
			}
		}
	}
	for _, pt := range l.points {
		w, h := l.style.Width(pt.text), l.style.Height(pt.text)
		x, y := tx(pt.x), ty(pt.y)
		d := vg.Points(4)
		for _, r := range []vg.Rectangle{
			{Min: vg.Point{X: x + d, Y: y - h/2}, Max: vg.Point{X: x + d + w, Y: y + h/2}},
			{Min: vg.Point{X: x - d - w, Y: y - h/2}, Max: vg.Point{X: x - d, Y: y + h/2}},
			{Min: vg.Point{X: x - w/2, Y: y + d}, Max: vg.Point{X: x + w/2, Y: y + d + h}},
			{Min: vg.Point{X: x - w/2, Y: y - d - h}, Max: vg.Point{X: x + w/2, Y: y - d}},
		} {
			if free(r) {
				draw1(r, pt.text)
				break
			}
		}
	}
}

// overlaps reports whether two rectangles share more than an edge.
func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

// saveCanvas draws a w×h picture with paint and writes it to path (.png
// or .svg) through a temporary file and a rename.
func saveCanvas(path string, w, h vg.Length, paint func(draw.Canvas)) error {
	ext := strings.ToLower(filepath.Ext(path))
	var cv interface {
		vg.CanvasSizer
		WriteTo(w io.Writer) (int64, error)
	}
	switch ext {
	case ".png":
		cv = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	case ".svg":
		cv = vgsvg.New(w, h)
	default:
		return fmt.Errorf("writing %s: unknown image format %q (png, svg)", path, ext)
	}
	paint(draw.New(cv))
	tmp := strings.TrimSuffix(path, ext) + ".tmp" + ext
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := cv.WriteTo(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
