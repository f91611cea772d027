package mechanisms

import (
	"math"
)

const (
	// MaxCandidates bounds the number of scores Exponential accepts: 16M,
	// far beyond any result a query's groups can fill in memory, so that
	// DP top-k never fails on how many groups the data has (found in
	// review: at 2^20 the error told whether the data had more groups).
	MaxCandidates = 1 << 24
	// exponentialRoundsPerCandidate: Exponential runs this many proposal
	// rounds per candidate. Each round accepts with probability ≥ 1/n, so
	// all 45n rounds fail with probability ≤ (1-1/n)^(45n) < e^-45 < 2^-64.
	exponentialRoundsPerCandidate = 45
	// scoreGridBits: scores are rounded to multiples of h = 2^(⌊log2 Δu⌋-20).
	scoreGridBits = 20
)

// precomputedCandidates: up to this many candidates the acceptance
// exponents are computed once, beyond it on each proposal (a variable for
// tests of that path).
var precomputedCandidates = 1 << 20

// Exponential is the exponential mechanism (McSherry & Talwar 2007): it
// returns index i with probability proportional to
// exp(ε·score[i]/(2·Δu)), Δu = scoreSensitivity, the most any one privacy
// unit can change any score.
//
// DP guarantee: ε-differentially private (up to a failure event of
// probability < 2^-64 that returns an error and releases nothing).
//
// Why this sampler is safe: there is no floating-point sampling (no
// Gumbel noise, no inverse CDF on float weights, whose rounding leaks like
// Mironov's attack on Laplace). Scores are rounded to a power-of-two grid h
// (h ≈ Δu·2^-20) and handled as integers n_i; the rounding moves each score
// by at most h/2, so the sensitivity of n is at most Δu/h + 1 and the
// exponent uses a = ε·h/(2(Δu+h)), rounded down. The probability of i is then
// exactly proportional to exp(-a·(n_max - n_i)), where a·(n_max - n_i) is an
// exact binary fraction: each round proposes a uniform index and accepts it
// with an exact Bernoulli(exp(-a·(n_max - n_i))) (Canonne–Kamath–Steinke
// 2020), and the first accepted proposal is returned. The effective
// distribution is the exponential mechanism with weights exp(ε·ŝ_i/(2(Δu+h)))
// for the rounded scores ŝ_i, which is ε-DP.
//
// Timing: the mechanism always runs 45·len(scores) rounds (it keeps drawing
// after the first acceptance), so the amount of work does not reveal the
// normalising constant of the weights. Cost is O(n) rounds of a few random
// bits each (about 45·n·30 ns).
//
// Scores must be finite and |score| < 2^41·Δu; 1 ≤ len(scores) ≤
// MaxCandidates.
func Exponential(r *Rand, epsilon, scoreSensitivity float64, scores []float64) (int, error) {
	if err := checkEpsilon("epsilon", epsilon); err != nil {
		return 0, err
	}
	if err := checkPositive("scoreSensitivity", scoreSensitivity); err != nil {
		return 0, err
	}
	n := len(scores)
	if n == 0 {
		return 0, invalid("scores must not be empty")
	}
	if n > MaxCandidates {
		return 0, invalid("len(scores) = %d exceeds the maximum %d", n, MaxCandidates)
	}
	_, sexp := math.Frexp(scoreSensitivity) // Δu ∈ [2^(sexp-1), 2^sexp)
	hexp := sexp - 1 - scoreGridBits
	if hexp < minGranExp {
		return 0, invalid("scoreSensitivity = %v is too small", scoreSensitivity)
	}
	h := math.Ldexp(1, hexp)
	limit := math.Ldexp(1, 62)
	ns := make([]int64, n)
	var nmax int64 = math.MinInt64
	for i, sc := range scores {
		if math.IsNaN(sc) || math.IsInf(sc, 0) {
			return 0, invalid("scores[%d] must be finite, got %v", i, sc)
		}
		q := math.Round(math.Ldexp(sc, -hexp))
		if math.Abs(q) >= limit {
			return 0, invalid("scores[%d] = %v is too large relative to scoreSensitivity %v (max 2^41·scoreSensitivity)", i, sc, scoreSensitivity)
		}
		ns[i] = int64(q)
		if ns[i] > nmax {
			nmax = ns[i]
		}
	}
	if n == 1 {
		return 0, nil
	}
	// a = ε·h/(2(Δu+h)), rounded down: ε·h/2 is exact, the sum and the
	// division round once each.
	a := nextDown(math.Ldexp(epsilon, hexp-1)/(scoreSensitivity+h), 3)
	frac, aexp := math.Frexp(a)
	amant := uint64(math.Ldexp(frac, 53))
	ash := 53 - aexp // a = amant / 2^ash
	if ash <= 0 || ash > 126 {
		return 0, invalid("epsilon/scoreSensitivity combination out of range")
	}
	den := pow2(uint(ash))
	// argOf is candidate i's acceptance exponent; beyond 2^20 candidates
	// it is computed when proposed (8 bytes per candidate held, not an
	// expArg each).
	argOf := func(i uint64) expArg {
		d := uint64(nmax - ns[i]) // < 2^63
		num := mul64(amant, d)
		whole := num.shr(uint(ash))
		w := whole.lo
		if whole.hi != 0 {
			w = math.MaxUint64
		}
		return expArg{whole: w, num: num.low(uint(ash)), den: den}
	}
	var args []expArg
	if n <= precomputedCandidates {
		args = make([]expArg, n)
		for i := range args {
			args[i] = argOf(uint64(i))
		}
	}

	rounds := exponentialRoundsPerCandidate * n
	s, err := r.lock()
	if err != nil {
		return 0, err
	}
	defer r.unlock()
	chosen := -1
	for k := 0; k < rounds; k++ {
		i, err := s.uint64n(uint64(n))
		if err != nil {
			return 0, err
		}
		var ok bool
		if args != nil {
			ok, err = s.bernExp(&args[i])
		} else {
			arg := argOf(i)
			ok, err = s.bernExp(&arg)
		}
		if err != nil {
			return 0, err
		}
		if ok && chosen < 0 {
			chosen = int(i)
		}
	}
	if chosen < 0 {
		return 0, samplerErr("exponential mechanism: no proposal accepted in %d rounds", rounds)
	}
	return chosen, nil
}
