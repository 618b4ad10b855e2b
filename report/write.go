package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ckbench/ckbench/compare"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
)

// page is what index.html and report.md show.
type page struct {
	Title     string
	Machines  []string
	Facts     [][2]string // machine summary
	Tiers     [][3]string // tier, runs?, reason
	Counters  [][3]string // event, available?, reason
	Commands  []string
	Ceilings  [][]string // kind, tier, threads, value
	Levels    [][]string // level, threads, GB/s, window
	Figures   []figure
	Top, Low  [][]string // point, tier, th, status, pct_of_bound, pct_of_read, rate, level
	Flagged   [][]string // point, status, reason
	MoreFlags int
	// SpreadNote: a flagged point's reason had results.SpreadAdvice,
	// which the table leaves out and the page says once.
	SpreadNote bool
	Counts     string
	Notes      []string
	// Fleet: the nodes, when the data holds more than one host.
	Nodes [][]string // host, model, then compare.NodeScore.Cells, then the flag
}

// nodeHeader names the columns of the Nodes table.
var nodeHeader = slices.Concat([]string{"node", "CPU model"}, compare.CellNames, []string{"flag"})

// pointHeader names the columns of the Top and Low tables.
var pointHeader = []string{"point", "tier", "th", "status", "% of bound", "% of read", "rate", "level"}

// rankedNote heads the Top table: which points are not ranked.
const rankedNote = "The read loops the points are paired with (kv-read, w-read, kv-copy) are not ranked: they are the in-run ceilings, at 100 % of their own rate."

// Write builds the report of runs into out (index.html, report.md, every
// chart as .png and .svg), in a new folder renamed into place at the
// end: a report that fails halfway leaves the last one as it was. It
// returns the path of index.html.
func Write(out string, runs []Run, notes []string) (string, error) {
	pg := build(runs, notes)
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(out)), ".report-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	var kept []figure
	for _, f := range pg.Figures {
		if err := f.save(filepath.Join(tmp, f.Name+".png"), filepath.Join(tmp, f.Name+".svg")); err != nil {
			pg.Notes = append(pg.Notes, fmt.Sprintf("chart %s not drawn: %v", f.Name, err))
			continue
		}
		kept = append(kept, f)
	}
	pg.Figures = kept
	var html, md bytes.Buffer
	if err := htmlPage.Execute(&html, pg); err != nil {
		return "", err
	}
	writeMarkdown(&md, pg)
	if err := os.WriteFile(filepath.Join(tmp, "index.html"), html.Bytes(), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, "report.md"), md.Bytes(), 0o644); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	old := out + ".old"
	os.RemoveAll(old)
	if _, err := os.Stat(out); err == nil {
		if err := os.Rename(out, old); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Rename(old, out)
		return "", err
	}
	os.RemoveAll(old)
	return filepath.Join(out, "index.html"), nil
}

