package mechanisms

import (
	"math"
	"math/bits"
)

// Exact Bernoulli samplers. Probabilities are exact rationals (a float64 is
// the exact binary fraction it represents). A uniform U ∈ [0, 1) is compared
// with p one binary digit at a time, drawing random bits lazily: the result
// is "U < p", which has probability exactly p, and needs two random bits on
// average. Loops stop at the first differing digit; the bound below is only
// reached with probability 2^-maxLazyBits.

const maxLazyBits = 512

// bernRat returns true with probability num/den. den must be > 0 and below
// 2^127 (so that doubling a remainder cannot overflow).
func (s *source) bernRat(num, den u128) (bool, error) {
	if den.hi == 0 && den.lo < 1<<63 {
		if num.hi != 0 {
			return true, nil // num > den
		}
		return s.bernRat64(num.lo, den.lo)
	}
	if num.cmp(den) >= 0 {
		return true, nil
	}
	if num.isZero() {
		return false, nil
	}
	rem := num
	for i := 0; i < maxLazyBits; i++ {
		// Next binary digit of num/den by long division.
		rem = rem.shl(1)
		var pbit uint64
		if rem.cmp(den) >= 0 {
			rem = rem.sub(den)
			pbit = 1
		}
		ubit, err := s.bit()
		if err != nil {
			return false, err
		}
		if ubit != pbit {
			return ubit < pbit, nil
		}
		if rem.isZero() {
			// All further digits of p are 0, so U ≥ p.
			return false, nil
		}
	}
	return false, samplerErr("exact Bernoulli comparison did not terminate")
}

// bernRat64 is bernRat for den < 2^63 (num ≤ den or num ≥ den both fine).
func (s *source) bernRat64(num, den uint64) (bool, error) {
	if num >= den {
		return true, nil
	}
	if num == 0 {
		return false, nil
	}
	rem := num
	for i := 0; i < maxLazyBits; i++ {
		rem <<= 1
		var pbit uint64
		if rem >= den {
			rem -= den
			pbit = 1
		}
		if s.npool == 0 {
			w, err := s.word()
			if err != nil {
				return false, err
			}
			s.pool, s.npool = w, 64
		}
		ubit := s.pool & 1
		s.pool >>= 1
		s.npool--
		if ubit != pbit {
			return ubit < pbit, nil
		}
		if rem == 0 {
			return false, nil
		}
	}
	return false, samplerErr("exact Bernoulli comparison did not terminate")
}

// bernRecip returns true with probability 1/k, k ≥ 1: a uniform draw from
// [0, k) by rejection on ⌈log2 k⌉ random bits is 0.
func (s *source) bernRecip(k uint64) (bool, error) {
	if k <= 1 {
		return true, nil
	}
	n := uint(bits.Len64(k - 1))
	for i := 0; i < maxRejections; i++ {
		v, err := s.bitsN(n)
		if err != nil {
			return false, err
		}
		if v < k {
			return v == 0, nil
		}
	}
	return false, samplerErr("uniform rejection loop did not terminate")
}

// bernFloat returns true with probability exactly p ∈ [0, 1].
func (s *source) bernFloat(p float64) (bool, error) {
	if !(p > 0) {
		return false, nil
	}
	if p >= 1 {
		return true, nil
	}
	frac, exp := math.Frexp(p) // p = frac·2^exp, frac ∈ [0.5, 1), exp ≤ 0
	mant := uint64(math.Ldexp(frac, 53))
	shift := uint(53 - exp) // p = mant / 2^shift, shift ≥ 53
	if shift <= 126 {
		return s.bernRat(u64(mant), pow2(shift))
	}
	// p < 2^-73: its first shift-53 binary digits are 0. U < p needs U to
	// match those zeros; the first 1 in U decides "false".
	for i := uint(0); i < shift-53; i++ {
		b, err := s.bit()
		if err != nil {
			return false, err
		}
		if b == 1 {
			return false, nil
		}
	}
	return s.bernRat(u64(mant), pow2(53))
}

// expArg is an exact non-negative rational γ = whole + frac, where frac is
// num/den (den < 2^127), or the float64 f when isFloat.
type expArg struct {
	whole    uint64 // saturates at math.MaxUint64 (then exp(-γ) < e^-(2^64))
	num, den u128
	f        float64
	isFloat  bool
}

func (a *expArg) fracZero() bool {
	if a.isFloat {
		return a.f == 0
	}
	return a.num.isZero()
}

