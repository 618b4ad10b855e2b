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
		fmt.Fprintf(w, "  %s  %s  %s\n", letter(i), in.Label, in.Machine)
	}
	fmt.Fprintf(w, "metric: %s (%s); median ± %.0f %% confidence interval; vs A: ratio, p-value of the U test (~: not significant at p < %.2g)\n",
		t.Metric.Unit(), t.Metric.direction(), Confidence*100, t.Alpha)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
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

// WriteCSV writes one line per point and input: compare.csv.
func (t *Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"name", "family", "kernel", "isa", "input", "label", "machine", "metric", "unit", "n", "median", "ci_lo", "ci_hi", "ratio_vs_first", "p_value", "significant"})
	f := func(x float64) string {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return ""
		}
		return strconv.FormatFloat(x, 'g', 6, 64)
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
func (t *Table) Chart() plots.Bars {
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
