package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/ckbench/ckbench/machine"
)

// Meta is machine.json: what ran, where, and whether it finished.
type Meta struct {
	Schema   int          `json:"schema"` // SchemaVersion
	RunID    string       `json:"run_id"`
	Ckbench  string       `json:"ckbench_version"`
	Go       string       `json:"go_version"`
	Command  []string     `json:"command"`
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished,omitzero"`
	Complete bool         `json:"complete"` // false while running and after an interrupted run
	Points   int          `json:"points"`   // records written
	Planned  int          `json:"planned"`  // points in the grid
	Config   any          `json:"config,omitempty"`
	Notes    []string     `json:"notes,omitempty"`
	Machine  machine.Info `json:"machine"`
}

// Run is one results folder. Its files are rewritten atomically (temp file,
// rename) on the first Add, then at most every FlushEvery, and on Close: the
// folder is valid at every moment, and a sweep of thousands of points does
// not rewrite its files after each one.
type Run struct {
	Dir        string
	Meta       Meta
	FlushEvery time.Duration // default 2 s; 0 rewrites after every point
	recs       []Record
	prior      []*benchfmt.Result // a resumed run's bench.txt lines
	flushed    time.Time
	saved      int    // the points the folder holds: those of the last flush that succeeded
	unlock     func() // releases the folder's lock (lockDir); Close calls it
}

// NewRunID names a run after its start time: 20261121-215137.
func NewRunID(t time.Time) string { return t.Format("20060102-150405") }

// ErrNotFolder: the folder meant to hold run folders is a file.
var ErrNotFolder = errors.New("is a file, not a folder")

// ErrRunExists: a run folder of that name exists already.
var ErrRunExists = errors.New("run folder already exists")

// ErrBusy: another process is writing the run folder (the sweep that made
// it, still running, or another --resume of it).
var ErrBusy = errors.New("another ckbench is writing this run folder (its sweep is still running, or another --resume of it): wait for it to end, or stop it")

