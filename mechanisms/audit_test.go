package mechanisms

import (
	"math"
	"testing"
)

// Black-box DP audit in the style of the reference (§9): run a mechanism
// many times on neighbouring inputs x and x+Δ, and for an event S compute
// ε_lower = ln((LCB(P[M(x+Δ) ∈ S]) - δ) / UCB(P[M(x) ∈ S])) with
// conservative (zTol-sigma normal) confidence bounds. It must not exceed ε.
// (A correct mechanism gives ε_lower ≤ ε; a broken one, e.g. with a
// mis-scaled noise, is caught when its true loss is well above ε.)
func auditEpsilonLower(t *testing.T, name string, n int, delta float64, run func(neighbour bool) (bool, error)) float64 {
	t.Helper()
	k0, k1 := 0, 0
	for i := 0; i < n; i++ {
		a, err := run(false)
		if err != nil {
			t.Fatal(err)
		}
		b, err := run(true)
		if err != nil {
			t.Fatal(err)
		}
		if a {
			k0++
		}
		if b {
			k1++
		}
	}
	p0, p1 := float64(k0)/float64(n), float64(k1)/float64(n)
	ucb0 := p0 + zTol*math.Sqrt(math.Max(p0*(1-p0), 1/float64(n))/float64(n))
	lcb1 := p1 - zTol*math.Sqrt(math.Max(p1*(1-p1), 1/float64(n))/float64(n))
	eps := math.Inf(-1)
	if lcb1-delta > 0 && ucb0 > 0 {
		eps = math.Log((lcb1 - delta) / ucb0)
	}
	t.Logf("%s: P(S|x) = %.4f, P(S|x') = %.4f, ε_lower = %.3f", name, p0, p1, eps)
	return eps
}

func TestAuditLaplaceAndGaussian(t *testing.T) {
	const n = 60000
	lap, err := NewLaplace(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := Seeded(51)
	// S = {output ≥ 3}: the likelihood ratio is maximal (e^ε) there.
	e := auditEpsilonLower(t, "Laplace int", n, 0, func(nb bool) (bool, error) {
		x := int64(0)
		if nb {
			x = 1
		}
		y, err := lap.AddNoiseInt(r, x)
		return y >= 3, err
	})
	if e > 1 {
		t.Errorf("Laplace int: ε_lower %v > ε = 1", e)
	}
	e = auditEpsilonLower(t, "Laplace float", n, 0, func(nb bool) (bool, error) {
		x := 0.0
		if nb {
			x = 1
		}
		y, err := lap.AddNoiseFloat(r, x)
		return y >= 2.5, err
	})
	if e > 1 {
		t.Errorf("Laplace float: ε_lower %v > ε = 1", e)
	}
	gau, err := NewGaussian(1, 1e-3, 1)
	if err != nil {
		t.Fatal(err)
	}
	e = auditEpsilonLower(t, "Gaussian float", n, 1e-3, func(nb bool) (bool, error) {
		x := 0.0
		if nb {
			x = 1
		}
		y, err := gau.AddNoiseFloat(r, x)
		return y >= 2*gau.Sigma(), err
	})
	if e > 1 {
		t.Errorf("Gaussian float: ε_lower %v > ε = 1", e)
	}
}