func build(runs []Run, notes []string) page {
	recs := records(runs)
	pg := page{Machines: machines(runs), Notes: notes}
	pg.Title = "ckbench report: " + strings.Join(pg.Machines, " · ")
	m := runs[0].Meta.Machine
	cache := func(n int) string {
		if n <= 0 {
			return "-"
		}
		if n >= 1<<20 {
			return fmt.Sprintf("%d MiB", n>>20)
		}
		return fmt.Sprintf("%d KiB", n>>10)
	}
	caches := fmt.Sprintf("L1d %s, L2 %s, L3 %s (as cpuid reports them)", cache(m.Cache.L1D), cache(m.Cache.L2), cache(m.Cache.L3))
	if rf := rooflineOf(runs); rf != nil && rf.L3FromCurve > 0 { // set only where cpuid reports no L3
		caches += fmt.Sprintf("; the L3 is %s as the read curve shows it", cache(int(rf.L3FromCurve)))
	}
	pg.Facts = [][2]string{
		{"CPU", fmt.Sprintf("%s (%s, family %d model %d stepping %d, microcode %s)", m.CPU.Brand, m.CPU.Vendor, m.CPU.Family, m.CPU.Model, m.CPU.Stepping, orDash(m.CPU.Microcode))},
		{"host", orDash(m.Host)},
		{"cores", fmt.Sprintf("%d physical, %d logical (%d per core); %d CPUs usable", m.CPU.PhysicalCores, m.CPU.LogicalCores, m.CPU.ThreadsPerCore, m.OS.CPUs)},
		{"caches", caches},
		{"OS", fmt.Sprintf("%s/%s %s", m.OS.GOOS, m.OS.GOARCH, m.OS.Kernel)},
		{"ckbench", fmt.Sprintf("%s, %s", runs[0].Meta.Ckbench, runs[0].Meta.Go)},
	}
	if m.CPU.Hypervisor != "" {
		pg.Facts = append(pg.Facts, [2]string{"hypervisor", m.CPU.Hypervisor})
	}
	for _, t := range m.Tiers {
		runs := "runs"
		if !t.Runs {
			runs = "skipped"
		}
		pg.Tiers = append(pg.Tiers, [3]string{string(t.Tier), runs, t.Reason})
	}
	pg.Counters = counterRows(m.Counters.Events)
	for _, r := range runs {
		if len(r.Meta.Command) > 0 {
			s := command(r.Meta)
			if !r.Meta.Complete {
				s += "   # interrupted: " + fmt.Sprint(r.Meta.Points) + " of " + fmt.Sprint(r.Meta.Planned) + " points"
			}
			if !slices.Contains(pg.Commands, s) { // sweep all's steps share its command
				pg.Commands = append(pg.Commands, s)
			}
		}
	}
	rf := rooflineOf(runs)
	if rf != nil {
		for _, c := range rf.Compute {
			pg.Ceilings = append(pg.Ceilings, []string{c.Kind, string(c.Tier), fmt.Sprint(c.Threads), fmt.Sprintf("%.1f %s", c.Value, c.Unit)})
		}
		for _, l := range rf.Levels {
			pg.Levels = append(pg.Levels, []string{l.Name, fmt.Sprint(l.Threads), fmt.Sprintf("%.1f", l.GBs), fmt.Sprintf("%s … %s", bytesLabel(l.Lo), bytesLabel(l.Hi))})
		}
		rc := RooflineChart(rf, recs)
		pg.Figures = append(pg.Figures, figure{Name: "roofline", Title: rc.Title,
			Caption: "Every ok point on the roofline measured on this machine: colour the kernel, shape the tier, size the memory level its data lives in (larger further from the core; written beside the point where there is room). Ceilings are drawn where they bind; int8 roofs (dotted) are in GOP/s.", save: rc.Save})
		bc := BandwidthChart(rf)
		pg.Figures = append(pg.Figures, figure{Name: "bandwidth", Title: bc.Title, Caption: "Read, copy and write bandwidth against the working set per thread; the cpuid cache sizes marked.", save: bc.Save})
	} else {
		pg.Notes = append(pg.Notes, "no roofline.json in these folders: no roofline chart or ceilings (run ckbench roofline, or a sweep with its default --roofline auto)")
	}
	okRecs := make([]results.Record, 0, len(recs))
	for _, r := range recs {
		if ok(r) {
			okRecs = append(okRecs, r)
		}
	}
	pg.Figures = append(pg.Figures, familyFigures(okRecs)...)
	fams, byFam := byFamily(recs)
	for _, fam := range fams {
		if sc, ok := ScalingChart(fam+": speedup over 1 thread", rf, byFam[fam]); ok {
			pg.Figures = append(pg.Figures, figure{Name: fam + "-scaling", Title: sc.Title, Caption: "Median speedup per kernel×tier at each thread count; dashed: the L3 and DRAM roofs' own speedup.", save: sc.Save})
		}
	}
	pg.fleetView(runs)
	// Top and bottom by share of the bound. The read loops the points are
	// paired with are left out: their bound is raised to their own rate
	// (BoundBy), so they rank at 100 % by construction.
	ranked := make([]results.Record, 0, len(okRecs))
	for _, r := range okRecs {
		if r.PctOfBound.Valid() && !r.IsReadCeiling() {
			ranked = append(ranked, r)
		}
	}
	sort.SliceStable(ranked, func(i, j int) bool { return ranked[i].PctOfBound > ranked[j].PctOfBound })
	for i := 0; i < len(ranked) && i < 10; i++ {
		pg.Top = append(pg.Top, pointRow(ranked[i]))
	}
	for i := len(ranked) - 1; i >= 0 && i >= len(ranked)-10 && i >= 10; i-- {
		pg.Low = append(pg.Low, pointRow(ranked[i]))
	}
	counts := map[string]int{}
	for _, r := range recs {
		counts[r.Status]++
		if r.Status == results.StatusUnstable || r.Status == results.StatusAboveBound || r.Status == results.StatusFailed {
			// The advice every spread point shares is said once, above
			// the table (SpreadNote).
			why := strings.Replace(r.Reason, results.SpreadAdvice, "", 1)
			pg.SpreadNote = pg.SpreadNote || why != r.Reason
			if r.Status == results.StatusUnstable && r.Attempts > 1 {
				why = fmt.Sprintf("%s (the least spread of %d attempts)", why, r.Attempts)
			}
			if len(pg.Flagged) < 500 {
				pg.Flagged = append(pg.Flagged, []string{results.BenchName(&r), r.Status, why})
			} else {
				pg.MoreFlags++
			}
		}
	}
	var cs []string
	for _, s := range results.Statuses {
		cs = append(cs, fmt.Sprintf("%d %s", counts[s], s))
	}
	pg.Counts = fmt.Sprintf("%d points: %s", len(recs), strings.Join(cs, ", "))
	if again, _ := results.Retried(recs); again > 0 {
		pg.Counts += fmt.Sprintf(" (%d measured again after an unstable attempt)", again)
	}
	return pg
}

