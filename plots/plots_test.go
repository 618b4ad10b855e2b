package plots

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSave(t *testing.T) {
	dir := t.TempDir()
	r := Roofline{Title: "test", Roofs: []Roof{{"avx512 ×1", 175}, {"avx2 ×1", 94}},
		Slopes: []Slope{{"L1 ×1", 270}, {"DRAM ×1", 17}},
		Marks:  []Mark{{"decode-flash", "avx512", 0.5, 15}, {"decode-flash", "avx2", 0.5, 14}, {"kv-read", "avx512", 0, 0}}}
	paths := []string{filepath.Join(dir, "r.png"), filepath.Join(dir, "r.svg")}
	if err := r.Save(paths...); err != nil {
		t.Fatal(err)
	}
	b := Bandwidth{Title: "bw", Curves: []Curve{{"read ×1", []float64{4096, 1 << 20, 1 << 30}, []float64{270, 135, 17}}},
		Markers: []Marker{{"L2", 2 << 20}}}
	paths = append(paths, filepath.Join(dir, "b.png"))
	if err := b.Save(paths[2]); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil || st.Size() < 1000 {
			t.Fatalf("%s: %v, %d bytes", p, err, st.Size())
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Fatalf("temporary files left: %v", entries)
	}
}
