package mechanisms

import (
	"math"
)

// Granularity ("snapping") for floating-point outputs, as in Google's
// differential-privacy library (Mironov 2012 showed that adding textbook
// floating-point noise leaks through the pattern of representable doubles).
//
// The true value x is rounded to the nearest multiple of a power of two g,
// an integer k·g of noise is added, and the exact sum is rounded once to the
// nearest float64. Every output is therefore a multiple of g and a fixed
// function of the exact value round(x/g) + k, so the released float reveals
// nothing beyond the integer mechanism's output (post-processing). Rounding
// x moves it by at most g/2, which the mechanisms cover by adding g to the
// sensitivity.

// Granularity exponents are confined to this range so that g and every
// non-zero multiple of it are normal float64 values.
const (
	minGranExp = -1000
	maxGranExp = 900
)

// ceilPow2Exp returns n with 2^n = 2^⌈log2 x⌉, for finite x > 0.
func ceilPow2Exp(x float64) int {
	frac, exp := math.Frexp(x) // x = frac·2^exp, frac ∈ [0.5, 1)
	if frac == 0.5 {
		return exp - 1
	}
	return exp
}

// snapAdd returns round(x/g)·g + k·g, g = 2^gexp, computed exactly and then
// rounded once to the nearest float64 (ties to even). x must be finite.
// An overflow to ±Inf is an error.
func snapAdd(x float64, gexp int, k int64) (float64, error) {
	_, xexp := math.Frexp(x)
	if x != 0 && xexp-gexp > 127 {
		// |x| ≥ 2^(gexp+126): x is already a multiple of g (its ulp is
		// ≥ 2^(gexp+74)) and |k·g| < 2^(gexp+63) is far below half an ulp,
		// so the correctly rounded exact sum is x itself.
		return x, nil
	}
	xs := math.Round(math.Ldexp(x, -gexp)) // exact integer, |xs| < 2^127
	// Convert xs to a two's complement 128-bit integer.
	var n u128
	if xs != 0 {
		frac, exp := math.Frexp(math.Abs(xs))
		mant := uint64(math.Ldexp(frac, 53)) // |xs| = mant·2^(exp-53)
		if exp >= 53 {
			n = u64(mant).shl(uint(exp - 53))
		} else {
			n = u64(mant >> uint(53-exp)) // exact: xs is an integer
		}
		if xs < 0 {
			n = n.neg()
		}
	}
	kk := u64(uint64(k))
	if k < 0 {
		kk = u128{hi: math.MaxUint64, lo: uint64(k)}
	}
	sum := n.add(kk) // |sum| < 2^127 + 2^63: no signed overflow
	var f float64
	if sum.negative() {
		f = -sum.neg().float64()
	} else {
		f = sum.float64()
	}
	out := math.Ldexp(f, gexp)
	if math.IsInf(out, 0) {
		return 0, samplerErr("noisy value overflows float64")
	}
	return out, nil
}
