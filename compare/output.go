package compare

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/ckbench/ckbench/plots"
)

// letter names input i in tables: A, B, C, ...
func letter(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return "I" + strconv.Itoa(i)
}

// WriteText writes the table for a terminal: the inputs with their
// machines, then per family/kernel each point's median ± its confidence
// interval per input and, for every input after the first, its ratio to
// the first with the p-value (~ where the difference is not significant),
// then the geomean of the ratios per tier.
func (t *Table) WriteText(w io.Writer) error {
	fmt.Fprintln(w, "inputs:")
	for i, in := range t.Inputs {
		fmt.Fprintf(w, "  %s  %s  %s%s\n", letter(i), in.Label, in.Machine, rooflineOf(in))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(t.Ceilings) > 0 {
		t.writeCeilings(tw)
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nmetric: %s (%s); median ± %.0f %% confidence interval; vs A: ratio, p-value of the U test (~: not significant at p < %.2g)\n",
		t.Metric.Unit(), t.Metric.direction(), Confidence*100, t.Alpha)
	group := ""
	for _, r := range t.Rows {
		if g := r.Family + "/" + r.Kernel; g != group {
			if group != "" {
				t.writeGeomeans(tw, group)
			}
			group = g
			groupHeader(tw, g, len(t.Inputs))
		}
		fmt.Fprintf(tw, "%s\t", pointName(r.Name))
		for i, c := range r.Cells {
			if c == nil {
				fmt.Fprint(tw, "-\t")
				if i > 0 {
					fmt.Fprint(tw, "\t")
				}
				continue
			}
			fmt.Fprintf(tw, "%s ±%s\t", num(c.Center), pct(c))
			if i > 0 {
				fmt.Fprintf(tw, "%s\t", ratio(c))
			}
		}
		fmt.Fprintln(tw)
	}
	if group != "" {
		t.writeGeomeans(tw, group)
	}
	return tw.Flush()
}

// rooflineOf says, for an input's line, whether its ceilings were
// measured quickly and how far their passes spread (above a few percent
// its host was busy, and so are its ceilings' ratios).
func rooflineOf(in *Input) string {
	if in.Roofline == nil {
		return ""
	}
	s := "; roofline"
	if in.Roofline.Quick {
		s += " (quick)"
	}
	return s + fmt.Sprintf(": passes spread up to %.0f %%", in.Roofline.SpreadPct)
}

// writeCeilings writes the ceilings block: each roofline ceiling per
// input and, after the first, its ratio to the first (higher is more).
func (t *Table) writeCeilings(tw io.Writer) {
	fmt.Fprintln(tw, "\nceilings (each input's roofline.json; higher is more; vs A: ratio; * not a bound there: see its roofline)")
	groupHeader(tw, "ceiling", len(t.Inputs))
	for _, r := range t.Ceilings {
		fmt.Fprintf(tw, "%s\t", r.Name)
		for i, v := range r.Values {
			switch {
			case math.IsNaN(v):
				fmt.Fprint(tw, "-\t")
			case r.Notes[i] != "":
				fmt.Fprintf(tw, "%s %s *\t", num(v), r.Unit)
			default:
				fmt.Fprintf(tw, "%s %s\t", num(v), r.Unit)
			}
			if i > 0 {
				fmt.Fprintf(tw, "%s\t", ratioText(v, r.Values[0]))
			}
		}
		fmt.Fprintln(tw)
	}
}

// writeGeomeans writes the geomean line of each tier of the family/kernel
// group.
func (t *Table) writeGeomeans(w io.Writer, group string) {
	for _, k := range t.GroupKeys() {
		isa, ok := strings.CutPrefix(k, group+"/")
		if !ok || strings.Contains(isa, "/") {
			continue
		}
		fmt.Fprintf(w, "geomean %s\t", isa)
		for i, g := range t.Geomean[k] {
			fmt.Fprint(w, "\t")
			if i > 0 {
				if math.IsNaN(g) {
					fmt.Fprint(w, "-\t")
				} else {
					fmt.Fprintf(w, "%.3f×\t", g)
				}
			}
		}
		fmt.Fprintln(w)
	}
}

// pointName is a row's name without its family and kernel.
func pointName(name string) string {
	parts := strings.SplitN(name, "/", 3)
	if len(parts) < 3 {
		return name
	}
	return parts[2]
}

func num(x float64) string {
	switch a := math.Abs(x); {
	case a >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case a >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// pct is the confidence interval's half-width in % of the median (∞ where
// the samples are too few for one).
func pct(c *Cell) string {
	if c.Center == 0 || math.IsInf(c.Lo, 0) || math.IsInf(c.Hi, 0) {
		return "∞"
	}
	return fmt.Sprintf("%.0f%%", 100*math.Max(c.Hi-c.Center, c.Center-c.Lo)/math.Abs(c.Center))
}

func ratio(c *Cell) string {
	if math.IsNaN(c.Ratio) {
		return "-"
	}
	if !c.Significant {
		return fmt.Sprintf("~ (p=%.3f n=%d)", c.P, c.N)
	}
	return fmt.Sprintf("%.3f× (p=%.3f n=%d)", c.Ratio, c.P, c.N)
}

// WriteCSV writes one line per point and input: compare.csv; first the
// ceilings, one line per ceiling and input (family "ceiling", metric
// "ceiling", the value as the median).
func (t *Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"name", "family", "kernel", "isa", "input", "label", "machine", "metric", "unit", "n", "median", "ci_lo", "ci_hi", "ratio_vs_first", "p_value", "significant"})
	f := func(x float64) string {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return ""
		}
		return strconv.FormatFloat(x, 'g', 6, 64)
	}
	for _, r := range t.Ceilings {
		for i, v := range r.Values {
			if math.IsNaN(v) {
				continue
			}
			in := t.Inputs[i]
			ratio := math.NaN()
			if i > 0 && r.Values[0] > 0 {
				ratio = v / r.Values[0]
			}
			cw.Write([]string{r.Name, "ceiling", r.Kind, r.ISA, letter(i), in.Label, in.Machine.String(), "ceiling", r.Unit,
				"1", f(v), "", "", f(ratio), "", ""})
		}
	}
	for _, r := range t.Rows {
		for i, c := range r.Cells {
			if c == nil {
				continue
			}
			in := t.Inputs[i]
			sig := ""
			if i > 0 {
				sig = strconv.FormatBool(c.Significant)
			}
			cw.Write([]string{r.Name, r.Family, r.Kernel, r.ISA, letter(i), in.Label, in.Machine.String(), string(t.Metric), t.Metric.Unit(),
				strconv.Itoa(c.N), f(c.Center), f(c.Lo), f(c.Hi), f(c.Ratio), f(c.P), sig})
		}
	}
	cw.Flush()
	return cw.Error()
}

