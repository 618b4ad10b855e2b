package sweeps

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ckbench/ckbench/kernels/attention"
)

// ParamError is a value of a sweep parameter that cannot be used: Param
// names the parameter as the library knows it (tk, ctx, heads, hd, kernel,
// isa, exp, fmt, act, shape, rb, threads), never a command-line flag; a
// front end maps it to its own spelling (the CLI: --tk, …).
type ParamError struct {
	Param string
	Msg   string // what is wrong with which value, and what would do
}

func (e *ParamError) Error() string { return e.Param + ": " + e.Msg }

func paramErrorf(param, format string, args ...any) error {
	return &ParamError{Param: param, Msg: fmt.Sprintf(format, args...)}
}

// ParseInts reads a list of positive integers, each item either a number
// or a range: "a..b" (doubling), "a..bxF" (multiply by F) or "a..b+S"
// (add S). Examples: "64,128", "512..65536x2", "16..256+16".
func ParseInts(param, s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, paramErrorf(param, "empty list")
	}
	var out []int
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		lo, hi, isRange := strings.Cut(item, "..")
		if !isRange {
			n, err := parsePositive(param, item)
			if err != nil {
				return nil, err
			}
			out = append(out, n)
			continue
		}
		step, mul := 0, 2
		if h, st, ok := strings.Cut(hi, "+"); ok {
			hi = h
			n, err := strconv.Atoi(st)
			if err != nil || n < 1 {
				return nil, paramErrorf(param, "bad range %q: the step after + must be a positive integer", item)
			}
			step, mul = n, 0
		} else if h, f, ok := strings.Cut(hi, "x"); ok {
			hi = h
			m, err := strconv.Atoi(f)
			if err != nil || m < 2 {
				return nil, paramErrorf(param, "bad range %q: the factor after x must be an integer ≥ 2", item)
			}
			mul = m
		}

		a, err := parsePositive(param, lo)
		if err != nil {
			return nil, paramErrorf(param, "bad range %q: %v", item, err.(*ParamError).Msg)
		}
		b, err := parsePositive(param, hi)
		if err != nil {
			return nil, paramErrorf(param, "bad range %q: %v", item, err.(*ParamError).Msg)
		}
		if b < a {
			return nil, paramErrorf(param, "bad range %q: end is below start", item)
		}
		for v := a; v <= b; {
			out = append(out, v)
			if len(out) > 10000 {
				return nil, paramErrorf(param, "range %q has more than 10000 values", item)
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

func parsePositive(param, s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, paramErrorf(param, "%q is not an integer", s)
	}
	if n <= 0 {
		return 0, paramErrorf(param, "%d must be ≥ 1", n)
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

// MarshalText writes H:Hkv, as --heads takes it.
func (h HeadPair) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// ParseHeads reads "H:Hkv" pairs: "16:8,32:8,8:8". A bare "H" means H:H.
func ParseHeads(s string) ([]HeadPair, error) {
	if strings.TrimSpace(s) == "" {
		return nil, paramErrorf("heads", "empty list")
	}
	var out []HeadPair
	for _, item := range strings.Split(s, ",") {
		hs, kvs, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			kvs = hs
		}
		h, err := parsePositive("heads", hs)
		if err != nil {
			return nil, headsError(item, err)
		}
		kv, err := parsePositive("heads", kvs)
		if err != nil {
			return nil, headsError(item, err)
		}
		if h%kv != 0 {
			return nil, paramErrorf("heads", "%s: H=%d is not a multiple of Hkv=%d (each KV head serves H/Hkv query heads)", item, h, kv)
		}
		out = append(out, HeadPair{h, kv})
	}
	return dedup(out), nil
}

// headsError names the H:Hkv item a count of it was wrong in, and the
// form wanted.
func headsError(item string, err error) error {
	pe, ok := err.(*ParamError)
	if !ok {
		return err
	}
	return paramErrorf(pe.Param, "%q: %s (give H:Hkv, query heads and KV heads, e.g. 32:8; or H alone for H:H)", strings.TrimSpace(item), pe.Msg)
}

// ParseList splits a comma list and maps each item through parse; "all"
// alone returns all.
func ParseList[T comparable](param, s string, all []T, parse func(string) (T, error)) ([]T, error) {
	s = strings.TrimSpace(s)
	if s == "all" {
		return all, nil
	}
	if s == "" {
		return nil, paramErrorf(param, "empty list")
	}
	var out []T
	for _, item := range strings.Split(s, ",") {
		v, err := parse(strings.TrimSpace(item))
		if err != nil {
			return nil, paramErrorf(param, "%v", err)
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

// ParseTileKs reads a list of tile sizes: "auto" (stored as 0: each
// tier's own for the head dim, KV type and group, attention.Impl.Tile,
// recorded as tk_eff) or integers. Their range is checked once,
// by AttentionGrid.Validate (attention.ValidateTileK).
func ParseTileKs(s string) ([]int, error) {
	return ParseList("tk", s, nil, func(item string) (int, error) {
		if item == "auto" {
			return 0, nil
		}
		n, err := strconv.Atoi(item)
		if err != nil {
			return 0, fmt.Errorf("%q is neither auto nor an integer", item)
		}
		if n == 0 { // stored as auto: say so rather than take it for auto
			return 0, fmt.Errorf("%q is not a tile size: auto, or %d…%d", item, attention.MinTileK, attention.MaxTileK)
		}
		return n, nil
	})
}
