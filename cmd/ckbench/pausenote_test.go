package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ckbench/ckbench/sampler"
)

// TestPauseNote: a sweep's note on the host's pauses says which samples
// keep them, and that a --cold sweep's all do; none where they do not
// matter.
func TestPauseNote(t *testing.T) {
	h := sampler.HostStalls{PerSecond: 1400, Typical: 40 * time.Microsecond, Share: 0.056}
	warm := pauseNote(h, 200*time.Microsecond)
	for _, want := range []string{"1400 pauses a second", "dropped as stalled", "samples of 1.15ms or more catch", "5.6 %", "% read holds", "compute-bound % of bound is that much low"} {
		if !strings.Contains(warm, want) {
			t.Errorf("200µs samples: note %q lacks %q", warm, want)
		}
	}
	if strings.Contains(warm, "here every one") {
		t.Errorf("200µs samples: note %q says every sample keeps them", warm)
	}
	if cold := pauseNote(h, 5*time.Millisecond); !strings.Contains(cold, "(here every one: 5ms or more)") || !strings.Contains(cold, "7.0 each at 5ms") {
		t.Errorf("5ms samples: note %q", cold)
	}
	if n := pauseNote(sampler.HostStalls{PerSecond: 2, Typical: 30 * time.Microsecond, Share: 0.00006}, time.Millisecond); n != "" {
		t.Errorf("pauses that do not matter: note %q", n)
	}
}
