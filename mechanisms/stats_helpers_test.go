package mechanisms

import (
	"math"
	"testing"
)

// Statistical helpers for the tests. All tests use Seeded sources, so they
// are deterministic; tolerances are nevertheless set so that a correct
// sampler fails with probability < 1e-4 per check for a random seed.

// zTol is the z-score tolerance for mean / proportion checks (two-sided
// p ≈ 1e-5).
const zTol = 4.4

// chiSquareCritical returns the upper-α critical value of the χ²
// distribution with df degrees of freedom (Wilson–Hilferty approximation,
// accurate to a few percent for df ≥ 3), for α ≈ 1e-4 (z = 3.719).
func chiSquareCritical(df int) float64 {
	const z = 3.719
	k := float64(df)
	c := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * c * c * c
}

// chiSquareTest checks observed counts against expected probabilities
// (which must sum to 1 up to rounding). Bins with expected count < 5 must be
// merged by the caller.
func chiSquareTest(t *testing.T, name string, observed []int64, probs []float64) {
	t.Helper()
	var n int64
	for _, o := range observed {
		n += o
	}
	stat := 0.0
	for i, o := range observed {
		e := probs[i] * float64(n)
		if e < 5 {
			t.Fatalf("%s: bin %d has expected count %.2f < 5", name, i, e)
		}
		d := float64(o) - e
		stat += d * d / e
	}
	df := len(observed) - 1
	crit := chiSquareCritical(df)
	if stat > crit {
		t.Errorf("%s: χ² = %.2f > critical %.2f (df %d, α≈1e-4)", name, stat, crit, df)
	} else {
		t.Logf("%s: χ² = %.2f (critical %.2f, df %d)", name, stat, crit, df)
	}
}

// checkMean checks |mean - want| ≤ zTol·√(variance/n).
func checkMean(t *testing.T, name string, mean, want, variance float64, n int) {
	t.Helper()
	tol := zTol * math.Sqrt(variance/float64(n))
	if math.Abs(mean-want) > tol {
		t.Errorf("%s: mean %v, want %v ± %v", name, mean, want, tol)
	}
}

// checkVariance checks a sample variance against want, with tolerance
// zTol·√((m4 - want²)/n), m4 the fourth central moment of the distribution.
func checkVariance(t *testing.T, name string, got, want, m4 float64, n int) {
	t.Helper()
	tol := zTol * math.Sqrt((m4-want*want)/float64(n))
	if math.Abs(got-want) > tol {
		t.Errorf("%s: variance %v, want %v ± %v", name, got, want, tol)
	} else {
		t.Logf("%s: variance %v (want %v ± %v)", name, got, want, tol)
	}
}

// checkProportion checks that k successes in n trials are consistent with
// probability p (normal approximation, zTol standard errors).
func checkProportion(t *testing.T, name string, k, n int, p float64) {
	t.Helper()
	got := float64(k) / float64(n)
	tol := zTol*math.Sqrt(p*(1-p)/float64(n)) + 1/float64(n)
	if math.Abs(got-p) > tol {
		t.Errorf("%s: rate %v, want %v ± %v", name, got, p, tol)
	}
}

// moments returns the sample mean and variance.
func moments(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		d := x - mean
		variance += d * d
	}
	variance /= float64(len(xs) - 1)
	return
}

// twoSidedGeomPMF returns P(K = k) for the discrete Laplace with q = e^-λ.
func twoSidedGeomPMF(lambda float64, k int64) float64 {
	q := math.Exp(-lambda)
	return (1 - q) / (1 + q) * math.Pow(q, math.Abs(float64(k)))
}

// binIntegers bins integer samples into [lo, hi] with the two tails merged
// into the end bins, and returns the observed counts and the probabilities
// from pmf (tails summed out to ±limit).
func binIntegers(samples []int64, lo, hi int64, pmf func(int64) float64, limit int64) ([]int64, []float64) {
	nb := hi - lo + 1
	obs := make([]int64, nb)
	for _, s := range samples {
		switch {
		case s <= lo:
			obs[0]++
		case s >= hi:
			obs[nb-1]++
		default:
			obs[s-lo]++
		}
	}
	probs := make([]float64, nb)
	total := 0.0
	for k := -limit; k <= limit; k++ {
		p := pmf(k)
		total += p
		switch {
		case k <= lo:
			probs[0] += p
		case k >= hi:
			probs[nb-1] += p
		default:
			probs[k-lo] += p
		}
	}
	for i := range probs {
		probs[i] /= total
	}
	return obs, probs
}
