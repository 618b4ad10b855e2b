package sweeps

import (
	"context"
	"testing"
	"time"

	"github.com/ckbench/ckbench/kernels/quant"
	"github.com/ckbench/ckbench/machine"
	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/sampler"
)

// TestRunQuantWithWRead: the weight read loop runs first per format and
// shape (widest tier that runs first), in --cold over the same rotating
// copies as the kernels, and its rate becomes read_gbs and pct_of_read
// of every point after it.
func TestRunQuantWithWRead(t *testing.T) {
	g := QuantGrid{
		Kernels: []quant.Kernel{quant.GemvQ8, WRead}, Tiers: quant.Tiers(), Formats: []quant.Format{quant.Q4_0, quant.Q6_K},
		Acts: []string{ActQ8}, Shapes: []Shape{{M: 9, K: 512}}, RBs: []int{4},
	}
	opt := Options{Sampler: sampler.Config{MinTime: 2 * time.Millisecond}, CPU: -1, Seed: 3, Cold: true, ColdBytes: 64 << 10}
	plan, err := PlanQuant(g, opt, machine.Describe())
	if err != nil {
		t.Fatal(err)
	}
	checkCeilingFirst(t, plan, string(WRead), widestRunning(quant.Tiers()))
	var recs []results.Record
	complete, err := Run(context.Background(), plan, opt, func(r results.Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil || !complete {
		t.Fatalf("run: complete=%v err=%v", complete, err)
	}
	reads := 0
	for _, f := range g.Formats {
		var ofFmt []results.Record
		for _, r := range recs {
			if r.Fmt == f.String() {
				ofFmt = append(ofFmt, r)
			}
		}
		checkReadCeiling(t, ofFmt, string(WRead))
	}
	for _, r := range recs {
		if r.Status == results.StatusSkipped {
			continue
		}
		if !timed(r.Status) {
			t.Fatalf("%s/%s %s: %s %s", r.Kernel, r.ISA, r.Fmt, r.Status, r.Reason)
		}
		if r.Kernel == string(WRead) {
			reads++
			f, _ := quant.ParseFormat(r.Fmt)
			if want := results.Float(9 * f.RowBytes(512)); r.Bytes != want || r.Flops != 0 {
				t.Errorf("w-read %s: bytes %v flops %v, want %v and 0", r.Fmt, r.Bytes, r.Flops, want)
			}
		}
	}
	if reads == 0 {
		t.Fatal("no w-read point ran")
	}
	if _, err := ParseQuantKernel("w-raed"); err == nil {
		t.Fatal("a misspelt kernel was accepted")
	}
}
