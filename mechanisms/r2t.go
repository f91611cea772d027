package mechanisms

import (
	"math"
)

// R2T is the race-to-the-top mechanism of Dong, Fang, Yi, Tao and
// Machanavajjhala (SIGMOD 2022) for a sum of non-negative per-person
// contributions whose largest size nothing in the policy bounds (a count
// over a join, say): instead of truncating every person at one threshold
// chosen in advance, it tries the thresholds τ_j = step·2^j, j = 0..L−1,
// and releases the largest of
//
//	Q̃_j = Q(τ_j) + Lap(L·τ_j/ε) − L·ln(L/β)·τ_j/ε
//
// (and 0), where Q(τ) is the sum with each person's contribution
// truncated at τ (truncated[j] = Q(τ_j), computed by the backend).
//
// Privacy: one person moves Q(τ_j) by at most τ_j, so each Q̃_j is
// (ε/L)-DP (Laplace, secure sampling); the L of them compose to ε, and the
// maximum is post-processing. The shift does not touch privacy.
//
// Utility (the paper's Theorem 5.1): with probability at least 1 − β,
// Q(∞) ≥ released ≥ Q(∞) − 4·L·ln(L/β)·τ*/ε, where τ* is the largest
// contribution of one person (when τ* ≤ step·2^(L−1)): no overshoot, and an
// error proportional to what one person could move the answer by — within
// a log factor of the best truncation chosen with hindsight. An integer
// query (counts) gets discrete Laplace noise and an integer answer.
//
// truncated must be non-decreasing in j (Q(τ) grows with τ) and finite.
func R2T(r *Rand, epsilon, beta, step float64, truncated []float64, integer bool) (float64, error) {
	L := len(truncated)
	if L == 0 {
		return 0, invalid("R2T needs at least one threshold")
	}
	if err := checkPositive("step", step); err != nil {
		return 0, err
	}
	if !(beta > 0 && beta < 1) {
		return 0, invalid("beta must be in (0, 1), got %v", beta)
	}
	best := 0.0
	for j, q := range truncated {
		tau := R2TThreshold(step, j)
		m, err := NewLaplace(epsilon/float64(L), tau)
		if err != nil {
			return 0, err
		}
		var noisy float64
		if integer && m.IntegerNoise() { // beyond 2^48 float noise serves (found in review)
			n, err := m.AddNoiseInt(r, int64(math.Round(q)))
			if err != nil {
				return 0, err
			}
			noisy = float64(n)
		} else if noisy, err = m.AddNoiseFloat(r, q); err != nil {
			return 0, err
		}
		noisy -= R2TShift(epsilon, beta, L, tau)
		best = math.Max(best, noisy)
	}
	if integer {
		best = math.Floor(best)
	}
	return best, nil
}

// CheckR2T reports, before anything runs, whether R2T can calibrate its
// noise at every threshold: ε/L and the scales L·τ_j/ε in the Laplace
// mechanism's range.
func CheckR2T(epsilon, step float64, L int) error {
	for j := 0; j < L; j++ {
		if _, err := NewLaplace(epsilon/float64(L), R2TThreshold(step, j)); err != nil {
			return err
		}
	}
	return nil
}

// R2TThreshold is R2T's j-th truncation threshold: step·2^j.
func R2TThreshold(step float64, j int) float64 { return step * math.Ldexp(1, j) }

// R2TShift is how far R2T lowers the noisy sum at threshold tau, so that
// no noisy value overshoots the truth except with probability β:
// L·ln(L/β)·τ/ε.
func R2TShift(epsilon, beta float64, L int, tau float64) float64 {
	return float64(L) * math.Log(float64(L)/beta) * tau / epsilon
}

// R2TErrorBound is R2T's error bound for a largest contribution tauStar:
// 4·L·ln(L/β)·τ*/ε (the answer is at most that below the truth, with
// probability 1 − β).
func R2TErrorBound(epsilon, beta float64, L int, tauStar float64) float64 {
	return 4 * float64(L) * math.Log(float64(L)/beta) * tauStar / epsilon
}