// CheckWritable makes sure parent is (or can be made) a folder this
// process can write files in, before anything is measured.
func CheckWritable(parent string) error {
	if st, err := os.Stat(parent); err == nil && !st.IsDir() {
		return fmt.Errorf("%s %w", parent, ErrNotFolder)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("cannot create the output folder: %w", err)
	}
	f, err := os.CreateTemp(parent, ".ckbench-write-check-*")
	if err != nil {
		return fmt.Errorf("cannot write in the output folder %s: %w", parent, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// ErrNoSpace: the output folder's file system has too little free space
// for what a run writes.
var ErrNoSpace = errors.New("too little free space")

// Bytes a run folder takes: per point, its lines in points.csv,
// points.jsonl and bench.txt (about 2.2 KB) twice over, since each flush
// writes the files anew beside the old ones before renaming; and, once,
// machine.json, the roofline, the charts and the report.
const (
	spacePerPoint = 5 << 10
	spaceFixed    = 2 << 20
)

// CheckSpace refuses, before anything is measured, an output folder
// whose file system could not take the files of a run of points points
// (ErrNoSpace): a sweep of hours would otherwise stop at its first write
// after the disk filled. Where free space cannot be read it passes.
func CheckSpace(dir string, points int) error {
	free, ok := freeBytes(dir)
	need := spaceFixed + int64(points)*spacePerPoint
	if !ok || free >= need {
		return nil
	}
	what := "a run"
	if points > 0 {
		what = fmt.Sprintf("a run of %d points", points)
	}
	return fmt.Errorf("%s: %w: %s free, and %s writes about %s (its results, charts, and a temporary copy of each file while it is rewritten)",
		dir, ErrNoSpace, machine.Bytes(free), what, machine.Bytes(need))
}

// CheckOutput is CheckWritable then CheckSpace: a folder to hold run
// folders that can take a run of points points.
func CheckOutput(parent string, points int) error {
	if err := CheckWritable(parent); err != nil {
		return err
	}
	return CheckSpace(parent, points)
}

// Create makes the folder parent/meta.RunID and writes machine.json. It
// refuses a parent that is a file and an existing run folder. An empty
// RunID is the start time, with -2, -3, ... added when a run started in
// the same second has it already.
func Create(parent string, meta Meta) (*Run, error) {
	dir, id, err := MakeRunDir(parent, meta.RunID, meta.Started)
	if err != nil {
		return nil, err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	meta.RunID, meta.Schema = id, SchemaVersion
	r := &Run{Dir: dir, Meta: meta, FlushEvery: 2 * time.Second, unlock: unlock}
	return r, r.flush()
}

// MakeRunDir creates the run folder parent/id and returns it with its id.
// An empty id is the start time, with -2, -3, ... added when a run
// started in the same second has it already (os.Mkdir decides, so two
// processes never get the same folder).
func MakeRunDir(parent, id string, started time.Time) (dir, runID string, err error) {
	if err := CheckWritable(parent); err != nil {
		return "", "", err
	}
	auto := id == ""
	base := id
	if auto {
		base = NewRunID(started)
	}
	for n := 1; ; n++ {
		runID = base
		if n > 1 {
			runID = fmt.Sprintf("%s-%d", base, n)
		}
		dir = filepath.Join(parent, runID)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, runID, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", "", fmt.Errorf("cannot create run folder: %w", err)
		}
		if !auto || n >= 1000 {
			return "", "", fmt.Errorf("%s: %w", dir, ErrRunExists)
		}
	}
}

// Resume opens a run folder to add the points it lacks (--resume): its
// machine.json, the records of points.jsonl (none when the run stopped
// before its first point) and the lines of bench.txt, kept as they are
// (the samples behind them are not in points.jsonl). The folder is marked
// incomplete until Close. Like Create, it holds the folder's lock until
// Close: a folder another process writes is ErrBusy.
func Resume(dir string) (run *Run, err error) {
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			unlock()
		}
	}()
	meta, err := ReadMeta(dir)
	if err != nil {
		return nil, err
	}
	recs, err := ReadPoints(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	r := &Run{Dir: dir, Meta: meta, FlushEvery: 2 * time.Second, recs: recs, saved: len(recs), unlock: unlock}
	if f, err := os.Open(filepath.Join(dir, "bench.txt")); err == nil {
		defer f.Close()
		br := benchfmt.NewReader(f, filepath.Join(dir, "bench.txt"))
		for br.Scan() {
			switch res := br.Result().(type) {
			case *benchfmt.SyntaxError:
				return nil, fmt.Errorf("%v: %w", res, ErrCorrupt)
			case *benchfmt.Result:
				r.prior = append(r.prior, res.Clone())
			}
		}
		if err := br.Err(); err != nil {
			return nil, err
		}
	}
	r.Meta.Complete = false
	return r, r.flush()
}

// Forget drops the records, and the bench.txt lines, of the points named
// (their BenchName): a resumed run measures them again.
func (r *Run) Forget(names map[string]bool) {
	recs := r.recs[:0]
	for i := range r.recs {
		if r.recs[i].Family == "" || !names[BenchName(&r.recs[i])] {
			recs = append(recs, r.recs[i])
		}
	}
	r.recs = recs
	prior := r.prior[:0]
	for _, res := range r.prior {
		if !names[string(res.Name)] {
			prior = append(prior, res)
		}
	}
	r.prior = prior
}

// Add appends a record; the folder is rewritten when FlushEvery has passed
// since the last rewrite (always for the first record).
func (r *Run) Add(rec Record) error {
	r.recs = append(r.recs, rec)
	if len(r.recs) > 1 && time.Since(r.flushed) < r.FlushEvery {
		return nil
	}
	return r.flush()
}

// Records returns the records added so far.
func (r *Run) Records() []Record { return r.recs }

// Close marks the run finished (complete or interrupted) and rewrites it.
//
// If that write fails, r.Meta stays as the folder has it (a run folder
// on a full disk keeps its last flush): Meta.Points counts the points
// the folder holds, which Records may outnumber.
func (r *Run) Close(complete bool) error {
	before := r.Meta
	r.Meta.Complete = complete
	r.Meta.Finished = time.Now()
	err := r.flush()
	if err != nil {
		r.Meta = before
	}
	if r.unlock != nil {
		r.unlock()
		r.unlock = nil
	}
	return err
}

func (r *Run) flush() error {
	r.flushed = time.Now()
	r.Meta.Points = len(r.recs)
	defer func() { r.Meta.Points = r.saved }()
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{"points.csv", func(w io.Writer) error { return WriteCSV(w, r.recs) }},
		{"points.jsonl", func(w io.Writer) error { return WriteJSONL(w, r.recs) }},
		{"bench.txt", func(w io.Writer) error { return writeBench(w, r.benchHeader(), r.benchConfig(), r.prior, r.recs) }},
		{"machine.json", func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(r.Meta)
		}},
	}
	// All four are written in full under temporary names first, then
	// renamed into place: a write that fails (a full disk) leaves the
	// folder as the last flush left it, every file with the same points.
	ws := make([]func(io.Writer) error, len(files))
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i], ws[i] = filepath.Join(r.Dir, f.name), f.write
	}
	if err := WriteFilesAtomic(paths, ws); err != nil {
		return err
	}
	r.saved = len(r.recs)
	return nil
}

func (r *Run) benchConfig() map[string]string {
	return map[string]string{"pkg": "github.com/ckbench/ckbench"}
}

func (r *Run) benchHeader() []string {
	m := r.Meta.Machine
	return []string{
		fmt.Sprintf("ckbench %s, run %s, %s, schema %d", r.Meta.Ckbench, r.Meta.RunID, r.Meta.Go, SchemaVersion),
		fmt.Sprintf("cpu %s, %s/%s; details in machine.json", m.CPUName(), m.OS.GOOS, m.OS.GOARCH),
	}
}

// ReadMeta reads a run's machine.json.
func ReadMeta(dir string) (Meta, error) {
	var m Meta
	path := filepath.Join(dir, "machine.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w: %v", path, ErrCorrupt, err)
	}
	return m, checkSchema(path, m.Schema)
}
