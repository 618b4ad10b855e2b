package plots

import (
	"gonum.org/v1/plot/vg"
	"os"
	"path/filepath"
	"testing"
)

func TestSave(t *testing.T) {
	dir := t.TempDir()
	r := Roofline{Title: "test", Roofs: []Roof{{Label: "avx512 ×1", GFlops: 175}, {Label: "avx2 ×1", GFlops: 94}},
		Slopes: []Slope{{"L1 ×1", 270}, {"DRAM ×1", 17}},
		Marks: []Mark{{Series: "decode-flash", Group: "avx512", Level: "L2", AI: 0.5, GFlops: 15},
			{Series: "decode-flash", Group: "avx2", Level: "L2", AI: 0.5, GFlops: 14}, {Series: "kv-read", Group: "avx512"}}}
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

// TestRooflineLabels: on a crowded roofline (a real Zen 4's ceilings at 1
// and 2 threads, roofs close together, levels of similar bandwidth, many
// points) no two labels overlap and every label lies inside the plot
// area, so none can cover the legend (drawn beside the plot) either.
func TestRooflineLabels(t *testing.T) {
	var placed []vg.Rectangle
	r := Roofline{Title: "crowded", Placed: &placed}
	for _, th := range []string{"×1", "×2"} {
		k := 1.0
		if th == "×2" {
			k = 2
		}
		r.Roofs = append(r.Roofs, Roof{Label: "generic " + th, GFlops: 12 * k}, Roof{Label: "avx2 " + th, GFlops: 117 * k},
			Roof{Label: "avx512 " + th, GFlops: 118 * k}, Roof{Label: "int8 avx512vnni " + th, GFlops: 464 * k, Int8: true})
		r.Slopes = append(r.Slopes, Slope{"L1 " + th, 194 * k}, Slope{"L2 " + th, 116 * k}, Slope{"L3 " + th, 98 * k}, Slope{"DRAM " + th, 20 * k})
	}
	for i := range 40 {
		r.Marks = append(r.Marks, Mark{Series: []string{"decode-flash", "decode-naive", "gemv-q8"}[i%3], Group: []string{"avx2", "avx512"}[i%2],
			Level: []string{"L1", "L2", "L3", "DRAM"}[i%4], AI: 0.2 + 0.01*float64(i), GFlops: 5 + float64(i)})
	}
	dir := t.TempDir()
	if err := r.Save(filepath.Join(dir, "r.png"), filepath.Join(dir, "r.svg")); err != nil {
		t.Fatal(err)
	}
	if len(placed) < 16 {
		t.Errorf("only %d labels placed for 16 ceilings and 40 points", len(placed))
	}
	for i, a := range placed {
		for _, b := range placed[:i] {
			if overlaps(a, b) {
				t.Errorf("labels overlap: %v and %v", a, b)
			}
		}
	}
}
