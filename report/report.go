package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
)

// Run is one results folder as a report reads it.
type Run struct {
	Dir      string
	Meta     results.Meta
	Recs     []results.Record
	Roofline *roofline.Roofline // nil when the folder has none
}

// ErrNoResults: a folder holds no results folder (machine.json with
// points.jsonl).
var ErrNoResults = errors.New("no results")

// Load reads every results folder in or under dirs, each once: a folder with a
// machine.json and a points.jsonl (a run killed before its first point
// has only machine.json: it is skipped, with its name in the returned
// notes). A corrupt points.jsonl is an error naming the line, and so is
// a missing one where machine.json counts points.
func Load(dirs ...string) (runs []Run, notes []string, err error) {
	// A folder named twice, or inside another one named (out and
	// out/<run-id>), is read once: its points would count twice.
	seen := map[string]bool{}
	for _, dir := range dirs {
		st, err := os.Stat(dir)
		if err != nil {
			return nil, nil, err
		}
		if !st.IsDir() {
			return nil, nil, fmt.Errorf("%s: not a folder (give a results folder, or a folder of them)", dir)
		}
		found := 0
		err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() || d.Name() == "report" {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if _, err := os.Stat(filepath.Join(p, "machine.json")); err != nil {
				return nil
			}
			abs, err := filepath.Abs(p)
			if err != nil {
				return err
			}
			if seen[abs] {
				found++
				return nil
			}
			seen[abs] = true
			meta, err := results.ReadMeta(p)
			if err != nil {
				return err
			}
			recs, err := results.ReadPoints(p)
			if errors.Is(err, fs.ErrNotExist) {
				if meta.Points > 0 {
					return fmt.Errorf("%s: %w: machine.json counts %d points but points.jsonl is missing (restore it from a copy of the folder, or measure again)", p, results.ErrCorrupt, meta.Points)
				}
				if _, rerr := os.Stat(filepath.Join(p, "roofline.json")); rerr != nil {
					notes = append(notes, fmt.Sprintf("%s: no points.jsonl (a run stopped before its first point): left out", p))
					return nil
				}
			} else if err != nil {
				return err
			}
			run := Run{Dir: p, Meta: meta, Recs: recs}
			if b, err := os.ReadFile(filepath.Join(p, "roofline.json")); err == nil {
				var r roofline.Roofline
				if err := json.Unmarshal(b, &r); err != nil {
					return fmt.Errorf("%s: %w: %v", filepath.Join(p, "roofline.json"), results.ErrCorrupt, err)
				}
				run.Roofline = &r
			}
			runs = append(runs, run)
			found++
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		if found == 0 {
			return nil, nil, fmt.Errorf("%s: %w: no results folder (machine.json and points.jsonl) in it or below it", dir, ErrNoResults)
		}
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Meta.Started.Before(runs[j].Meta.Started) })
	return runs, notes, nil
}

// records is every record of the runs.
func records(runs []Run) []results.Record {
	var all []results.Record
	for _, r := range runs {
		all = append(all, r.Recs...)
	}
	return all
}

// machines are the distinct machines of the runs (by CPU brand, family,
// model): a report of one machine says so; of several, it names each.
func machines(runs []Run) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range runs {
		s := r.Meta.Machine.CPUName()
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// rooflineOf is the roofline of the runs: the newest of those of the first
// machine.
func rooflineOf(runs []Run) *roofline.Roofline {
	var best *roofline.Roofline
	for _, r := range runs {
		if r.Roofline != nil && (best == nil || r.Roofline.Created.After(best.Created)) {
			best = r.Roofline
		}
	}
	return best
}

// command is a run's command line as one shell line.
func command(m results.Meta) string {
	var parts []string
	for _, a := range m.Command {
		if a == "" || strings.ContainsAny(a, " '\"$*?") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}
