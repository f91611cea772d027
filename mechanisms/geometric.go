package mechanisms

import (
	"math"
)

// Exact geometric and two-sided geometric (discrete Laplace) sampling.
//
// Let X ~ Geometric(q), P(X = k) = (1-q)q^k, q = e^-λ. Write X = R + M·Q with
// M = 2^m chosen so that μ = λM ∈ (1/2, 1] (M = 1 when λ ≥ 1). Then R and Q
// are independent:
//
//   - R = X mod M has P(R = r) ∝ e^-λr on [0, M). It is drawn by rejection:
//     U uniform on [0, M), accepted with probability e^-λU ≥ e^-1.
//   - Q = ⌊X/M⌋ ~ Geometric(e^-μ). Its binary digits are themselves
//     independent: digit j is 1 with probability e^-μ2^j/(1+e^-μ2^j). The
//     first J digits (μ2^J ≥ 64) are drawn one by one, a fixed amount of work
//     independent of the value. The rest, ⌊Q/2^J⌋ ~ Geometric(e^-μ2^J), is
//     drawn by a loop that runs a second time with probability < e^-64.
//
// All probabilities are exact (λ is read as the exact binary fraction it
// represents) and all loops are bounded. Running time hardly depends on the
// sampled value: the rejection loop count for R is independent of the
// accepted R, and Q costs the same J digit draws whatever its value.

// minLambda is the smallest supported λ (the scale 1/λ is at most 2^56 and
// every intermediate value fits in an int64).
const minLambda = 0x1p-56

// geomPlan holds the precomputed constants for one λ.
type geomPlan struct {
	lambda   float64
	m        uint   // M = 2^m
	lamMant  uint64 // λ = lamMant / 2^lamShift (used when m > 0)
	lamShift uint
	digits   []expArg // γ_j = μ·2^j for j < J
	top      expArg   // μ·2^J
}

func newGeomPlan(lambda float64) (*geomPlan, error) {
	if math.IsNaN(lambda) || math.IsInf(lambda, 0) || lambda < minLambda {
		return nil, invalid("geometric parameter lambda must be finite and >= 2^-56, got %v", lambda)
	}
	p := &geomPlan{lambda: lambda}
	mu := lambda
	if lambda < 1 {
		frac, exp := math.Frexp(lambda) // λ = frac·2^exp, exp ≤ 0
		m := -exp
		if frac == 0.5 {
			m++
		}
		p.m = uint(m)
		mu = math.Ldexp(lambda, m) // exact, in (1/2, 1]
		p.lamMant = uint64(math.Ldexp(frac, 53))
		p.lamShift = uint(53 - exp)
	}
	digits := 0 // J, at most 7: μ > 1/2
	for math.Ldexp(mu, digits) < 64 {
		digits++
	}
	p.digits = make([]expArg, digits) // one allocation: this runs for every release
	for j := range p.digits {
		a, err := expArgFloat(math.Ldexp(mu, j))
		if err != nil {
			return nil, err
		}
		p.digits[j] = a
	}
	top, err := expArgFloat(math.Ldexp(mu, digits))
	if err != nil {
		return nil, err
	}
	p.top = top
	return p, nil
}

// geometric returns X ~ Geometric(e^-λ).
func (s *source) geometric(p *geomPlan) (uint64, error) {
	var r uint64
	if p.m > 0 {
		den := pow2(p.lamShift)
		accepted := false
		for i := 0; i < maxRejections; i++ {
			u, err := s.bitsN(p.m)
			if err != nil {
				return 0, err
			}
			// γ = λ·u < λM ≤ 1, exactly lamMant·u / 2^lamShift.
			a := expArg{num: mul64(p.lamMant, u), den: den}
			ok, err := s.bernExpFrac(&a)
			if err != nil {
				return 0, err
			}
			if ok {
				r, accepted = u, true
				break
			}
		}
		if !accepted {
			return 0, samplerErr("geometric remainder rejection loop did not terminate")
		}
	}
	var q uint64
	for j := range p.digits {
		ok, err := s.bernLogistic(&p.digits[j])
		if err != nil {
			return 0, err
		}
		if ok {
			q |= 1 << uint(j)
		}
	}
	J := len(p.digits)
	// The result r + q·2^m must stay below 2^63: q < 2^(63-m), so the high
	// part hi = ⌊q/2^J⌋ must stay below 2^(63-m-J).
	limit := 63 - int(p.m) - J
	var hi uint64
	for {
		ok, err := s.bernExp(&p.top)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		hi++
		if limit <= 0 || hi >= 1<<uint(limit) {
			// Probability < e^-64 for valid parameters.
			return 0, samplerErr("geometric sample overflows int64")
		}
	}
	q |= hi << uint(J)
	return r + q<<p.m, nil
}

// twoSided returns K with P(K = k) = (1-q)/(1+q)·q^|k|, q = e^-λ: a fair sign
// and a geometric magnitude, rejecting "-0" so that 0 is not counted twice.
func (s *source) twoSided(p *geomPlan) (int64, error) {
	for i := 0; i < maxRejections; i++ {
		sign, err := s.bit()
		if err != nil {
			return 0, err
		}
		g, err := s.geometric(p)
		if err != nil {
			return 0, err
		}
		if sign == 1 {
			if g == 0 {
				continue
			}
			return -int64(g), nil
		}
		return int64(g), nil
	}
	return 0, samplerErr("two-sided geometric rejection loop did not terminate")
}
