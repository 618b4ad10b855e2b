package sweeps

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseInts reads a list of positive integers, each item either a number
// or a range: "a..b" (doubling), "a..bxF" (multiply by F) or "a..b+S"
// (add S). Examples: "64,128", "512..65536x2", "16..256+16".
func ParseInts(flag, s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("--%s: empty list", flag)
	}
	var out []int
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		lo, hi, isRange := strings.Cut(item, "..")
		if !isRange {
			n, err := parsePositive(flag, item)
			if err != nil {
				return nil, err
			}
			out = append(out, n)
			continue
		}
		step, mul := 0, 2
		if h, f, ok := strings.Cut(hi, "x"); ok {
			hi = h
			m, err := strconv.Atoi(f)
			if err != nil || m < 2 {
				return nil, fmt.Errorf("--%s: bad range %q: the factor after x must be an integer ≥ 2", flag, item)
			}
			mul = m
		} else if h, st, ok := strings.Cut(hi, "+"); ok {
			hi = h
			n, err := strconv.Atoi(st)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("--%s: bad range %q: the step after + must be a positive integer", flag, item)
			}
			step, mul = n, 0
		}
		a, err := parsePositive(flag, lo)
		if err != nil {
			return nil, fmt.Errorf("--%s: bad range %q: %v", flag, item, err)
		}
		b, err := parsePositive(flag, hi)
		if err != nil {
			return nil, fmt.Errorf("--%s: bad range %q: %v", flag, item, err)
		}
		if b < a {
			return nil, fmt.Errorf("--%s: bad range %q: end is below start", flag, item)
		}
		for v := a; v <= b; {
			out = append(out, v)
			if len(out) > 10000 {
				return nil, fmt.Errorf("--%s: range %q has more than 10000 values", flag, item)
			}
			if mul > 0 {
				v *= mul
			} else {
				v += step
			}
		}
	}
	return dedup(out), nil
}

func parsePositive(flag, s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("--%s: %q is not an integer", flag, s)
	}
	if n <= 0 {
		return 0, fmt.Errorf("--%s: %d must be ≥ 1", flag, n)
	}
	return n, nil
}

func dedup[T comparable](xs []T) []T {
	seen := map[T]bool{}
	out := xs[:0]
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// HeadPair is a query-head count and a KV-head count (H:Hkv).
type HeadPair struct{ H, Hkv int }

func (h HeadPair) String() string { return fmt.Sprintf("%d:%d", h.H, h.Hkv) }

// ParseHeads reads "H:Hkv" pairs: "16:8,32:8,8:8". A bare "H" means H:H.
func ParseHeads(s string) ([]HeadPair, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("--heads: empty list")
	}
	var out []HeadPair
	for _, item := range strings.Split(s, ",") {
		hs, kvs, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			kvs = hs
		}
		h, err := parsePositive("heads", hs)
		if err != nil {
			return nil, err
		}
		kv, err := parsePositive("heads", kvs)
		if err != nil {
			return nil, err
		}
		if h%kv != 0 {
			return nil, fmt.Errorf("--heads %s: H=%d is not a multiple of Hkv=%d (each KV head serves H/Hkv query heads)", item, h, kv)
		}
		out = append(out, HeadPair{h, kv})
	}
	return dedup(out), nil
}

// ParseList splits a comma list and maps each item through parse; "all"
// alone returns all.
func ParseList[T comparable](flag, s string, all []T, parse func(string) (T, error)) ([]T, error) {
	s = strings.TrimSpace(s)
	if s == "all" {
		return all, nil
	}
	if s == "" {
		return nil, fmt.Errorf("--%s: empty list", flag)
	}
	var out []T
	for _, item := range strings.Split(s, ",") {
		v, err := parse(strings.TrimSpace(item))
		if err != nil {
			return nil, fmt.Errorf("--%s: %v", flag, err)
		}
		out = append(out, v)
	}
	return dedup(out), nil
}

// Limits on a grid's values: far above any model (a 1 G-token context,
// 4096 heads, a 256 M-wide matrix), low enough that no size computed from
// them overflows an int64 before the memory check refuses it.
const (
	MaxCtx   = 1 << 30
	MaxHeads = 4096
	MaxDim   = 1 << 28 // M and K of a quantized matrix
)

// satMul multiplies non-negative sizes, saturating at MaxInt64 instead of
// wrapping: a size too large to hold is refused by the memory check, never
// turned into a small or negative one.
func satMul(xs ...int64) int64 {
	p := int64(1)
	for _, x := range xs {
		if x < 0 {
			return math.MaxInt64
		}
		if x != 0 && p > math.MaxInt64/x {
			return math.MaxInt64
		}
		p *= x
	}
	return p
}

// satAdd adds non-negative sizes, saturating at MaxInt64.
func satAdd(xs ...int64) int64 {
	var s int64
	for _, x := range xs {
		if x < 0 || s > math.MaxInt64-x {
			return math.MaxInt64
		}
		s += x
	}
	return s
}
