package compare

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
)

// Ceiling is one ceiling of the roofline an input's points were measured
// against (its roofline.json): what bounds its machine, beside the points.
type Ceiling struct {
	Name  string // "fp32-fma isa=avx2 th=1", "read L3 th=1", "core clock"
	Kind  string // "fp32-fma", "read L3", "core clock"
	ISA   string // a compute ceiling's tier; "" for the others
	Unit  string
	Value float64
	Note  string // why the value is not to be trusted, if it is not
}

// Roofline says how an input's ceilings were measured.
type Roofline struct {
	Quick     bool
	SpreadPct float64 // the largest spread between a ceiling's passes
}

// CeilingRow is one ceiling across the inputs (NaN: the input lacks it).
type CeilingRow struct {
	Name, Kind, ISA, Unit string
	Values                []float64
	Notes                 []string
}

// ceilingsOf lists a roofline's ceilings: the core clock, every compute
// ceiling, then the read bandwidth of every level.
func ceilingsOf(r *roofline.Roofline) []Ceiling {
	var cs []Ceiling
	if r.Clock.CoreGHz > 0 {
		cs = append(cs, Ceiling{Name: "core clock", Kind: "core clock", Unit: "GHz", Value: r.Clock.CoreGHz})
	}
	for _, c := range r.Compute {
		cs = append(cs, Ceiling{Name: fmt.Sprintf("%s isa=%s th=%d", c.Kind, c.Tier, c.Threads), Kind: c.Kind, ISA: string(c.Tier), Unit: c.Unit, Value: c.Value, Note: c.Note})
	}
	for _, l := range r.Levels {
		c := Ceiling{Name: fmt.Sprintf("read %s th=%d", l.Name, l.Threads), Kind: "read " + l.Name, Unit: "GB/s", Value: l.GBs}
		if l.Unusable {
			c.Note = "not a bound: " + l.Note
		}
		cs = append(cs, c)
	}
	return cs
}

// loadRoofline reads the input's roofline: of the roofline.json files
// under it (a suite's, and the copy each step keeps), the one nearest its
// root. A machine that is not this one is what a comparison is for: its
// roofline is read all the same.
func (in *Input) loadRoofline(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	slices.SortFunc(paths, func(a, b string) int {
		if d := strings.Count(a, string(filepath.Separator)) - strings.Count(b, string(filepath.Separator)); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	r, err := readRoofline(paths[0])
	if err != nil {
		return err
	}
	in.Roofline = &Roofline{Quick: r.Quick, SpreadPct: r.MaxPassSpreadPct}
	in.Ceilings = ceilingsOf(r)
	if in.Machine.CPU == "" {
		in.Machine.CPU = machineCPU(r.Machine)
	}
	return nil
}

// readRoofline reads a roofline.json of any machine (a comparison is of
// other machines); one that cannot be read as a roofline is corrupt.
func readRoofline(path string) (*roofline.Roofline, error) {
	r, err := roofline.Load(path, machine.Info{})
	if err != nil && !errors.Is(err, roofline.ErrOtherMachine) {
		return nil, fmt.Errorf("%w: %v", results.ErrCorrupt, err)
	}
	return r, nil
}

// ratioText is v over base as a table cell: "1.234×", or "-" where either
// is missing.
func ratioText(v, base float64) string {
	if math.IsNaN(v) || !(base > 0) {
		return "-"
	}
	return fmt.Sprintf("%.3f×", v/base)
}

// ceilingRows puts the inputs' ceilings side by side, in the first
// input's order, then any the others add; a row needs the first input
// and one other.
func ceilingRows(ins []*Input) []CeilingRow {
	var rows []CeilingRow
	at := map[string]int{}
	for i, in := range ins {
		for _, c := range in.Ceilings {
			k, ok := at[c.Name]
			if !ok {
				k = len(rows)
				at[c.Name] = k
				r := CeilingRow{Name: c.Name, Kind: c.Kind, ISA: c.ISA, Unit: c.Unit, Values: make([]float64, len(ins)), Notes: make([]string, len(ins))}
				for j := range r.Values {
					r.Values[j] = math.NaN()
				}
				rows = append(rows, r)
			}
			rows[k].Values[i], rows[k].Notes[i] = c.Value, c.Note
		}
	}
	return slices.DeleteFunc(rows, func(r CeilingRow) bool {
		others := 0
		for _, v := range r.Values[1:] {
			if !math.IsNaN(v) {
				others++
			}
		}
		return math.IsNaN(r.Values[0]) || others == 0
	})
}
