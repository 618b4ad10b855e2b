package compare

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
)

// writeNode writes one node's results folder under root/<host>/<run>:
// points decode-flash over tiers and contexts, at speed (1 = nominal).
func writeNode(t testing.TB, root, host, brand string, model int, speed float64, points int) {
	var info machine.Info
	info.Host, info.CPU.Brand, info.CPU.Family, info.CPU.Model, info.CPU.Microcode = host, brand, 25, model, "0x1000065"
	info.OS.Kernel = "6.1.0"
	run, err := results.Create(filepath.Join(root, host), results.Meta{RunID: "run1", Ckbench: "0.1.0", Started: time.Unix(0, 0), Machine: info})
	if err != nil {
		t.Fatal(err)
	}
	run.FlushEvery = time.Hour
	rng := rand.New(rand.NewPCG(uint64(len(host)), uint64(model)))
	for i := range points {
		r := results.NewRecord()
		r.Family, r.Kernel, r.ISA, r.HD, r.TK, r.Ctx, r.H, r.KVH, r.KV, r.Exp, r.Th = "attention", "decode-flash", []string{"avx2", "avx512"}[i%2], 128, "auto", 512+64*(i/2), 8, 8, "f32", "fast", 1
		base := float64(r.Ctx) * 20 * speed
		for range 10 {
			r.KeptNs = append(r.KeptNs, base*(1+0.01*rng.NormFloat64()))
		}
		r.Status, r.NsMedian, r.Bytes, r.Samples = results.StatusOK, results.Float(base), results.Float(float64(r.Ctx)*8192), 10
		run.Add(r)
	}
	if err := run.Close(true); err != nil {
		t.Fatal(err)
	}
}

// TestFleet: four nodes of one model (one 30 % slower: flagged), one of
// another model 1.5× slower; the models are compared, the slow node is
// named, the chart and files are written.
func TestFleet(t *testing.T) {
	root := t.TempDir()
	for i, speed := range []float64{1, 1.01, 0.99, 1.3} {
		writeNode(t, root, fmt.Sprintf("zen4-%02d", i), "AMD EPYC 9R14", 17, speed, 6)
	}
	writeNode(t, root, "zen3-00", "AMD EPYC 7R13", 1, 1.5, 6)
	nodes, err := LoadFleet([]string{root}, Ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 5 {
		t.Fatalf("%d nodes, want 5", len(nodes))
	}
	fl, err := CompareFleet(nodes, Ns, 0.10)
	if err != nil {
		t.Fatal(err)
	}
	if len(fl.Groups) != 2 || len(fl.Groups[0].Nodes) != 4 || !strings.Contains(fl.Groups[0].CPU, "9R14") {
		t.Fatalf("groups %+v", fl.Groups)
	}
	for _, r := range fl.Rows {
		// The zen4 model's median over 1, 1.01, 0.99, 1.3: 1.005.
		if math.Abs(r.Ratio[1]-1.5/1.005) > 0.03 {
			t.Errorf("%s: zen3/zen4 %v, want about 1.49", r.Name, r.Ratio[1])
		}
		if !(r.Spread[0] > 25) {
			t.Errorf("%s: zen4 spread %v %%, want about 31 %% (the slow node)", r.Name, r.Spread[0])
		}
	}
	if g := fl.Geomean; len(g) != 2 || math.Abs(g[1]-1.5/1.005) > 0.03 {
		t.Errorf("geomean per model %v, want 1 and about 1.49", g)
	}
	flagged := 0
	for _, sc := range fl.Scores {
		if sc.Flagged {
			flagged++
			if sc.Node.Host != "zen4-03" {
				t.Errorf("%s flagged (%s)", sc.Node.Host, sc.Why)
			}
		}
	}
	if flagged != 1 {
		t.Errorf("%d nodes flagged, want zen4-03 alone", flagged)
	}
	var txt, csv bytes.Buffer
	fl.WriteText(&txt)
	fl.WriteCSV(&csv)
	for _, want := range []string{"5 nodes, 2 CPU models", "zen4-03", "FLAGGED", "0x1000065", "attention/decode-flash", "geomean vs A"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("fleet text lacks %q:\n%s", want, txt.String())
		}
	}
	if n := strings.Count(csv.String(), "\n"); n != 1+5*6 {
		t.Errorf("fleet.csv: %d lines", n)
	}
	dir := t.TempDir()
	if err := fl.Chart().Save(filepath.Join(dir, "compare.png")); err != nil {
		t.Fatal(err)
	}
}

