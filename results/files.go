package results

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

// WriteFileAtomic writes a file through a temporary name in the same
// folder and renames it into place, so a reader (or a crash) never sees a
// half-written file.
func WriteFileAtomic(path string, write func(w io.Writer) error) error {
	return WriteFilesAtomic([]string{path}, []func(io.Writer) error{write})
}

// WriteFilesAtomic writes several files that must agree with each other:
// each in full under a temporary name first, then all renamed into place.
// If any write fails (a full disk), every temporary file is removed and
// the old files stay as they were, still agreeing.
func WriteFilesAtomic(paths []string, writes []func(w io.Writer) error) error {
	tmps := make([]string, 0, len(paths))
	cleanup := func() {
		for _, t := range tmps {
			os.Remove(t)
		}
	}
	for i, path := range paths {
		tmp, err := writeTemp(path, writes[i])
		if err != nil {
			cleanup()
			return fmt.Errorf("writing %s: %w", path, err)
		}
		tmps = append(tmps, tmp)
	}
	for i, tmp := range tmps {
		if err := os.Rename(tmp, paths[i]); err != nil {
			cleanup()
			return fmt.Errorf("writing %s: %w", paths[i], err)
		}
	}
	return nil
}

// writeTemp writes path's content to a synced temporary file beside it.
func writeTemp(path string, write func(w io.Writer) error) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	err = f.Chmod(0o644) // CreateTemp makes 0600; results are for sharing
	if err == nil {
		bw := bufio.NewWriter(f)
		err = write(bw)
		if err == nil {
			err = bw.Flush()
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// WriteCSV writes records as points.csv.
func WriteCSV(w io.Writer, recs []Record) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(Columns()); err != nil {
		return err
	}
	row := make([]string, len(columns))
	for i := range recs {
		v := reflect.ValueOf(&recs[i]).Elem()
		for j, c := range columns {
			row[j] = cell(v.Field(c.index), c)
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSONL writes records as points.jsonl, one object per line.
func WriteJSONL(w io.Writer, recs []Record) error {
	for i := range recs {
		b, err := marshalLine(&recs[i])
		if err != nil {
			return err
		}
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// ErrCorrupt marks a results file that cannot be read back.
var ErrCorrupt = errors.New("corrupt results file")

// ReadCSV reads a points.csv. Columns are matched by name, so files from
// older versions with fewer columns still read; an unknown column, a
// malformed cell or a ragged row is an error naming the line.
func ReadCSV(r io.Reader, name string) ([]Record, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: no header: %v", name, ErrCorrupt, err)
	}
	fields := make([]int, len(header))
	for i, h := range header {
		c, ok := columnByName[h]
		if !ok {
			return nil, fmt.Errorf("%s: %w: unknown column %q", name, ErrCorrupt, h)
		}
		fields[i] = c.index
	}
	var recs []Record
	for line := 2; ; line++ {
		row, err := cr.Read()
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %v", name, ErrCorrupt, err)
		}
		rec := NewRecord()
		rec.Schema = 0 // a file without the column has none
		v := reflect.ValueOf(&rec).Elem()
		for i, s := range row {
			if err := setCell(v.Field(fields[i]), s); err != nil {
				return nil, fmt.Errorf("%s:%d: %w: column %s: %v", name, line, ErrCorrupt, header[i], err)
			}
		}
		if err := checkSchema(fmt.Sprintf("%s:%d", name, line), rec.Schema); err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
}

// ReadJSONL reads a points.jsonl; an unknown key or a malformed line is an
// error naming the line.
func ReadJSONL(r io.Reader, name string) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var recs []Record
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		rec := NewRecord()
		rec.Schema = 0 // a line without the key has none
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w: %v", name, line, ErrCorrupt, err)
		}
		if err := checkSchema(fmt.Sprintf("%s:%d", name, line), rec.Schema); err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrCorrupt, err)
	}
	return recs, nil
}

// ReadPoints reads the points of a run folder (points.jsonl).
func ReadPoints(dir string) ([]Record, error) {
	path := filepath.Join(dir, "points.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadJSONL(f, path)
}

// keyName escapes a value for a benchmark name: no spaces or slashes.
func keyName(s string) string {
	return strings.NewReplacer(" ", "_", "/", "_").Replace(s)
}
