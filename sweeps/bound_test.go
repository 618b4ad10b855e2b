package sweeps

import (
	"testing"

	"github.com/ckbench/ckbench/results"
	"github.com/ckbench/ckbench/roofline"
)

// TestComputeRoof: a decode widening each f16 or q8_0 value for one FMA is
// held to the widened FMA roof of its cache type, the integer GEMV to the
// int8 one, the rest (a grouped decode too) to FP32 FMA.
func TestComputeRoof(t *testing.T) {
	for _, c := range []struct {
		rec  results.Record
		want string
	}{
		{results.Record{Family: "attention", KV: "f16", H: 8, KVH: 8}, "f16-fma"},
		{results.Record{Family: "attention", Kernel: "decode-flash-gqa", KV: "f16", H: 32, KVH: 8}, "fp32-fma"},
		{results.Record{Family: "attention", Kernel: "decode-split", KV: "f16", H: 32, KVH: 8}, "fp32-fma"},
		{results.Record{Family: "attention", Kernel: "decode-flash", KV: "f16", H: 32, KVH: 8}, "f16-fma"},
		{results.Record{Family: "attention", Kernel: "decode-naive", KV: "f16", H: 32, KVH: 8}, "f16-fma"},
		{results.Record{Family: "attention", KV: "f32"}, "fp32-fma"},
		{results.Record{Family: "attention", Kernel: "decode-flash", KV: "q8_0", H: 32, KVH: 8}, roofline.Q8Attn},
		{results.Record{Family: "attention", Kernel: "decode-flash-gqa", KV: "q8_0", H: 32, KVH: 8}, "fp32-fma"},
		{results.Record{Family: "kvcache", KV: "f16"}, "fp32-fma"},
		{results.Record{Family: "quant", IntOps: 10}, "int8-dot"},
	} {
		if got := computeRoof(&c.rec); got != c.want {
			t.Errorf("%s kv=%s int_ops=%v: %s, want %s", c.rec.Family, c.rec.KV, c.rec.IntOps, got, c.want)
		}
	}
}