// TestFleetCeilings: the nodes' rooflines are put per model, and a node
// whose points are typical but whose DRAM reads 34 % below its siblings'
// (a bad DIMM) is flagged by that ceiling; one as far off whose roofline
// was measured on a busy host (passes 30 % apart) gets a note, not a
// flag; a node without a roofline has none to be flagged by.
func TestFleetCeilings(t *testing.T) {
	root := t.TempDir()
	for i, c := range []struct{ dram, spread float64 }{{1, 3}, {1.02, 3}, {0.98, 3}, {0.65, 3}, {-1, 0}, {0.6, 30}} {
		host := fmt.Sprintf("n%d", i)
		writeNode(t, root, host, "AMD EPYC 9R14", 17, 1, 4)
		if c.dram > 0 {
			dir := filepath.Join(root, host, "run1")
			writeRooflineDRAM(t, dir, 1, c.dram, "AMD EPYC 9R14")
			b, _ := os.ReadFile(filepath.Join(dir, "roofline.json"))
			b = []byte(strings.Replace(string(b), `"max_pass_spread_pct":3`, fmt.Sprintf(`"max_pass_spread_pct":%g`, c.spread), 1))
			os.WriteFile(filepath.Join(dir, "roofline.json"), b, 0o644)
		}
	}
	nodes, err := LoadFleet([]string{root}, Ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	fl, err := CompareFleet(nodes, Ns, 0.10)
	if err != nil {
		t.Fatal(err)
	}
	// DRAM: 12, 13, 19.6, 20, 20.4 GB/s: the median 19.6.
	if len(fl.Ceilings) != 3 || fl.Ceilings[2].Name != "read DRAM th=1" || fl.Ceilings[2].N[0] != 5 || math.Abs(fl.Ceilings[2].Median[0]-19.6) > 0.01 {
		t.Fatalf("ceilings %+v", fl.Ceilings)
	}
	for _, sc := range fl.Scores {
		switch sc.Node.Host {
		case "n3":
			if !sc.Flagged || sc.Ceiling != "read DRAM th=1" || math.Abs(sc.Off-13/19.6) > 0.001 || !strings.Contains(sc.Why, "read DRAM th=1") {
				t.Errorf("the bad DIMM: %+v", sc)
			}
		case "n4":
			if sc.Flagged || !math.IsNaN(sc.Off) {
				t.Errorf("no roofline, yet %+v", sc)
			}
		case "n5":
			if sc.Flagged || !strings.Contains(sc.Note, "passes spread 30 %") {
				t.Errorf("a busy host's roofline: %+v", sc)
			}
		default:
			if sc.Flagged {
				t.Errorf("%s flagged: %s", sc.Node.Host, sc.Why)
			}
		}
	}
	var txt, csv bytes.Buffer
	fl.WriteText(&txt)
	fl.WriteCSV(&csv)
	if n := strings.Count(csv.String(), "\n"); n != 1+6*4+5*3 || !strings.Contains(csv.String(), "read DRAM th=1,ceiling,,,n3,") {
		t.Errorf("fleet.csv: %d lines, want a header, 24 points and 15 ceilings:\n%s", n, csv.String())
	}
	for _, want := range []string{"roofline ceilings per model", "read DRAM th=1", "19.60 GB/s", "furthest ceiling", "read DRAM th=1 0.663×", "FLAGGED: its read DRAM th=1 is -34 %", "note: read DRAM th=1 0.612×"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("fleet text lacks %q:\n%s", want, txt.String())
		}
	}
	// A cache level off alone is shown, never flagged: L1 reads spread
	// more than that between runs of one machine.
	for _, sc := range fl.Scores {
		if Faulty("read L1 th=1") || !Faulty("read DRAM th=2") || !Faulty("core clock") || sc.Flagged && !strings.Contains(sc.Why, "DRAM") {
			t.Fatalf("Faulty, or a flag not by DRAM: %+v", sc)
		}
	}
}

// TestGenerateFleet writes a synthetic fleet for the scale measurement in
// the README: CKBENCH_FLEET_DIR=/tmp/fleet CKBENCH_FLEET_NODES=1000 go test
// ./compare -run TestGenerateFleet, then time ckbench compare on it.
func TestGenerateFleet(t *testing.T) {
	dir := os.Getenv("CKBENCH_FLEET_DIR")
	if dir == "" {
		t.Skip("set CKBENCH_FLEET_DIR (and CKBENCH_FLEET_NODES, CKBENCH_FLEET_POINTS) to write a synthetic fleet")
	}
	n, _ := strconv.Atoi(os.Getenv("CKBENCH_FLEET_NODES"))
	pts, _ := strconv.Atoi(os.Getenv("CKBENCH_FLEET_POINTS"))
	n, pts = max(n, 1), max(pts, 1)
	for i := range n {
		model := []int{17, 1, 207}[i%3]
		speed := 1 + 0.01*float64(i%7)
		writeNode(t, dir, fmt.Sprintf("node%04d", i), fmt.Sprintf("CPU model %d", model), model, speed, pts)
	}
}

// The attention family's name keys, as package sweeps registers them.
func init() {
	results.RegisterBenchKeys("attention", []string{"isa", "exp", "hd", "tk", "ctx", "h", "kvh", "kv"})
}
