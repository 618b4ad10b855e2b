package plots

import "github.com/ckbench/ckbench/results"

// MarksFrom places every timed record with a FLOP rate on a roofline chart:
// colored by kernel, shaped by tier, its memory level beside it.
func MarksFrom(recs []results.Record) []Mark {
	var marks []Mark
	for _, rec := range recs {
		if rec.GFlops.Valid() && rec.AI.Valid() && rec.GFlops > 0 {
			marks = append(marks, Mark{Series: rec.Kernel, Group: rec.ISA, Level: rec.Level, AI: float64(rec.AI), GFlops: float64(rec.GFlops)})
		}
	}
	return marks
}
