package isa

// Implemented is one kernel family's implementation for one tier; each
// family keeps a list of them, generic first.
type Implemented interface{ TierOf() Tier }

// TiersOf lists the tiers of impls, in order.
func TiersOf[T Implemented](impls []T) []Tier {
	ts := make([]Tier, len(impls))
	for i, im := range impls {
		ts[i] = im.TierOf()
	}
	return ts
}

// Find returns the implementation of tier t in impls, if there is one.
func Find[T Implemented](impls []T, t Tier) (T, bool) {
	for _, im := range impls {
		if im.TierOf() == t {
			return im, true
		}
	}
	var zero T
	return zero, false
}