// bernFrac returns true with probability frac(γ).
func (s *source) bernFrac(a *expArg) (bool, error) {
	if a.isFloat {
		return s.bernFloat(a.f)
	}
	return s.bernRat(a.num, a.den)
}

// expArgFloat converts a finite float γ ≥ 0 to an exact expArg.
func expArgFloat(g float64) (expArg, error) {
	if math.IsNaN(g) || math.IsInf(g, 0) || g < 0 {
		return expArg{}, invalid("gamma must be finite and >= 0, got %v", g)
	}
	if g == 0 {
		return expArg{den: u64(1)}, nil
	}
	frac, exp := math.Frexp(g)
	mant := uint64(math.Ldexp(frac, 53)) // g = mant·2^(exp-53)
	e := exp - 53
	if e >= 0 {
		if e > 10 {
			return expArg{whole: math.MaxUint64, den: u64(1)}, nil
		}
		return expArg{whole: mant << uint(e), den: u64(1)}, nil
	}
	sh := uint(-e)
	var whole uint64
	if sh < 64 {
		whole = mant >> sh
	}
	if sh <= 126 {
		return expArg{whole: whole, num: u64(mant).low(sh), den: pow2(sh)}, nil
	}
	// g < 2^-73: keep the fraction as a float (it is exact).
	return expArg{f: g, isFloat: true}, nil
}

// maxExpK bounds the series loop of bernExpFrac: reaching K needs an event of
// probability γ^(K-1)/(K-1)! ≤ 1/(K-1)!.
const maxExpK = 200

// maxExpWhole bounds the loop over the integer part of γ: continuing needs a
// success of probability 1/e each time, so reaching it has probability
// e^-maxExpWhole.
const maxExpWhole = 4096

// bernExpFrac returns true with probability exp(-frac(γ)), frac ∈ [0, 1).
//
// Canonne–Kamath–Steinke 2020, Algorithm 1: for K = 1, 2, ... draw
// A_K ~ Bernoulli(γ/K) until the first failure; the probability that the
// first failure happens at an odd K is the alternating series
// Σ (-γ)^j/j! = e^-γ. Bernoulli(γ/K) is drawn as Bernoulli(1/K) AND
// Bernoulli(γ), which is exact since both are at most 1.
func (s *source) bernExpFrac(a *expArg) (bool, error) {
	if a.fracZero() {
		return true, nil
	}
	k := uint64(1)
	for ; ; k++ {
		if k > maxExpK {
			return false, samplerErr("exp(-gamma) series did not terminate")
		}
		if k > 1 {
			ok, err := s.bernRecip(k)
			if err != nil {
				return false, err
			}
			if !ok {
				break
			}
		}
		ok, err := s.bernFrac(a)
		if err != nil {
			return false, err
		}
		if !ok {
			break
		}
	}
	return k%2 == 1, nil
}

// bernExp1 returns true with probability exactly 1/e.
func (s *source) bernExp1() (bool, error) {
	k := uint64(2) // Bernoulli(1/1) always succeeds
	for ; ; k++ {
		if k > maxExpK {
			return false, samplerErr("exp(-1) series did not terminate")
		}
		ok, err := s.bernRecip(k)
		if err != nil {
			return false, err
		}
		if !ok {
			break
		}
	}
	return k%2 == 1, nil
}

// bernExp returns true with probability exactly exp(-γ) = e^-whole · e^-frac.
// The loop over the integer part stops at the first failure (expected fewer
// than 1.6 rounds regardless of γ).
func (s *source) bernExp(a *expArg) (bool, error) {
	for i := uint64(0); i < a.whole; i++ {
		if i >= maxExpWhole {
			return false, samplerErr("exp(-gamma) integer-part loop did not terminate")
		}
		ok, err := s.bernExp1()
		if err != nil {
			return false, err
		}
		if !ok {
			return false, nil
		}
	}
	return s.bernExpFrac(a)
}

// bernLogistic returns true with probability exp(-γ)/(1+exp(-γ)).
//
// Propose outcome 0 or 1 with a fair coin; accept 0 always and 1 with
// probability exp(-γ). Each round accepts with probability ≥ 1/2 and the
// accepted outcome is 1 with probability e^-γ/(1+e^-γ).
func (s *source) bernLogistic(a *expArg) (bool, error) {
	for i := 0; i < maxRejections; i++ {
		c, err := s.bit()
		if err != nil {
			return false, err
		}
		if c == 0 {
			return false, nil
		}
		ok, err := s.bernExp(a)
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, samplerErr("logistic Bernoulli did not terminate")
}