func pointRow(r results.Record) []string {
	v, unit := rate(r)
	return []string{results.BenchName(&r), r.ISA, fmt.Sprint(r.Th), r.Status, fmt.Sprintf("%.0f", float64(r.PctOfBound)), r.ReadCell(), fmt.Sprintf("%.1f %s", v, unit), r.Level}
}

// byFamily groups records by family, the families in the order they
// first appear.
func byFamily(recs []results.Record) (fams []string, by map[string][]results.Record) {
	by = map[string][]results.Record{}
	for _, r := range recs {
		if by[r.Family] == nil {
			fams = append(fams, r.Family)
		}
		by[r.Family] = append(by[r.Family], r)
	}
	return fams, by
}

func bytesLabel(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%g GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%g MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%g KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

var htmlPage = template.Must(template.New("index").Funcs(template.FuncMap{"header": func() []string { return pointHeader }, "nodeHeader": func() []string { return nodeHeader }, "rankedNote": func() string { return rankedNote }, "spreadNote": spreadNote}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0 1em; font-size: 13px; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #555; font-size: 13px; } code, pre { font-size: 13px; background: #f6f6f6; }
pre { padding: .6em; overflow-x: auto; } .skipped { color: #a33; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{.Counts}}. Only <em>ok</em> points are results: an <em>unstable</em> point's samples spread too much, an <em>above_bound</em> one is a measurement problem; both are listed at the end with their reasons.</p>

<h2 id="machine">Machine</h2>
<table>{{range .Facts}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>
<h3>ISA tiers</h3>
<table><tr><th>tier</th><th>here</th><th>why not</th></tr>{{range .Tiers}}<tr><td>{{index . 0}}</td><td{{if eq (index . 1) "skipped"}} class="skipped"{{end}}>{{index . 1}}</td><td>{{index . 2}}</td></tr>{{end}}</table>
<h3>Performance counters</h3>
{{if .Counters}}<table><tr><th>event</th><th>available</th><th>why not</th></tr>{{range .Counters}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td><td>{{index . 2}}</td></tr>{{end}}</table>{{else}}<p>None probed.</p>{{end}}
<h3>Commands that made the data</h3>
<pre>{{range .Commands}}{{.}}
{{end}}</pre>

<h2 id="ceilings">Ceilings</h2>
{{if .Ceilings}}<table><tr><th>kind</th><th>tier</th><th>threads</th><th>peak</th></tr>{{range .Ceilings}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td><td class="num">{{index . 2}}</td><td class="num">{{index . 3}}</td></tr>{{end}}</table>
<table><tr><th>level</th><th>threads</th><th>read GB/s</th><th>working sets</th></tr>{{range .Levels}}<tr><td>{{index . 0}}</td><td class="num">{{index . 1}}</td><td class="num">{{index . 2}}</td><td>{{index . 3}}</td></tr>{{end}}</table>{{else}}<p>No roofline in these folders.</p>{{end}}

<h2 id="charts">Charts</h2>
{{range .Figures}}<figure id="{{.Name}}"><img src="{{.Name}}.png" alt="{{.Title}}"><figcaption>{{.Caption}} (<a href="{{.Name}}.svg">SVG</a>)</figcaption></figure>
{{end}}

{{if .Nodes}}<h2 id="fleet">Fleet</h2>
<p>One row per node (host), scored against the median of the nodes of its CPU model.</p>
<table><tr>{{range nodeHeader}}<th>{{.}}</th>{{end}}</tr>{{range .Nodes}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</table>{{end}}

<h2 id="top">Closest to their bound (top 10)</h2>
<p>{{rankedNote}}</p>
<table><tr>{{range header}}<th>{{.}}</th>{{end}}</tr>{{range .Top}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</table>
<h2 id="bottom">Furthest from their bound (bottom 10)</h2>
<table><tr>{{range header}}<th>{{.}}</th>{{end}}</tr>{{range .Low}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</table>

<h2 id="flagged">Points that are not results</h2>
{{if .SpreadNote}}<p>{{spreadNote}}</p>{{end}}
{{if .Flagged}}<table><tr><th>point</th><th>status</th><th>reason</th></tr>{{range .Flagged}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td><td>{{index . 2}}</td></tr>{{end}}</table>{{if .MoreFlags}}<p>… and {{.MoreFlags}} more (points.csv has them all).</p>{{end}}{{else}}<p>None.</p>{{end}}
{{if .Notes}}<h2 id="notes">Notes</h2><ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<script>
// For the browser check: every image loaded (naturalWidth > 0).
window.addEventListener("load", function () {
  var bad = [];
  document.querySelectorAll("img").forEach(function (im) { if (!im.complete || im.naturalWidth === 0) bad.push(im.getAttribute("src")); });
  document.body.setAttribute("data-images", bad.length ? "broken: " + bad.join(" ") : "ok " + document.images.length);
});
</script>
</body>
</html>
`))

// writeMarkdown writes report.md: the same tables, the charts as links.
func writeMarkdown(w io.Writer, pg page) {
	fmt.Fprintf(w, "# %s\n\n%s. Only ok points are results.\n\n## Machine\n\n", pg.Title, pg.Counts)
	table(w, []string{"", ""}, func(yield func([]string)) {
		for _, f := range pg.Facts {
			yield(f[:])
		}
	})
	fmt.Fprintln(w, "\n### ISA tiers")
	table(w, []string{"tier", "here", "why not"}, func(yield func([]string)) {
		for _, t := range pg.Tiers {
			yield(t[:])
		}
	})
	if len(pg.Counters) > 0 {
		fmt.Fprintln(w, "\n### Performance counters")
		table(w, []string{"event", "available", "why not"}, func(yield func([]string)) {
			for _, c := range pg.Counters {
				yield(c[:])
			}
		})
	}
	fmt.Fprintln(w, "\n### Commands\n\n```sh")
	for _, c := range pg.Commands {
		fmt.Fprintln(w, c)
	}
	fmt.Fprintln(w, "```\n\n## Ceilings")
	table(w, []string{"kind", "tier", "threads", "peak"}, func(yield func([]string)) {
		for _, c := range pg.Ceilings {
			yield(c)
		}
	})
	fmt.Fprintln(w)
	table(w, []string{"level", "threads", "read GB/s", "working sets"}, func(yield func([]string)) {
		for _, l := range pg.Levels {
			yield(l)
		}
	})
	fmt.Fprintln(w, "\n## Charts")
	for _, f := range pg.Figures {
		fmt.Fprintf(w, "\n### %s\n\n![%s](%s.png)\n\n%s ([SVG](%s.svg))\n", f.Title, f.Title, f.Name, f.Caption, f.Name)
	}
	if len(pg.Nodes) > 0 {
		fmt.Fprintln(w, "\n## Fleet\n\nOne row per node (host), scored against the median of the nodes of its CPU model.")
		table(w, nodeHeader, func(yield func([]string)) {
			for _, r := range pg.Nodes {
				yield(r)
			}
		})
	}
	fmt.Fprintln(w, "\n## Closest to their bound (top 10)")
	fmt.Fprintln(w, "\n"+rankedNote)
	table(w, pointHeader, func(yield func([]string)) {
		for _, r := range pg.Top {
			yield(r)
		}
	})
	fmt.Fprintln(w, "\n## Furthest from their bound (bottom 10)")
	table(w, pointHeader, func(yield func([]string)) {
		for _, r := range pg.Low {
			yield(r)
		}
	})
	fmt.Fprintln(w, "\n## Points that are not results")
	if pg.SpreadNote {
		fmt.Fprintf(w, "\n%s\n\n", spreadNote())
	}
	table(w, []string{"point", "status", "reason"}, func(yield func([]string)) {
		for _, r := range pg.Flagged {
			yield(r)
		}
	})
	if pg.MoreFlags > 0 {
		fmt.Fprintf(w, "\n… and %d more (points.csv has them all).\n", pg.MoreFlags)
	}
	if len(pg.Notes) > 0 {
		fmt.Fprintln(w, "\n## Notes")
		for _, n := range pg.Notes {
			fmt.Fprintf(w, "\n- %s", n)
		}
		fmt.Fprintln(w)
	}
}

func table(w io.Writer, header []string, rows func(yield func([]string))) {
	esc := strings.NewReplacer("|", `\|`, "\n", " ")
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat(" --- |", len(header)))
	rows(func(r []string) {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = esc.Replace(c)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// fleetView adds, when the runs come from more than one host, the table
// of nodes scored against their CPU model's median (compare.CompareFleet
// over the ok points' median times) and its chart.
func (pg *page) fleetView(runs []Run) {
	byHost := map[string]*compare.Node{}
	var hosts []string
	for _, r := range runs {
		n := compare.NewNode(r.Meta)
		if byHost[n.Host] == nil {
			byHost[n.Host] = n
			hosts = append(hosts, n.Host)
		}
		n = byHost[n.Host]
		n.Dirs = append(n.Dirs, r.Dir)
		for i := range r.Recs {
			if rec := &r.Recs[i]; ok(*rec) && rec.NsMedian.Valid() {
				n.Values[results.BenchName(rec)] = float64(rec.NsMedian)
			}
		}
	}
	if len(hosts) < 2 {
		return
	}
	var nodes []*compare.Node
	for _, h := range hosts {
		if err := byHost[h].LoadCeilings(); err != nil {
			pg.Notes = append(pg.Notes, "fleet view: "+err.Error())
		}
		nodes = append(nodes, byHost[h])
	}
	fl, err := compare.CompareFleet(nodes, compare.Ns, 0.10)
	if err != nil {
		pg.Notes = append(pg.Notes, "fleet view: "+err.Error())
		return
	}
	for _, sc := range fl.Scores {
		flag := ""
		switch {
		case sc.Flagged:
			flag = sc.Why
		case sc.Note != "":
			flag = "note: " + sc.Note
		}
		row := append([]string{sc.Node.Host, sc.Node.CPU}, sc.Cells()...)
		pg.Nodes = append(pg.Nodes, append(row, flag))
	}
	c := fl.Chart()
	pg.Figures = append(pg.Figures, figure{Name: "fleet", Title: "Fleet: each node against its CPU model",
		Caption: "Each node's time per call over its CPU model's median, geomean over its ok points (1 = typical, above is slower); a node beyond 10 % is flagged in the Fleet table.", save: c.Save})
}

// counterRows is the counters table: one row per availability and reason,
// naming its events, so that a VM without a PMU reads as one line rather
// than eight that repeat it. A reason that starts with its event's name
// (hwcounters' errors do) is given without it.
func counterRows(events []machine.Counter) [][3]string {
	var rows [][3]string
	at := map[[2]string]int{}
	for _, c := range events {
		av := "yes"
		if !c.Available {
			av = "no"
		}
		why := strings.TrimPrefix(c.Reason, c.Event+": ")
		k := [2]string{av, why}
		if i, ok := at[k]; ok {
			rows[i][0] += ", " + c.Event
			continue
		}
		at[k] = len(rows)
		rows = append(rows, [3]string{c.Event, av, why})
	}
	return rows
}

// spreadNote is said once above the flagged points, for those unstable by
// their spread.
func spreadNote() string {
	return "A point whose samples spread more than the limit (MAD) is unstable" + results.SpreadAdvice + "."
}