// Chart is compare.png: per kernel×tier, each later input's geomean ratio
// to the first (the dashed line at 1 is the first input).
//
// Rooflines alone (no point compared) chart their ceilings' ratios.
func (t *Table) Chart() plots.Bars {
	if len(t.Rows) == 0 {
		return t.ceilingChart()
	}
	groups := t.GroupKeys()
	c := plots.Bars{Title: fmt.Sprintf("%s against A = %s", t.Metric.Unit(), t.Inputs[0].Label), YLabel: "ratio to A (geomean over points)", Groups: groups, Ref: 1}
	if !t.Metric.HigherIsBetter() {
		c.YLabel += ", below 1 is faster"
	}
	for i := 1; i < len(t.Inputs); i++ {
		s := plots.BarSeries{Label: fmt.Sprintf("%s: %s, %s", letter(i), t.Inputs[i].Label, t.Inputs[i].Machine.CPU)}
		for _, g := range groups {
			s.Values = append(s.Values, t.Geomean[g][i])
		}
		c.Series = append(c.Series, s)
	}
	return c
}

// direction says which way m improves, for a table's heading.
func (m Metric) direction() string {
	if m.HigherIsBetter() {
		return "higher is better"
	}
	return "lower is better"
}

// groupHeader starts a kernel's block of a comparison table: its name,
// then a column per input (A, B, …), each after the first with its "vs A".
func groupHeader(tw io.Writer, group string, inputs int) {
	fmt.Fprintf(tw, "\n%s\t", group)
	for i := range inputs {
		fmt.Fprintf(tw, "%s\t", letter(i))
		if i > 0 {
			fmt.Fprint(tw, "vs A\t")
		}
	}
	fmt.Fprintln(tw)
}

// ceilingChart is compare.png of rooflines alone: per ceiling, each later
// input's value over the first's.
func (t *Table) ceilingChart() plots.Bars {
	c := plots.Bars{Title: "roofline ceilings against A = " + t.Inputs[0].Label, YLabel: "ratio to A, above 1 is more", Ref: 1}
	for _, r := range t.Ceilings {
		c.Groups = append(c.Groups, r.Name)
	}
	for i := 1; i < len(t.Inputs); i++ {
		s := plots.BarSeries{Label: fmt.Sprintf("%s: %s, %s", letter(i), t.Inputs[i].Label, t.Inputs[i].Machine.CPU)}
		for _, r := range t.Ceilings {
			s.Values = append(s.Values, r.Values[i]/r.Values[0])
		}
		c.Series = append(c.Series, s)
	}
	return c
}
